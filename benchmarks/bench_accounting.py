"""Benchmark of privot's accountants on one DP-SGD-like setting.

Calibrates the noise multiplier for (epsilon=1, delta=1e-5, T=500 steps, q=0.2) with
every accountant privot offers (PLD Poisson, PLD fixed-size replace-one, RDP Poisson,
RDP fixed-size, GDP-CLT), next to ``dp_accounting.calibrate_dp_mechanism``'s answer
where dp_accounting supports the setting, records the wall time of each, and draws
epsilon-versus-sigma curves.

Writes ``benchmarks/results/accounting.json`` and ``benchmarks/results/accounting.png``.
Run: ``python benchmarks/bench_accounting.py``.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import dp_accounting
import numpy as np

from privot.privacy import accounting as acc

EPS, DELTA, STEPS, Q = 1.0, 1e-5, 500, 0.2
VDI = 1e-4  # dp_accounting's default PLD grid
RESULTS = Path(__file__).resolve().parent / "results"
NR = dp_accounting.NeighboringRelation


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def _reference(accountant: str, sampling: str) -> float | None:
    """dp_accounting's own calibration, where its accountants support the setting."""
    gauss = dp_accounting.GaussianDpEvent
    if accountant == "pld" and sampling == "poisson":
        def make_acct():
            return dp_accounting.pld.PLDAccountant(NR.ADD_OR_REMOVE_ONE, VDI)

        def make_event(s):
            return dp_accounting.SelfComposedDpEvent(
                dp_accounting.PoissonSampledDpEvent(Q, gauss(s)), STEPS)
    elif accountant == "rdp" and sampling == "poisson":
        def make_acct():
            return dp_accounting.rdp.RdpAccountant()

        def make_event(s):
            return dp_accounting.SelfComposedDpEvent(
                dp_accounting.PoissonSampledDpEvent(Q, gauss(s)), STEPS)
    elif accountant == "rdp" and sampling == "fixed-size":
        def make_acct():
            return dp_accounting.rdp.RdpAccountant(neighboring_relation=NR.REPLACE_ONE)

        def make_event(s):
            return dp_accounting.SelfComposedDpEvent(
                dp_accounting.SampledWithoutReplacementDpEvent(1000, 200, gauss(s)), STEPS)
    else:  # dp_accounting's PLD has no sampling-without-replacement event; CLT is ours
        return None
    with acc._quiet_absl():  # noqa: SLF001 - benchmark-only use of the log silencer
        return float(dp_accounting.calibrate_dp_mechanism(
            make_acct, make_event, EPS, DELTA,
            bracket_interval=dp_accounting.ExplicitBracketInterval(0.3, 200.0), tol=1e-5))


def main() -> dict:
    RESULTS.mkdir(parents=True, exist_ok=True)
    rows = []
    for accountant, sampling in [("pld", "poisson"), ("pld", "fixed-size"),
                                 ("rdp", "poisson"), ("rdp", "fixed-size"),
                                 ("gdp-clt", "poisson"), ("gdp-clt", "fixed-size")]:
        res, t = _timed(lambda a=accountant, s=sampling: acc.calibrate_noise_multiplier(
            EPS, DELTA, steps=STEPS, sampling_rate=Q, accountant=a, sampling=s, rtol=1e-5,
            value_discretization_interval=VDI))
        ref, t_ref = _timed(lambda a=accountant, s=sampling: _reference(a, s))
        rows.append({
            "accountant": accountant, "sampling": sampling, "relation": res.relation.value,
            "sigma": res.noise_multiplier, "achieved_epsilon": res.epsilon,
            "is_upper_bound": res.is_upper_bound, "seconds": t,
            "dp_accounting_sigma": ref, "dp_accounting_seconds": t_ref if ref else None,
        })
        print(f"{accountant:8s} {sampling:10s} sigma={res.noise_multiplier:.5f} "
              f"eps={res.epsilon:.5f} ({t:.2f}s)  dp_accounting="
              f"{'n/a' if ref is None else f'{ref:.5f} ({t_ref:.2f}s)'}")

    sigmas = np.linspace(0.7, 2.0, 14)
    curves = {}
    for accountant, sampling in [("pld", "poisson"), ("pld", "fixed-size"),
                                 ("rdp", "poisson"), ("rdp", "fixed-size"),
                                 ("gdp-clt", "poisson")]:
        curves[f"{accountant} {sampling}"] = [acc.epsilon_for(
            noise_multiplier=float(s), sampling_rate=Q, steps=STEPS, delta=DELTA,
            accountant=accountant, sampling=sampling, value_discretization_interval=1e-3)
            for s in sigmas]

    out = {"setting": {"epsilon": EPS, "delta": DELTA, "steps": STEPS, "sampling_rate": Q,
                       "value_discretization_interval": VDI},
           "calibration": rows,
           "curves": {"sigma": sigmas.tolist(), "epsilon": curves,
                      "value_discretization_interval": 1e-3}}
    (RESULTS / "accounting.json").write_text(json.dumps(out, indent=2))

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for label, eps in curves.items():
        ax.plot(sigmas, eps, marker="o", ms=3, label=label,
                linestyle="--" if label.startswith("gdp") else "-")
    ax.axhline(EPS, color="grey", lw=0.8)
    ax.set_yscale("log")
    ax.set_xlabel("noise multiplier sigma")
    ax.set_ylabel(f"epsilon at delta={DELTA:g}")
    ax.set_title(f"Subsampled Gaussian, T={STEPS}, q={Q}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(RESULTS / "accounting.png", dpi=120)
    return out


if __name__ == "__main__":
    main()
