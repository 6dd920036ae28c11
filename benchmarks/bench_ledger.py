"""The budget ledger on a mixed workload: 100 heatmaps at eps = 0.05 and 20 Gaussians.

One ledger (user-level, add/remove, total eps = 10, delta = 1e-6, Renyi filter) gets

* 100 REAL heatmap releases, ``privot.heatmaps.private_heatmap`` (pyramid, grid 32 x 32)
  on a seeded synthetic population of 400 users, each through
  ``ledger.release(PureEvent(0.05), ...)``: the hold is charged up front, the release
  runs on an accountant of exactly that hold, and the ledger records the per-level
  Laplace pieces that ran (a :class:`ComposedEvent` of pure events summing to 0.05);
* 20 Gaussian releases, ``privot.privacy.mechanisms.gaussian_mechanism`` with
  sensitivity 1 charged to ``ledger.accountant()``. It is parameterised by
  ``(epsilon, delta)``; we pick ``delta = 1e-8`` and ``epsilon = gdp_to_epsilon(1/20,
  1e-8)`` so that ``gdp_mu_for`` gives mu = 1/20, i.e. a noise multiplier sigma /
  sensitivity of 20 (against the rounded query's effective sensitivity, as recorded).

Reported at delta = 1e-6: the ledger's PLD epsilon; dp_accounting's PLDAccountant run
directly on the same recorded events (must agree within 1%, else this script fails);
basic composition; the Renyi filter the ledger enforces; dp_accounting's RdpAccountant
on the same events; and the PLD of the holds as charged (100 x PureEvent(0.05)). Timings:
a charge, the bookkeeping of a release (charge + finish), ``status()`` with and without
the PLD. Sweep: the same mixture with 10, 30, 100, 300 heatmap releases (recorded with
``ledger.charge`` of the events the real releases recorded) and 20 Gaussians.

dp_accounting's conventions (0.6.0): randomised response only under REPLACE_ONE, whose
Gaussian *PLD* doubles the sensitivity (so a noise multiplier s relative to the ledger's
sensitivity is ``GaussianDpEvent(2 s)`` there) while its Gaussian *RDP* does not (so it
is ``GaussianDpEvent(s)`` in the RdpAccountant); ``SelfComposedDpEvent`` of randomised
response is composed once by the PLDAccountant whatever the count, hence explicit lists.

Writes ``benchmarks/results/ledger.json`` and ``benchmarks/results/ledger.png``.
Run: ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_ledger.py`` (about a minute).
"""

from __future__ import annotations

import importlib.metadata
import json
import math
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

import dp_accounting
import numpy as np
from dp_accounting.pld import pld_privacy_accountant
from dp_accounting.rdp import rdp_privacy_accountant

from _common import git_state
from privot.heatmaps import Grid, private_heatmap
from privot.privacy.accounting import gdp_to_epsilon
from privot.privacy.events import PureEvent
from privot.privacy.ledger import Ledger, pld_epsilon
from privot.privacy.mechanisms import gaussian_mechanism

RESULTS = Path(__file__).resolve().parent / "results"
NR = dp_accounting.NeighboringRelation
TOTAL_EPS, DELTA = 10.0, 1e-6
N_HEATMAPS, EPS_HEATMAP = 100, 0.05
N_GAUSS, NOISE_MULT, DELTA_GAUSS = 20, 20.0, 1e-8
SWEEP = (10, 30, 100, 300)
GRID = Grid((0.0, 1.0, 0.0, 1.0), 32)
VDI = 1e-4  # the ledger's PLD grid (events.PLD_DISCRETIZATION)


def _population(n_users: int = 400, seed: int = 0):
    """Users with 1-8 points each around one of five public centres."""
    rng = np.random.default_rng(seed)
    centres = np.array([[0.2, 0.2], [0.7, 0.3], [0.5, 0.8], [0.85, 0.85], [0.3, 0.6]])
    users, xs, ys = [], [], []
    for u in range(n_users):
        c = centres[rng.integers(len(centres))]
        k = int(rng.integers(1, 9))
        pts = c + rng.normal(0, 0.04, (k, 2))
        users += [u] * k
        xs += pts[:, 0].tolist()
        ys += pts[:, 1].tolist()
    return np.asarray(users), np.asarray(xs), np.asarray(ys)


def _dp_events(events) -> tuple[list, list]:
    """dp_accounting events for the PLD and the RDP accountants (REPLACE_ONE).

    PLD: one event per atomic part (the PLDAccountant ignores the count of a
    self-composed randomised response). RDP: identical parts self-composed (the
    RdpAccountant honours the count, and is slow event by event).
    """
    pld_evs, counts = [], {}
    for ev in events:
        for p in ev.parts():
            if p.kind == "pure":
                key = ("rr", p.epsilon)
                pld_evs.append(dp_accounting.RandomizedResponseDpEvent(
                    noise_parameter=2.0 / (1.0 + math.exp(p.epsilon)), num_buckets=2))
            elif p.kind == "gaussian":
                key = ("gauss", p.noise_multiplier)
                pld_evs.append(dp_accounting.GaussianDpEvent(2.0 * p.noise_multiplier))
            else:
                raise RuntimeError(f"unexpected event {p.describe()}")
            counts[key] = counts.get(key, 0) + 1
    rdp_evs = []
    for (kind, v), c in counts.items():
        one = (dp_accounting.RandomizedResponseDpEvent(
            noise_parameter=2.0 / (1.0 + math.exp(v)), num_buckets=2) if kind == "rr"
            else dp_accounting.GaussianDpEvent(v))
        rdp_evs.append(dp_accounting.SelfComposedDpEvent(one, c))
    return pld_evs, rdp_evs


def _direct(events) -> dict:
    pld_evs, rdp_evs = _dp_events(events)
    t0 = time.perf_counter()
    pacc = pld_privacy_accountant.PLDAccountant(NR.REPLACE_ONE, VDI)
    pacc.compose(dp_accounting.ComposedDpEvent(pld_evs))
    pld = float(pacc.get_epsilon(DELTA))
    t1 = time.perf_counter()
    racc = rdp_privacy_accountant.RdpAccountant(neighboring_relation=NR.REPLACE_ONE)
    racc.compose(dp_accounting.ComposedDpEvent(rdp_evs))
    rdp, order = racc.get_epsilon_and_optimal_order(DELTA)
    return {"pld_epsilon": pld, "pld_seconds": t1 - t0, "rdp_epsilon": float(rdp),
            "rdp_order": float(order), "rdp_seconds": time.perf_counter() - t1,
            "atomic_events": len(pld_evs)}


def _summary(ledger: Ledger) -> dict:
    t0 = time.perf_counter()
    st = ledger.status()
    t_status = time.perf_counter() - t0
    t0 = time.perf_counter()
    ledger.status(pld=False)
    t_status_nopld = time.perf_counter() - t0
    return {"basic_epsilon": st.basic[0], "basic_delta": st.basic[1],
            "renyi_filter_epsilon": st.spent_epsilon, "renyi_filter_order": st.best_order,
            "pld_epsilon": st.pld_epsilon, "releases": st.releases,
            "status_seconds": t_status, "status_no_pld_seconds": t_status_nopld}


def main() -> dict:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    RESULTS.mkdir(exist_ok=True)
    users, xs, ys = _population()
    eps_g = gdp_to_epsilon(1.0 / NOISE_MULT, DELTA_GAUSS)
    with tempfile.TemporaryDirectory(prefix="bench-ledger-") as tmp:
        # the Renyi filter alone (this benchmark measures it; the default is now the
        # hybrid filter, compared in bench_ledger_filters.py)
        ledger = Ledger.create(Path(tmp) / "bench.ledger", epsilon=TOTAL_EPS, delta=DELTA,
                               name="synthetic-400", filter="rdp")
        t_release, t_heatmap = [], []
        for i in range(N_HEATMAPS):
            t0 = time.perf_counter()
            with ledger.release(PureEvent(EPS_HEATMAP, "laplace"), capability="heatmap",
                                mechanism="pyramid", params={"grid": 32, "run": i}) as acct:
                t1 = time.perf_counter()
                private_heatmap(user=users, x=xs, y=ys, grid=GRID, epsilon=EPS_HEATMAP,
                                accountant=acct, rng=np.random.default_rng(1000 + i))
                t_heatmap.append(time.perf_counter() - t1)
            t_release.append(time.perf_counter() - t0)
        gacct = ledger.accountant(capability="gaussian")
        t_gauss, sigmas = [], []
        rng = np.random.default_rng(7)
        for _ in range(N_GAUSS):
            t0 = time.perf_counter()
            rel = gaussian_mechanism(float(rng.uniform(0, 10)), sensitivity=1.0, epsilon=eps_g,
                                     delta=DELTA_GAUSS, accountant=gacct,
                                     rng=np.random.default_rng(int(rng.integers(2**31))))
            t_gauss.append(time.perf_counter() - t0)
            sigmas.append(rel.params["sigma"] / rel.params["effective_sensitivity"])
        rels = ledger.releases()
        events = [r.event for r in rels]
        recorded_nm = [r.event.noise_multiplier for r in rels if r.event.kind == "gaussian"]
        # bare charges of the same 120 events into a second ledger (0 to 119 rows before)
        t_charge = []
        probe = Ledger.create(Path(tmp) / "probe.ledger", epsilon=1e6, delta=DELTA,
                              filter="rdp")
        for ev in events:
            t0 = time.perf_counter()
            probe.charge(ev, capability="probe", mechanism="m")
            t_charge.append(time.perf_counter() - t0)
        main_summary = _summary(ledger)
        held_pld = pld_epsilon([PureEvent(EPS_HEATMAP)] * N_HEATMAPS
                               + [e for e in events if e.kind == "gaussian"], DELTA)
        direct = _direct(events)
        report = ledger.report()

        rel_err = abs(main_summary["pld_epsilon"] - direct["pld_epsilon"]) / direct["pld_epsilon"]
        if not rel_err <= 0.01:
            raise SystemExit(f"ledger PLD eps {main_summary['pld_epsilon']} and dp_accounting "
                             f"direct {direct['pld_epsilon']} differ by {rel_err:.2%} (> 1%)")

        # sweep: the same mixture with more or fewer heatmaps, recorded as events
        heat_events = [e for e in events if e.kind == "composed"]
        gauss_events = [e for e in events if e.kind == "gaussian"]
        sweep = []
        for n in SWEEP:
            led = Ledger.create(Path(tmp) / f"sweep{n}.ledger", epsilon=1e3, delta=DELTA,
                                filter="rdp")
            t0 = time.perf_counter()
            for j in range(n):
                led.charge(heat_events[j % len(heat_events)], capability="heatmap",
                           mechanism="pyramid")
            for ev in gauss_events:
                led.charge(ev, capability="gaussian", mechanism="gaussian-analytic")
            t_fill = time.perf_counter() - t0
            s = _summary(led)
            d = _direct([r.event for r in led.releases()])
            sweep.append({"heatmaps": n, "gaussians": len(gauss_events),
                          "charge_seconds_mean": t_fill / (n + len(gauss_events)), **s,
                          "dp_accounting_pld_epsilon": d["pld_epsilon"],
                          "dp_accounting_rdp_epsilon": d["rdp_epsilon"]})
            err = abs(s["pld_epsilon"] - d["pld_epsilon"]) / d["pld_epsilon"]
            if not err <= 0.01:
                raise SystemExit(f"sweep n={n}: ledger PLD and dp_accounting differ by "
                                 f"{err:.2%}")

    first = heat_events[0]
    out = {
        "setting": {"total_epsilon": TOTAL_EPS, "delta": DELTA, "heatmaps": N_HEATMAPS,
                    "heatmap_epsilon": EPS_HEATMAP, "heatmap_grid": 32,
                    "population": "synthetic, 400 users, seed 0",
                    "gaussians": N_GAUSS, "gaussian_noise_multiplier_target": NOISE_MULT,
                    "gaussian_epsilon_delta": [eps_g, DELTA_GAUSS],
                    "ledger": "user/add-remove, filter rdp, 21 orders + infinity",
                    "pld_value_discretization": VDI},
        "gaussian_parameterisation": (
            "gaussian_mechanism takes (epsilon, delta); epsilon = gdp_to_epsilon(1/20, 1e-8) "
            "gives mu = 1/20 by gdp_mu_for, i.e. sigma / effective sensitivity = 20"),
        "gaussian_noise_multiplier_recorded": [min(recorded_nm), max(recorded_nm)],
        "gaussian_sigma_over_effective_sensitivity": [min(sigmas), max(sigmas)],
        "heatmap_recorded_event": {
            "kind": first.kind, "levels": len(first.parts()),
            "level_epsilons": [p.epsilon for p in first.parts()],
            "sum": math.fsum(p.epsilon for p in first.parts())},
        "at_delta_1e-6": {
            "ledger_pld_epsilon": main_summary["pld_epsilon"],
            "dp_accounting_pld_epsilon": direct["pld_epsilon"],
            "pld_relative_difference": rel_err,
            "basic_epsilon": main_summary["basic_epsilon"],
            "basic_delta": main_summary["basic_delta"],
            "renyi_filter_epsilon": main_summary["renyi_filter_epsilon"],
            "renyi_filter_order": main_summary["renyi_filter_order"],
            "dp_accounting_rdp_epsilon": direct["rdp_epsilon"],
            "dp_accounting_rdp_order": direct["rdp_order"],
            "pld_epsilon_of_the_holds": held_pld,
        },
        "timings_seconds": {
            "charge_median": statistics.median(t_charge),
            "charge_max": max(t_charge),
            "release_bookkeeping_median": statistics.median(
                [a - b for a, b in zip(t_release, t_heatmap, strict=True)]),
            "heatmap_median": statistics.median(t_heatmap),
            "gaussian_release_median": statistics.median(t_gauss),
            "status_with_pld": main_summary["status_seconds"],
            "status_without_pld": main_summary["status_no_pld_seconds"],
            "dp_accounting_pld": direct["pld_seconds"],
            "dp_accounting_rdp": direct["rdp_seconds"],
            "ledger_on": "a temporary folder on the local disk (synchronous=FULL)",
        },
        "sweep": sweep,
        "report_head": report.splitlines()[:8],
        "environment": {"python": platform.python_version(), "numpy": np.__version__,
                        "dp_accounting": importlib.metadata.version("dp-accounting"),
                        "machine": platform.machine(), "cpus": os.cpu_count(),
                        "openblas_threads": os.environ.get("OPENBLAS_NUM_THREADS"),
                        "privot_git": git_state()},
    }
    (RESULTS / "ledger.json").write_text(json.dumps(out, indent=2))
    _plot(sweep)
    return out


def _plot(sweep: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = [s["heatmaps"] for s in sweep]
    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    ax.plot(n, [s["basic_epsilon"] for s in sweep], marker="o", label="basic composition")
    ax.plot(n, [s["renyi_filter_epsilon"] for s in sweep], marker="s",
            label="Renyi filter (enforced)")
    ax.plot(n, [s["dp_accounting_rdp_epsilon"] for s in sweep], marker="v", ls=":",
            label="dp_accounting RDP (fixed sequence)")
    ax.plot(n, [s["pld_epsilon"] for s in sweep], marker="^", label="PLD (fixed sequence)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(f"heatmap releases at eps={EPS_HEATMAP} (+ {N_GAUSS} Gaussians, sigma=20)")
    ax.set_ylabel(f"epsilon at delta={DELTA:g}")
    ax.set_title("Budget ledger: one data set, many releases")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(RESULTS / "ledger.png", dpi=120)


if __name__ == "__main__":
    res = main()
    print(json.dumps({"at_delta_1e-6": res["at_delta_1e-6"],
                      "timings_seconds": res["timings_seconds"],
                      "sweep": [{k: s[k] for k in ("heatmaps", "basic_epsilon",
                                                   "renyi_filter_epsilon", "pld_epsilon",
                                                   "dp_accounting_pld_epsilon",
                                                   "dp_accounting_rdp_epsilon")}
                                for s in res["sweep"]]}, indent=2))
