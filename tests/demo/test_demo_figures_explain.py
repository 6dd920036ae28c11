"""The demo's figures and comparisons explain themselves (issue 29).

* The report says one mechanism *beats* another only when the means differ by more than
  two combined standard errors, else that they are within noise of each other.
* ``sampling_storms.png``: overlapping utility curves stay distinguishable (line style,
  marker, zorder), error bars, labelled map axes and one labelled, shared colour bar.
* ``heatmap_<name>.png``: every panel's colour bar is labelled.
* ``barycenter_mnist.png``: a labelled grey-scale colour bar.

Checks the matplotlib Figure objects built from synthetic arrays (no data sets, no
pixel comparisons).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from privot.demo._report import NOISE_SE, compare_means, comparison_phrase

pytest.importorskip("matplotlib")

# The numbers: mean W1 ± one standard error per mechanism at eps = 1, 2, 4
# (the full demo's table).
TABLE = {"wpm": [(28.79, 0.19), (22.39, 0.15), (10.03, 0.10)],
         "wpm-uniform": [(23.20, 0.26), (17.00, 0.21), (8.15, 0.13)],
         "kpm": [(29.94, 0.31), (28.97, 0.30), (22.00, 0.23)],
         "exp": [(28.89, 0.29), (27.49, 0.27), (24.83, 0.22)],
         "krr": [(29.96, 0.31), (29.03, 0.30), (22.10, 0.23)]}
EPSILONS = (1.0, 2.0, 4.0)
W1 = {f"{name} eps={e:g}": {"mean": m, "se": se}
      for name, cells in TABLE.items() for e, (m, se) in zip(EPSILONS, cells, strict=True)}
WORST = {f"{name} eps={e:g}": w for name, ws in (("wpm", (42.39, 30.13, 15.37)),
                                                 ("wpm-uniform", (44.55, 35.51, 20.47)))
         for e, w in zip(EPSILONS, ws, strict=True)}


# -- the comparison rule -------------------------------------------------------------

def test_within_one_standard_error_is_not_a_win():
    """The issue's case: 28.79 ± 0.19 vs 28.89 ± 0.29 is no evidence either way."""
    assert compare_means(28.79, 0.19, 28.89, 0.29) == 0
    assert compare_means(28.89, 0.29, 28.79, 0.19) == 0
    text = comparison_phrase("WPM", 28.79, 0.19, "exp", 28.89, 0.29)
    assert text == "WPM and exp are within noise of each other (28.79 ± 0.19 vs 28.89 ± 0.29)"
    assert "beats" not in text


def test_the_threshold_is_two_combined_standard_errors():
    se_a, se_b = 0.3, 0.4  # combined 0.5: the threshold is 1.0
    assert NOISE_SE == 2.0
    assert compare_means(10.0, se_a, 11.0 - 1e-9, se_b) == 0  # just inside
    assert compare_means(10.0, se_a, 11.0 + 1e-9, se_b) == 1  # just beyond: lower wins
    assert compare_means(11.0 + 1e-9, se_a, 10.0, se_b) == -1
    # not 2 * (se_a + se_b) = 1.4 nor 2 * max = 0.8
    assert compare_means(10.0, se_a, 11.2, se_b) == 1
    assert compare_means(10.0, se_a, 10.9, se_b) == 0
    # zero standard errors: any difference counts, equality does not
    assert compare_means(1.0, 0.0, 1.0, 0.0) == 0
    assert compare_means(1.0, 0.0, 1.0 + 1e-12, 0.0) == 1


def test_higher_is_better_flips_the_verdict():
    assert compare_means(0.9, 0.01, 0.8, 0.01, lower_is_better=False) == 1
    assert compare_means(0.9, 0.01, 0.8, 0.01) == -1


def test_the_phrase_puts_the_winner_first_with_its_numbers():
    numbers = "(1.00 ± 0.10 vs 3.00 ± 0.10)"
    assert comparison_phrase("A", 1.0, 0.1, "B", 3.0, 0.1) == f"A beats B {numbers}"
    assert comparison_phrase("A", 3.0, 0.1, "B", 1.0, 0.1) == f"B beats A {numbers}"


def test_rule_matches_its_definition_on_the_demo_table():
    cells = [c for cs in TABLE.values() for c in cs]
    for (ma, sa), (mb, sb) in itertools.permutations(cells, 2):
        margin = 2.0 * np.sqrt(sa**2 + sb**2)
        expected = 1 if mb - ma > margin else (-1 if ma - mb > margin else 0)
        assert compare_means(ma, sa, mb, sb) == expected


# -- the sampling section's text -----------------------------------------------------

def test_sampling_text_says_within_noise_not_beats_at_epsilon_one():
    from privot.demo.sampling import read_table, versus

    text = read_table(W1, WORST, EPSILONS)
    assert ("at eps = 1, WPM with m* and the exponential mechanism are within noise of "
            "each other (28.79 ± 0.19 vs 28.89 ± 0.29)") in text
    assert "2 combined standard errors" in text
    # every other comparison of the table is a clear win, and is stated as one
    assert versus("wpm-uniform", ("kpm", "exp", "krr"), W1, EPSILONS) == (
        "WPM with the uniform m beats KPM, the exponential mechanism and k-RR at every "
        "epsilon shown")
    assert "WPM with the uniform m beats WPM with m* at every epsilon shown" in text
    assert "lower worst case at every epsilon" in text


def test_sampling_text_never_claims_a_win_within_noise():
    """Whatever the numbers, each stated win clears the rule, each tie is said."""
    from privot.demo.sampling import PROSE, versus

    gen = np.random.default_rng(0)
    for _ in range(50):
        w1 = {k: {"mean": float(gen.uniform(9.0, 11.0)), "se": float(gen.uniform(0.05, 0.5))}
              for k in W1}
        text = versus("wpm", ("kpm", "exp", "krr"), w1, EPSILONS)
        for e in EPSILONS:
            for other in ("kpm", "exp", "krr"):
                a, b = w1[f"wpm eps={e:g}"], w1[f"{other} eps={e:g}"]
                verdict = compare_means(a["mean"], a["se"], b["mean"], b["se"])
                if verdict != 1:  # an exception, stated with its numbers
                    assert f"at eps = {e:g}, " + comparison_phrase(
                        PROSE["wpm"], a["mean"], a["se"], PROSE[other], b["mean"],
                        b["se"]) in text


# -- sampling_storms.png -------------------------------------------------------------

@pytest.fixture(scope="module")
def sampling_figure():
    from privot.demo.sampling import draw_figure

    gen = np.random.default_rng(1)
    side = 6
    maps = tuple((gen.dirichlet(np.ones(side * side) * s), t)
                 for s, t in ((5.0, "average"), (1.0, "WPM"), (0.1, "k-RR")))
    return draw_figure(EPSILONS, W1, maps, side, title="t"), maps


def _curves(ax):
    """label -> the data line of each error-bar curve."""
    return {c.get_label(): c.lines[0] for c in ax.containers}


def test_overlapping_curves_are_distinguishable(sampling_figure):
    fig, _ = sampling_figure
    ax = fig.axes[0]
    curves = _curves(ax)
    assert set(curves) == {"WPM, optimal m*", "WPM, uniform m", "KPM", "exponential",
                           "k-RR"}
    kpm, krr = curves["KPM"], curves["k-RR"]
    # the two nearly equal curves differ in style and marker, k-RR is drawn above KPM,
    # and KPM (underneath) is translucent and wider, so k-RR cannot hide it
    assert kpm.get_linestyle() != krr.get_linestyle()
    assert kpm.get_marker() != krr.get_marker()
    assert krr.get_zorder() > kpm.get_zorder()
    assert kpm.get_alpha() is not None and kpm.get_alpha() < 1.0
    assert kpm.get_linewidth() > krr.get_linewidth()
    # no two curves share both line style and marker
    styles = [(c.get_linestyle(), c.get_marker()) for c in curves.values()]
    assert len(set(styles)) == len(styles)
    # error bars of ± one standard error, said in the title
    for label, container in zip(curves, ax.containers, strict=True):
        assert container.has_yerr, label
    assert "standard error" in ax.get_title()
    assert ax.get_xlabel() and ax.get_ylabel()


def test_maps_have_axis_labels_and_one_shared_labelled_colour_bar(sampling_figure):
    fig, maps = sampling_figure
    map_axes = [a for a in fig.axes if a.images]
    assert len(map_axes) == len(maps)
    for ax in map_axes:
        assert ax.get_xlabel() == "longitude (degrees)"
    assert map_axes[0].get_ylabel() == "latitude (degrees)"
    bars = {id(ax.images[0].colorbar) for ax in map_axes if ax.images[0].colorbar}
    assert len(bars) == 1  # one colour bar for the three maps...
    assert len(fig.axes) == 1 + len(maps) + 1  # utility, maps, the bar
    norms = [ax.images[0].norm for ax in map_axes]
    assert all(n is norms[0] for n in norms)  # ...on one shared colour scale
    top = max(float(np.max(img)) for img, _ in maps)
    assert norms[0].vmin == 0.0 and norms[0].vmax == pytest.approx(top)
    bar = map_axes[-1].images[0].colorbar
    assert "mass per cell" in bar.ax.get_ylabel() and "shared" in bar.ax.get_ylabel()


# -- heatmap_<name>.png --------------------------------------------------------------

def test_every_heatmap_panel_has_a_labelled_colour_bar():
    from privot.demo.heatmaps import draw_panels
    from privot.heatmaps import Grid

    grid = Grid((0.0, 1.0, 0.0, 1.0), 8)
    gen = np.random.default_rng(2)
    # maxima from 1 down to 3.5e-5 (the Laplace baseline's scale on Gowalla, whose
    # colour bar drew a "1e-5" multiplier over the panel's title)
    panels = [(f"panel {i}", gen.random((8, 8)) * scale)
              for i, scale in enumerate((1.0, 1e-2, 1e-3, 3.5e-5))]
    fig = draw_panels(panels, grid, title="t", sigma=1.0)
    fig.draw_without_rendering()  # tick labels and offset texts are set at draw time
    maps = [a for a in fig.axes if a.images and a.get_title().startswith("panel")]
    assert len(maps) == 4
    for ax in maps:
        (cax,) = ax.child_axes  # the colour bar, the map's height
        assert cax.get_ylabel() == "mass per cell, sqrt scale"
        # plain tick labels: no "1e-5" multiplier drawn over the panel's title
        assert cax.yaxis.get_offset_text().get_text() == ""
        assert any(t.get_text() for t in cax.get_yticklabels())


# -- barycenter_mnist.png ------------------------------------------------------------

def test_mnist_atoms_have_a_labelled_grey_scale():
    from privot.demo.barycenters import draw_atoms

    gen = np.random.default_rng(3)
    m = 3
    rows = tuple((f"row {r}", gen.random((m, 784))) for r in range(2))
    fig = draw_atoms(rows, m, title="t")
    images = [a for a in fig.axes if a.images]
    assert len(images) == 2 * m
    bars = {id(a.images[0].colorbar) for a in images if a.images[0].colorbar}
    assert len(bars) == 1 and len(fig.axes) == 2 * m + 1  # one bar for every atom
    bar = next(a.images[0].colorbar for a in images if a.images[0].colorbar)
    assert "grey level" in bar.ax.get_ylabel() and "pixel value" in bar.ax.get_ylabel()
    assert (bar.vmin, bar.vmax) == (0.0, 1.0)
    assert bar.cmap.name == "gray_r"
    assert all(a.images[0].get_clim() == (0.0, 1.0) for a in images)
