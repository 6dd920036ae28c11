# privot: the two set-up commands are `make demo` and `make test` (see README.md).
# Every install step lives here; nothing is installed by hand.
#
# Installs are reproducible: every version, direct and transitive (pip, setuptools and
# wheel included), comes from the committed lock requirements/lock.txt, passed to pip as
# constraints, and privot itself is built without build isolation by the pinned
# setuptools. A new release of a dependency changes nothing here until the lock is
# refreshed: `make test-latest` runs the suite on the newest releases (in .venv-latest),
# and `make lock` writes their versions into the lock (see README.md, "Dependencies").

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
LOCK   := requirements/lock.txt
LATEST := .venv-latest
# torch is pinned: 2.13.0 resolves to the CPU wheel on the build machines, an
# unpinned torch would pull gigabytes of CUDA packages.
TORCH  := torch==2.13.0
DEMO_OUT ?= privot-demo

.PHONY: demo test lint java bench bench-compare clean test-latest lock dist docs

$(PY):
	$(PYTHON) -m venv $(VENV)

# Reinstall only when the package metadata or the lock changes.
$(VENV)/.installed-demo: pyproject.toml $(LOCK) | $(PY)
	$(PIP) install --quiet -c $(LOCK) pip setuptools wheel
	$(PIP) install --quiet -c $(LOCK) $(TORCH)
	$(PIP) install --quiet -c $(LOCK) --no-build-isolation -e '.[demo]'
	touch $@

$(VENV)/.installed-all: pyproject.toml $(LOCK) | $(PY)
	$(PIP) install --quiet -c $(LOCK) pip setuptools wheel
	$(PIP) install --quiet -c $(LOCK) $(TORCH)
	$(PIP) install --quiet -c $(LOCK) --no-build-isolation -e '.[all,dev,docs]'
	touch $@ $(VENV)/.installed-demo

# The newest releases of everything pyproject.toml admits (torch stays pinned), in a
# fresh environment of its own: what a fresh clone would run once the lock is refreshed.
$(LATEST)/.installed: pyproject.toml
	rm -rf $(LATEST)
	$(PYTHON) -m venv $(LATEST)
	$(LATEST)/bin/python -m pip install --quiet --upgrade pip setuptools wheel
	$(LATEST)/bin/python -m pip install --quiet $(TORCH)
	$(LATEST)/bin/python -m pip install --quiet --upgrade --upgrade-strategy eager -e '.[all,dev,docs]'
	touch $@

# Spark needs a Java runtime; install it only when none answers.
java:
	@java -version >/dev/null 2>&1 || { \
	  echo "installing Java 17 for Spark"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless; }

demo: $(VENV)/.installed-demo
	$(VENV)/bin/privot demo --output $(DEMO_OUT) --force

test: $(VENV)/.installed-all java
	$(PY) -m ruff check src tests benchmarks tools
	$(PY) -m pytest -q

# The documentation site into site/ (mkdocs.yml), warnings as errors: the CLI reference is
# generated from the parsers and the tutorials' code runs to make their figures.
docs: $(VENV)/.installed-all
	NO_MKDOCS_2_WARNING=1 MPLBACKEND=Agg $(PY) -m mkdocs build --strict

# The suite on the newest releases; the README says when to run it.
test-latest: java
	rm -f $(LATEST)/.installed
	$(MAKE) $(LATEST)/.installed
	$(LATEST)/bin/python -m pip freeze --all --exclude-editable > $(LATEST)/versions.txt
	$(LATEST)/bin/python -m ruff check src tests benchmarks tools
	$(LATEST)/bin/python -m pytest -q

# Refresh the lock from the newest releases (run `make test-latest` first and commit the
# lock only when it passes). Local version labels (torch's +cpu) are dropped, so the lock
# names releases any index serves.
lock:
	rm -f $(LATEST)/.installed
	$(MAKE) $(LATEST)/.installed
	{ echo "# The versions make demo / make test install (pip constraints). Written by"; \
	  echo "# 'make lock' on $$(date -u +%Y-%m-%d) with $$($(LATEST)/bin/python --version)."; \
	  $(LATEST)/bin/python -m pip freeze --all --exclude-editable \
	    | sed -E 's/\+[A-Za-z0-9.]+$$//' | LC_ALL=C sort -f; } > $(LOCK).new
	mv $(LOCK).new $(LOCK)

lint: $(VENV)/.installed-all
	$(PY) -m ruff check src tests benchmarks tools

# Every benchmark script writes JSON + PNG under benchmarks/results/ (see benchmarks/README.md).
bench: $(VENV)/.installed-all java
	@for f in benchmarks/bench_*.py; do echo "== $$f"; $(PY) $$f || exit 1; done

# One head-to-head table (issue 27): every comparison of benchmarks/compare/, the README's
# performance table regenerated from benchmarks/results/compare.json.
bench-compare: $(VENV)/.installed-all java
	$(PY) benchmarks/bench_compare.py --readme

# A wheel and an sdist into dist/, built by the locked setuptools (no build isolation, offline).
dist: $(VENV)/.installed-all
	$(PY) -m build --no-isolation --outdir dist .

clean:
	rm -rf $(VENV) $(LATEST) $(DEMO_OUT) .pytest_cache .ruff_cache site
