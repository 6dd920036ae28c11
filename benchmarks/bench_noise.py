"""Speed of privot's exact, secure samplers against numpy's floating-point ones.

Times (best of ``REPEATS`` runs, same process) 10**6 draws of:

* the baseline ``numpy.random.Generator.laplace`` (and ``.normal`` for the Gaussians);
* ``noise.secure_laplace`` at scale 1 with the default grid (``k = 20``);
* ``mechanisms.laplace_mechanism`` on a 10**6 vector, sensitivity 1, epsilon 1 (the
  grid exponent is then ``k = 40``: a discrete Laplace of scale about ``2**40``);
* ``noise.discrete_laplace`` at scales 1, 10, 1000 and ``noise.discrete_gaussian`` at
  sigma 1, 10, 1000;
* ``noise.secure_gaussian`` at sigma 1 (default grid: sigma ``2**k`` about ``2**20``),
  and ``mechanisms.gaussian_mechanism`` on a 10**6 vector.

privot's samplers read the operating system's CSPRNG (``rng=None``, the default and
what a release uses); the seeded-generator column shows the cost without
``os.urandom``. Ratios are against ``Generator.laplace``. Writes
``benchmarks/results/noise.json`` and ``benchmarks/results/noise.png``.
Run: ``python benchmarks/bench_noise.py``.
"""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from privot.privacy import mechanisms, noise

N = 10**6
REPEATS = 7
RESULTS = Path(__file__).resolve().parent / "results"


def _best(fn, repeats: int = REPEATS) -> float:
    fn()  # warm-up: builds and caches the inversion tables of a new scale
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def _paired(fn, base, repeats: int = REPEATS) -> tuple[float, float]:
    """Best times of ``fn`` and of the baseline, run alternately so that both see the
    same machine load (the ratio is then robust to a busy machine)."""
    fn()
    base()
    tf, tb = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        base()
        t1 = time.perf_counter()
        fn()
        t2 = time.perf_counter()
        tb.append(t1 - t0)
        tf.append(t2 - t1)
    return min(tf), min(tb)


def _first_call(fn) -> float:
    """Time of one call with cold table caches (the cost a new scale pays once)."""
    for f in (noise._geometric_table, noise._abs_dlap_table,  # noqa: SLF001
              noise._gauss_tables, noise._e1_threshold):  # noqa: SLF001
        f.cache_clear()
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _urandom_rate() -> float:
    """Seconds per 10**6 64-bit words from os.urandom (the entropy floor)."""
    return _best(lambda: os.urandom(8 * N), 5)


def _cases(seeded: bool):
    zeros = np.zeros(N)

    def rng():
        return np.random.default_rng(1) if seeded else None

    return {
        "secure_laplace(scale=1)": lambda: noise.secure_laplace(zeros, 1.0, rng=rng()),
        "laplace_mechanism(k=40)": lambda: mechanisms.laplace_mechanism(
            zeros, sensitivity=1.0, epsilon=1.0, rng=rng()),
        "discrete_laplace(1)": lambda: noise.discrete_laplace(1.0, N, rng=rng()),
        "discrete_laplace(10)": lambda: noise.discrete_laplace(10.0, N, rng=rng()),
        "discrete_laplace(1000)": lambda: noise.discrete_laplace(1000.0, N, rng=rng()),
        "discrete_gaussian(1)": lambda: noise.discrete_gaussian(1.0, N, rng=rng()),
        "discrete_gaussian(10)": lambda: noise.discrete_gaussian(10.0, N, rng=rng()),
        "discrete_gaussian(1000)": lambda: noise.discrete_gaussian(1000.0, N, rng=rng()),
        "secure_gaussian(sigma=1)": lambda: noise.secure_gaussian(zeros, 1.0, rng=rng()),
        "gaussian_mechanism": lambda: mechanisms.gaussian_mechanism(
            zeros, sensitivity=1.0, epsilon=1.0, delta=1e-5, rng=rng()),
    }


def main() -> dict:
    RESULTS.mkdir(parents=True, exist_ok=True)
    gen = np.random.default_rng(0)
    base_laplace = _best(lambda: gen.laplace(0.0, 1.0, N))
    base_normal = _best(lambda: gen.normal(0.0, 1.0, N))
    urandom = _urandom_rate()
    print(f"numpy Generator.laplace: {base_laplace * 1e3:.1f} ms, .normal: "
          f"{base_normal * 1e3:.1f} ms, os.urandom 8 MB: {urandom * 1e3:.1f} ms")
    secure = _cases(seeded=False)
    seeded = _cases(seeded=True)
    rows = []
    for name, fn in secure.items():
        t, base = _paired(fn, lambda: gen.laplace(0.0, 1.0, N))
        t_seeded, base_s = _paired(seeded[name], lambda: gen.laplace(0.0, 1.0, N))
        cold = _first_call(fn)
        gauss = "gaussian" in name
        row = {
            "case": name, "seconds": t, "numpy_laplace_seconds_paired": base,
            "ratio_vs_numpy_laplace": t / base,
            "seconds_seeded_generator": t_seeded,
            "ratio_seeded_vs_numpy_laplace": t_seeded / base_s,
            "seconds_first_call_cold_tables": cold,
        }
        if gauss:
            tn, bn = _paired(fn, lambda: gen.normal(0.0, 1.0, N))
            row["ratio_vs_numpy_normal"] = tn / bn
        rows.append(row)
        print(f"{name:26s} {t * 1e3:7.1f} ms  x{t / base:5.2f} of laplace {base * 1e3:5.1f} ms"
              f"  (seeded {t_seeded * 1e3:6.1f} ms x{t_seeded / base_s:5.2f}; "
              f"cold {cold * 1e3:6.1f} ms)"
              + (f"  x{row['ratio_vs_numpy_normal']:5.2f} of normal" if gauss else ""))
    out = {
        "draws": N, "repeats": REPEATS,
        "statistic": "best of repeats after one warm-up; each case alternates with its "
                     "numpy baseline and the ratio uses the paired baseline",
        "load_average": list(os.getloadavg()),
        "baseline": {"numpy_laplace_seconds": base_laplace,
                     "numpy_normal_seconds": base_normal,
                     "os_urandom_8MB_seconds": urandom},
        "entropy": "privot rows use rng=None (os.urandom); *_seeded_generator rows a "
                   "seeded numpy Generator",
        "cases": rows,
        "machine": {"platform": platform.platform(), "processor": platform.processor(),
                    "python": platform.python_version(), "numpy": np.__version__,
                    "cpus": os.cpu_count()},
    }
    (RESULTS / "noise.json").write_text(json.dumps(out, indent=2))

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [r["case"] for r in rows]
    y = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(7.5, 4.6))
    ax.barh(y + 0.2, [r["ratio_vs_numpy_laplace"] for r in rows], height=0.4,
            label="OS entropy (rng=None)")
    ax.barh(y - 0.2, [r["ratio_seeded_vs_numpy_laplace"] for r in rows], height=0.4,
            label="seeded Generator")
    ax.axvline(1.0, color="grey", lw=0.8)
    ax.axvline(10.0, color="red", lw=0.8, ls="--", label="10x target")
    ax.set_xscale("log")
    ax.set_yticks(y, names, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel(f"time / numpy Generator.laplace (about {base_laplace * 1e3:.0f} ms), "
                  f"{N:.0e} draws")
    ax.set_title("Exact secure samplers vs numpy floating point")
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(RESULTS / "noise.png", dpi=120)
    return out


if __name__ == "__main__":
    main()
