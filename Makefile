# privot: the two set-up commands are `make demo` and `make test` (see README.md).
# Every install step lives here; nothing is installed by hand.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
# torch is pinned: 2.13.0 resolves to the CPU wheel on the build machines, an
# unpinned torch would pull gigabytes of CUDA packages.
TORCH  := torch==2.13.0
DEMO_OUT ?= privot-demo

.PHONY: demo test lint java bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip setuptools wheel

# Reinstall only when the package metadata changes.
$(VENV)/.installed-demo: pyproject.toml | $(PY)
	$(PIP) install --quiet $(TORCH)
	$(PIP) install --quiet -e '.[demo]'
	touch $@

$(VENV)/.installed-all: pyproject.toml | $(PY)
	$(PIP) install --quiet $(TORCH)
	$(PIP) install --quiet -e '.[all,dev]'
	touch $@ $(VENV)/.installed-demo

# Spark needs a Java runtime; install it only when none answers.
java:
	@java -version >/dev/null 2>&1 || { \
	  echo "installing Java 17 for Spark"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless; }

demo: $(VENV)/.installed-demo
	$(VENV)/bin/privot demo --output $(DEMO_OUT)

test: $(VENV)/.installed-all java
	$(PY) -m ruff check src tests benchmarks
	$(PY) -m pytest -q

lint: $(VENV)/.installed-all
	$(PY) -m ruff check src tests benchmarks

# Every benchmark script writes JSON + PNG under benchmarks/results/ (see benchmarks/README.md).
bench: $(VENV)/.installed-all java
	@for f in benchmarks/bench_*.py; do echo "== $$f"; $(PY) $$f || exit 1; done

clean:
	rm -rf $(VENV) $(DEMO_OUT) .pytest_cache .ruff_cache
