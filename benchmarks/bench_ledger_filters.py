"""The ledger's filters side by side: basic, Renyi alone, the hybrid filter, and PLD.

Issue 24, item 1: a release that proves (eps, delta) was charged more than that by the
Renyi filter (``privot learn --epsilon 1 --delta 1e-6`` read 2.34 on a fresh (1, 1e-5)
ledger). The hybrid filter (``filter="hybrid"``, the default since; proof in
``docs/privacy/budget.md``, "The hybrid filter") runs basic composition of the proved
pairs, their deltas within a reserve fixed at creation, beside the Renyi filter with the
rest of delta, and enforces the smaller. This script charges the same event sequences
to one ledger per rule and reports, at the ledger's delta:

* ``basic``: the sum of the epsilons (``filter="basic"``; delta: the sum of the deltas);
* ``renyi``: the Renyi filter alone, all of delta converting (``filter="rdp"``, the rule
  before; a reserve only when a release has approx parts);
* ``hybrid``: the hybrid filter at the default split (half of delta each), and at other
  splits (``approx_delta`` fraction 0.1 to 0.9);
* ``pld``: the privacy loss distributions composed (tight for a sequence fixed in
  advance; shown, never enforced).

Sequences: the demo's ledgers (the events a ``make demo`` run recorded, embedded below;
``--demo-folder`` reads them from another run's output folder instead), 100 heatmaps at
eps = 0.05 + 20 Gaussians at sigma = 20 (the ``bench_ledger.py`` mixture, both orders),
and DP-SGD runs calibrated by PLD to (1, 1e-6): ``privot learn``'s default (batch
fraction 0.2, 100 steps) once and 10 times, and q = 0.01 with 1,000 steps 10 times.
Also recorded: the counterexample of the docs, a strategy that breaks any filter taking
path by path the better of basic composition and the Renyi filter each with all of delta.

Writes ``benchmarks/results/ledger_filters.json`` and ``benchmarks/results/ledger_filters.png``.
Run: ``OPENBLAS_NUM_THREADS=1 python benchmarks/bench_ledger_filters.py`` (about a minute).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import math
import os
import platform
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from _common import git_state
from privot.privacy.accounting import calibrate_noise_multiplier, gdp_to_epsilon
from privot.privacy.events import (
    ComposedEvent,
    GaussianEvent,
    PureEvent,
    SubsampledGaussianEvent,
    event_from_dict,
)
from privot.privacy.ledger import HYBRID_APPROX_FRACTION, ORDERS, Ledger

RESULTS = Path(__file__).resolve().parent / "results"
SPLITS = (0.1, 0.25, 0.5, 0.75, 0.9)
RULES = ("basic", "renyi", "hybrid", "pld")
#: The per-level epsilons one pyramid heatmap at eps = 0.05 records (grid 32 x 32;
#: ``results/ledger.json``, "heatmap_recorded_event"): the events bench_ledger.py charges.
HEATMAP_LEVELS = (0.0195262145875635, 0.013807118745769837, 0.009763107293781749,
                  0.0069035593728849175)

#: One of the demo's three DP-SGD runs on the GSS wages (all three are the same event).
_GSS_RUN = ('learn', 'learning.dp-sgd-wasserstein',
            {'kind': 'subsampled-gaussian', 'noise_multiplier': 19.310034419756406,
             'sampling_rate': 0.20001315010848839, 'steps': 300, 'sampling': 'fixed-size',
             'epsilon': 0.9999928217331312, 'delta': 1.111111111111111e-09})

#: The demo's ledgers as a ``make demo`` run recorded them (privot 7d93357 + issue 24
#: item 4, full run, 2026-11-27): total, unit/relation, and each release's event.
DEMO_LEDGERS = {'gss-wages': {'total': [6.0, 1e-08],
                              'unit': 'row',
                              'relation': 'replace-one',
                              'releases': [_GSS_RUN] * 3},
                'mnist': {'total': [10.0, 1e-05],
                          'unit': 'row',
                          'relation': 'replace-one',
                          'releases': [('barycenter',
                                        'private-barycenter-subspace',
                                        {'kind': 'gaussian',
                                         'noise_multiplier': 1.1935185871580183,
                                         'epsilon': 4.0,
                                         'delta': 1e-06}),
                                       ('barycenter',
                                        'private-barycenter-coreset',
                                        {'kind': 'pure',
                                         'epsilon': 4.0,
                                         'mechanism': 'laplace-coreset'})]},
                'mpls-stops': {'total': [1.0, 1e-06],
                               'unit': 'row',
                               'relation': 'add-remove',
                               'releases': [('counts',
                                             'laplace',
                                             {'kind': 'composed',
                                              'events': [{'kind': 'pure',
                                                          'epsilon': 0.5,
                                                          'mechanism': 'laplace'},
                                                         {'kind': 'pure',
                                                          'epsilon': 0.5,
                                                          'mechanism': 'laplace'}]})]},
                'storms': {'total': [12.0, 1e-06],
                           'unit': 'user',
                           'relation': 'replace-one',
                           'releases': [('heatmap',
                                         'laplace',
                                         {'kind': 'composed',
                                          'events': [{'kind': 'pure',
                                                      'epsilon': 2.0,
                                                      'mechanism': 'laplace'}]}),
                                        ('heatmap',
                                         'threshold',
                                         {'kind': 'composed',
                                          'events': [{'kind': 'pure',
                                                      'epsilon': 2.0,
                                                      'mechanism': 'laplace'}]}),
                                        ('heatmap',
                                         'pyramid',
                                         {'kind': 'composed',
                                          'events': [{'kind': 'pure',
                                                      'epsilon': 0.6694702144307486,
                                                      'mechanism': 'laplace'},
                                                     {'kind': 'pure',
                                                      'epsilon': 0.47338692842639435,
                                                      'mechanism': 'laplace'},
                                                     {'kind': 'pure',
                                                      'epsilon': 0.3347351072153742,
                                                      'mechanism': 'laplace'},
                                                     {'kind': 'pure',
                                                      'epsilon': 0.23669346421319712,
                                                      'mechanism': 'laplace'},
                                                     {'kind': 'pure',
                                                      'epsilon': 0.1673675536076871,
                                                      'mechanism': 'laplace'},
                                                     {'kind': 'pure',
                                                      'epsilon': 0.11834673210659855,
                                                      'mechanism': 'laplace'}]}),
                                        ('sample',
                                         'ldp-population-sample (linear)',
                                         {'kind': 'pure',
                                          'epsilon': 2.0,
                                          'mechanism': 'ldp-population-sample (linear)'}),
                                        ('sample',
                                         'ldp-population-sample (direct)',
                                         {'kind': 'pure',
                                          'epsilon': 2.0,
                                          'mechanism': 'ldp-population-sample (direct)'})]},
                'us-population': {'total': [60.0, 0.001],
                                  'unit': 'row',
                                  'relation': 'replace-one',
                                  'releases': [('barycenter',
                                                'private-barycenter-coreset',
                                                {'kind': 'pure',
                                                 'epsilon': 10.76555067859718,
                                                 'mechanism': 'laplace-coreset'}),
                                               ('barycenter',
                                                'private-barycenter-perturbation',
                                                {'kind': 'composed',
                                                 'events': [{'kind': 'pure',
                                                             'epsilon': 5.38277533929859,
                                                             'mechanism': 'laplace-coreset-anchor'},
                                                            {'kind': 'gaussian',
                                                             'noise_multiplier': 0.7489143746680752,
                                                             'epsilon': 5.38277533929859,
                                                             'delta': 9.999999999999999e-05}]}),
                                               ('barycenter',
                                                'private-barycenter-coreset',
                                                {'kind': 'pure',
                                                 'epsilon': 10.498640240770252,
                                                 'mechanism': 'laplace-coreset'}),
                                               ('barycenter',
                                                'private-barycenter-perturbation',
                                                {'kind': 'composed',
                                                 'events': [{'kind': 'pure',
                                                             'epsilon': 5.249320120385126,
                                                             'mechanism': 'laplace-coreset-anchor'},
                                                            {'kind': 'gaussian',
                                                             'noise_multiplier': 0.7755520147231586,
                                                             'epsilon': 5.249320120385126,
                                                             'delta': 7.657367035287496e-05}]})]}}

def _demo_from_folder(folder: Path) -> dict:
    """The same structure read from a demo output folder's ``budget-*.sqlite`` files
    (read only: plain SQLite, whatever their version)."""
    out = {}
    for f in sorted(Path(folder).glob("budget-*.sqlite")):
        con = sqlite3.connect(f"file:{f}?mode=ro", uri=True)
        try:
            spec = {k: json.loads(v) for k, v in con.execute("SELECT key, value FROM spec")}
            rows = con.execute("SELECT capability, mechanism, event FROM releases "
                               "ORDER BY id").fetchall()
        finally:
            con.close()
        out[f.stem.removeprefix("budget-")] = {
            "total": [spec["epsilon"], spec["delta"]], "unit": spec["unit"],
            "relation": spec["relation"],
            "releases": [(c, m, json.loads(e)) for c, m, e in rows]}
    return out


def _dpsgd(q: float, steps: int) -> SubsampledGaussianEvent:
    cal = calibrate_noise_multiplier(1.0, 1e-6, steps=steps, sampling_rate=q,
                                     accountant="pld", sampling="fixed-size")
    return SubsampledGaussianEvent(cal.noise_multiplier, q, steps, "fixed-size",
                                   cal.epsilon, 1e-6)


def _sequences(demo: dict) -> dict:
    seqs = {}
    for key, spec in demo.items():
        seqs[f"demo: {key}"] = {
            "total": tuple(spec["total"]), "unit": spec["unit"],
            "relation": spec["relation"],
            "events": [event_from_dict(e) for _, _, e in spec["releases"]]}
    # what bench_ledger.py's real heatmaps record: a pyramid's four Laplace levels
    heat = [ComposedEvent(tuple(PureEvent(e, "laplace") for e in HEATMAP_LEVELS))] * 100
    gauss = [GaussianEvent(20.0, gdp_to_epsilon(1 / 20, 1e-8), 1e-8)] * 20
    mix = {"total": (10.0, 1e-6), "unit": "user", "relation": "add-remove"}
    seqs["100 heatmaps + 20 Gaussians"] = {**mix, "events": heat + gauss}
    seqs["20 Gaussians + 100 heatmaps"] = {**mix, "events": gauss + heat}
    learn = _dpsgd(0.2, 100)
    row = {"unit": "row", "relation": "replace-one"}
    seqs["1 x DP-SGD (learn default)"] = {
        **row, "total": (1.0, 1e-5), "events": [learn]}
    seqs["10 x DP-SGD (learn default)"] = {**row, "total": (10.0, 1e-5),
                                           "events": [learn] * 10}
    seqs["10 x DP-SGD (q=0.01, T=1000)"] = {**row, "total": (10.0, 1e-5),
                                            "events": [_dpsgd(0.01, 1000)] * 10}
    return seqs


def _charge_all(folder: Path, name: str, seq: dict, filt: str,
                fraction: float | None = None) -> tuple[Ledger, list[float]]:
    """Charge the sequence to a fresh ledger of the same delta and a huge epsilon (so
    that the figure is measured past the total too); the ledger and the charge times."""
    kw = {} if fraction is None else {"approx_delta": fraction}
    if filt == "rdp" and any(e.approx_delta() for e in seq["events"]):
        kw = {"approx_delta": HYBRID_APPROX_FRACTION}  # the rule before needs a reserve
    ledger = Ledger.create(folder / f"{name}.ledger", epsilon=1e9, delta=seq["total"][1],
                           unit=seq["unit"], relation=seq["relation"], filter=filt, **kw)
    times = []
    for ev in seq["events"]:
        t0 = time.perf_counter()
        ledger.charge(ev, capability="bench", mechanism=ev.kind)
        times.append(time.perf_counter() - t0)
    return ledger, times


def _figure(ledger: Ledger) -> float:
    st = ledger.status(pld=False)
    return st.basic[0] if ledger.filter == "basic" else st.spent_epsilon


def _counterexample() -> dict:
    """The docs' counterexample: a pure 0.95-DP release with a rare outcome, recorded
    with its exact Renyi curve; on the rare outcome a Gaussian the Renyi filter (all of
    delta) admits, on the other an (0.05, delta_T) release basic composition admits."""
    from scipy.optimize import brentq
    from scipy.special import logsumexp
    from scipy.stats import norm

    from privot.privacy.ledger import _conversion_offset

    eps_t, dlt_t, a, e1 = 1.0, 1e-5, 1e-4, 0.95
    orders = np.asarray(ORDERS)
    p = np.log([a, 1 - a])
    q = np.log([a * math.exp(-e1), 1 - a * math.exp(-e1)])
    curve = np.maximum([logsumexp(al * p + (1 - al) * q) / (al - 1) for al in orders],
                       [logsumexp(al * q + (1 - al) * p) / (al - 1) for al in orders])
    offset = _conversion_offset(orders, dlt_t)

    def renyi(sigma: float) -> float:
        return float(np.min(curve + orders / (2 * sigma ** 2) + offset))

    sigma = brentq(lambda s: renyi(s) - eps_t, 1.0, 1e3, xtol=1e-12)
    sigma *= 1 + 1e-9  # just inside: admitted
    mu, e = 1 / sigma, eps_t - e1
    d_gauss = norm.cdf(-e / mu + mu / 2) - math.exp(e) * norm.cdf(-e / mu - mu / 2)
    total = a * d_gauss + (1 - a) * dlt_t
    return {"total": [eps_t, dlt_t], "rare_outcome_probability": a,
            "pure_release_epsilon": e1, "gaussian_sigma": sigma,
            "renyi_filter_with_all_delta": renyi(sigma),
            "approx_release": [eps_t - e1, dlt_t],
            "hockey_stick_at_eps_total": total, "excess_over_delta_total": total - dlt_t,
            "gaussian_delta_at_eps_total_minus_pure": d_gauss,
            "same_with_randomised_response_curve": "no violation (see docs)"}


def main(demo_folder: str | None = None) -> dict:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    RESULTS.mkdir(exist_ok=True)
    demo = DEMO_LEDGERS if demo_folder is None else _demo_from_folder(Path(demo_folder))
    seqs = _sequences(demo)
    rows, curves, timing = [], {}, {"rdp": [], "hybrid": []}
    with tempfile.TemporaryDirectory(prefix="bench-filters-") as tmp:
        folder = Path(tmp)
        for i, (name, seq) in enumerate(seqs.items()):
            eps_t, dlt_t = seq["total"]
            basic, _ = _charge_all(folder, f"b{i}", seq, "basic")
            renyi, t_r = _charge_all(folder, f"r{i}", seq, "rdp")
            hybrid, t_h = _charge_all(folder, f"h{i}", seq, "hybrid")
            timing["rdp"] += t_r
            timing["hybrid"] += t_h
            splits = {f: _figure(_charge_all(folder, f"h{i}-{f}", seq, "hybrid", f)[0])
                      for f in SPLITS}
            st = hybrid.status()
            fig = {"basic": _figure(basic), "renyi": _figure(renyi),
                   "hybrid": st.spent_epsilon, "pld": st.pld_epsilon}
            sum_delta = basic.status(pld=False).basic[1]
            row = {"sequence": name, "total": [eps_t, dlt_t], "releases": len(seq["events"]),
                   "unit_relation": f"{seq['unit']}/{seq['relation']}",
                   "epsilon": fig, "sum_of_deltas": sum_delta,
                   "hybrid_route": st.route, "hybrid_rows_by_view": st.by_view,
                   "hybrid_reserve_used": st.approx_delta[0],
                   "fits_the_total": {k: (v is not None and v <= eps_t * (1 + 1e-12))
                                      for k, v in fig.items()},
                   "ratios": {"hybrid/basic": fig["hybrid"] / fig["basic"],
                              "hybrid/renyi": fig["hybrid"] / fig["renyi"],
                              "hybrid/pld": fig["hybrid"] / fig["pld"],
                              "renyi/basic": fig["renyi"] / fig["basic"],
                              "min(basic,renyi)/pld": min(fig["basic"], fig["renyi"])
                              / fig["pld"]},
                   "hybrid_by_split": splits}
            rows.append(row)
            c = hybrid.spending_curve(pld_points=6, discretization=1e-3)
            curves[name] = {"basic": c["basic"].tolist(), "hybrid": c["filter"].tolist(),
                            "renyi": c["renyi"].tolist(),
                            "pld": [None if not math.isfinite(x) else x for x in c["pld"]]}
    out = {
        "setting": {
            "rules": {"basic": "sum of the epsilons (filter='basic', all of delta)",
                      "renyi": "Renyi filter alone, all of delta converting (filter='rdp')",
                      "hybrid": f"filter='hybrid', reserve {HYBRID_APPROX_FRACTION} of "
                                "delta (default): min(basic route, Renyi filter with the "
                                "rest)",
                      "pld": "PLD at the ledger's delta (fixed sequence; not enforced)"},
            "orders": list(ORDERS),
            "demo_source": "embedded" if demo_folder is None else str(demo_folder)},
        "sequences": rows,
        "curves": curves,
        "counterexample_shared_delta": _counterexample(),
        "charge_seconds_median": {k: statistics.median(v) for k, v in timing.items()},
        "environment": {"python": platform.python_version(), "numpy": np.__version__,
                        "dp_accounting": importlib.metadata.version("dp-accounting"),
                        "machine": platform.machine(), "cpus": os.cpu_count(),
                        "privot_git": git_state()},
    }
    (RESULTS / "ledger_filters.json").write_text(json.dumps(out, indent=2))
    _plot(rows, curves)
    return out


def _plot(rows: list[dict], curves: dict) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (bars, line) = plt.subplots(1, 2, figsize=(14, 5.2),
                                     gridspec_kw={"width_ratios": [1.6, 1]})
    names = [r["sequence"] for r in rows]
    y = np.arange(len(rows))
    width = 0.27
    for j, (rule, color) in enumerate((("renyi", "C1"), ("hybrid", "C0"), ("pld", "C2"))):
        vals = [r["epsilon"][rule] / r["epsilon"]["basic"] for r in rows]
        bars.barh(y + (j - 1) * width, vals, height=width, color=color,
                  label={"renyi": "Renyi filter alone (the rule before)",
                         "hybrid": "hybrid filter (enforced now)",
                         "pld": "PLD (fixed sequence, shown)"}[rule])
        for yy, v in zip(y + (j - 1) * width, vals, strict=True):
            bars.text(v + 0.01, yy, f"{v:.2f}", va="center", fontsize=6.5)
    bars.axvline(1.0, color="0.3", ls="--", lw=1, label="basic composition (= 1)")
    bars.set_yticks(y, names, fontsize=8)
    bars.invert_yaxis()
    bars.set_xlabel("epsilon at the ledger's delta / basic sum of epsilons")
    bars.set_title("Each sequence under each rule, relative to basic composition")
    bars.legend(fontsize=7, loc="lower right")
    bars.grid(axis="x", alpha=0.3)
    key = "10 x DP-SGD (q=0.01, T=1000)"
    c = curves[key]
    n = np.arange(1, len(c["basic"]) + 1)
    line.plot(n, c["basic"], "o--", color="0.4", label="basic (sum)")
    line.plot(n, c["renyi"], "s-", color="C1", label="Renyi filter alone")
    line.plot(n, c["hybrid"], "D-", color="C0", label="hybrid (enforced)")
    pld = [(k + 1, v) for k, v in enumerate(c["pld"]) if v is not None]
    line.plot(*zip(*pld, strict=True), "^", color="C2", label="PLD (fixed sequence)")
    line.set_xlabel("DP-SGD runs (each proves (1, 1e-6) by PLD)")
    line.set_ylabel("epsilon at delta = 1e-5")
    line.set_title(key)
    line.grid(alpha=0.3)
    line.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(RESULTS / "ledger_filters.png", dpi=120)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--demo-folder", default=None,
                        help="read the demo's ledgers from this output folder instead")
    res = main(parser.parse_args().demo_folder)
    for r in res["sequences"]:
        e = r["epsilon"]
        print(f"{r['sequence']:42s} basic {e['basic']:8.4f}  renyi {e['renyi']:8.4f}  "
              f"hybrid {e['hybrid']:8.4f} ({r['hybrid_route']})  pld {e['pld']:8.4f}")
    print(json.dumps(res["counterexample_shared_delta"], indent=2))
