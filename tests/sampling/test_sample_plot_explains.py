"""``sample.png`` explains itself (issue 29): a constant base measure is drawn as constant
(colour limits from 0 to its value, a text saying so), every colour bar is labelled, and
the axes carry the data's column names (``privot sample --columns``) or say they are
grid coordinates. Checks the matplotlib Figure, never pixels."""

from __future__ import annotations

import numpy as np
import pytest

from privot.cli.main import main
from privot.errors import InvalidParameterError
from privot.grid import Grid
from privot.sampling import make_mechanism, sample_population, user_cell_counts
from privot.sampling.plot import UNITS, constant_value, plot_population_sample
from privot.sampling.result import PopulationSample

pd = pytest.importorskip("pandas")
pytest.importorskip("matplotlib")

GRID = Grid((0.0, 1.0, 0.0, 1.0), 5, aspect="stretch", dyadic=False)


@pytest.fixture(scope="module")
def points_csv(tmp_path_factory):
    rng = np.random.default_rng(1)
    n = 300
    frame = pd.DataFrame({"uid": rng.integers(0, 60, n),
                          "lon": np.clip(rng.normal(0.3, 0.1, n), 0, 0.999),
                          "lat": np.clip(rng.normal(0.6, 0.1, n), 0, 0.999)})
    path = tmp_path_factory.mktemp("in") / "points.csv"
    frame.to_csv(path, index=False)
    return path


@pytest.fixture(scope="module")
def sample(points_csv):
    """A release with the CLI's default base measure (best-uniform: constant)."""
    counts = user_cell_counts(points_csv, grid=GRID, user_column="uid", x_column="lon",
                              y_column="lat")
    mech = make_mechanism("wpm", points=GRID.cell_centre_points(), epsilon=2.0,
                          base_measure="best-uniform")
    return sample_population(counts, mech, rng=np.random.default_rng(4))


def _colorbar(ax):
    (im,) = ax.images
    assert im.colorbar is not None
    return im.colorbar


def _texts(ax):
    return [t.get_text() for t in ax.texts]


def test_constant_value_detects_only_numerically_constant_arrays():
    assert constant_value(np.full(9, 0.0031)) == pytest.approx(0.0031)
    assert constant_value(np.full(9, 0.0031) * (1 + 1e-13 * np.arange(9))) is not None
    assert constant_value(np.linspace(0.0026, 0.0031, 9)) is None
    assert constant_value(np.zeros(4)) == 0.0
    assert constant_value(np.array([1.0, np.nan])) is None


def test_constant_base_measure_panel_is_shown_as_constant(sample):
    m = np.asarray(sample.base_measure)
    assert np.ptp(m) == 0.0  # best-uniform: (s / k) * ones
    fig = sample.plot()
    base, samples, estimate = fig.axes[:3]
    bar = _colorbar(base)
    # colour limits from 0 to the value: not a narrow range around it suggesting variation
    assert bar.mappable.get_clim() == pytest.approx((0.0, m[0]))
    assert bar.vmin == 0.0 and bar.vmax == pytest.approx(m[0])
    (text,) = _texts(base)
    assert text.startswith("uniform: m_j = ") and "in every cell" in text
    assert f"{m[0]:.4g}" in text
    # the varying panels keep their data limits and have no such text
    counts = sample.counts_per_output()
    assert _colorbar(samples).mappable.get_clim() == pytest.approx((counts.min(),
                                                                    counts.max()))
    assert _texts(samples) == [] and _texts(estimate) == []


def test_varying_base_measure_keeps_its_own_colour_limits():
    m = np.linspace(1.0, 2.0, GRID.n_cells)
    fig = plot_population_sample(GRID, base_measure=m, which="base_measure")
    (ax,) = [a for a in fig.axes if a.images]
    assert _colorbar(ax).mappable.get_clim() == pytest.approx((1.0, 2.0))
    assert _texts(ax) == []


def test_a_constant_non_base_panel_says_constant():
    fig = plot_population_sample(GRID, counts=np.zeros(GRID.n_cells), which="samples")
    (ax,) = [a for a in fig.axes if a.images]
    assert _colorbar(ax).mappable.get_clim() == (0.0, 1.0)  # zero: a unit scale from 0
    assert _texts(ax) == ["constant: 0\nin every cell"]


def test_every_colour_bar_is_labelled(sample):
    fig = sample.plot()
    maps = [a for a in fig.axes if a.images]
    assert len(maps) == 3 and len(fig.axes) == 6  # 3 maps, 3 colour bars
    assert [_colorbar(a).ax.get_ylabel() for a in maps] == [
        UNITS["base_measure"], UNITS["samples"], UNITS["estimate"]]
    assert all(label for label in UNITS.values())


def test_axes_say_grid_coordinates_by_default_and_column_names_when_given(sample):
    fig = sample.plot()
    base = fig.axes[0]
    assert base.get_xlabel() == "x (grid coordinates)"
    assert base.get_ylabel() == "y (grid coordinates)"
    fig = sample.plot(columns=("lon", "lat"))
    maps = [a for a in fig.axes if a.images]
    assert [a.get_xlabel() for a in maps] == ["lon"] * 3
    assert maps[0].get_ylabel() == "lat"
    with pytest.raises(InvalidParameterError, match="columns"):
        sample.plot(columns=("lon",))
    with pytest.raises(InvalidParameterError, match="columns"):
        sample.plot(columns="lon")


def _record_plot_columns(monkeypatch):
    seen = []
    original = PopulationSample.plot

    def plot(self, *args, **kwargs):
        seen.append(kwargs.get("columns"))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(PopulationSample, "plot", plot)
    return seen


def test_save_passes_the_column_names_to_the_figure(sample, tmp_path, monkeypatch):
    seen = _record_plot_columns(monkeypatch)
    sample.save(tmp_path / "a", curator=False, columns=("lon", "lat"))
    sample.save(tmp_path / "b", curator=False)
    assert seen == [("lon", "lat"), None]
    # the files other than the picture do not depend on the labels
    for name in ("samples.csv", "base_measure.csv", "estimate.csv", "release.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_cli_labels_the_axes_with_its_columns(points_csv, tmp_path, monkeypatch):
    seen = _record_plot_columns(monkeypatch)
    out = tmp_path / "out"
    assert main(["sample", str(points_csv), "--bounds", "0", "1", "0", "1", "--epsilon",
                 "2", "--resolution", "5", "--user-column", "uid", "--columns", "lon,lat",
                 "--seed", "3", "-o", str(out), "--quiet"]) == 0
    assert [list(c) for c in seen] == [["lon", "lat"]]
    assert (out / "sample.png").is_file()
