"""The budget ledger's figure reads well with one, a few or many releases (issue 29).

Inspects the matplotlib Figure (axis limits, ticks, tick labels, axis labels), never
pixels: the release axis runs from 0.5 to n + 0.5 with integer ticks (not 0.945 to 1.05
around one release); the time axis is the time since the first release in one unit
chosen from the span (seconds, minutes, hours, days), padded a little (never years
around one instant), its ticks plain numbers of that unit (never "30" seconds beside
"04:10"), the unit named in its label.
"""

from __future__ import annotations

import re
import time

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from privot.privacy.events import GaussianEvent, PureEvent  # noqa: E402
from privot.privacy.ledger import Ledger  # noqa: E402
from privot.privacy.ledger_plot import (  # noqa: E402
    TIME_PAD_MIN_UNITS,
    time_axis,
    time_unit,
)

T0 = 1_764_245_000.0  # a fixed instant (2025-11-27)
DAY = 86_400.0


def _ledger(tmp_path, offsets, monkeypatch, *, name="axes", filt=None, pure=True):
    """A ledger whose releases were charged ``offsets`` seconds after ``T0`` (Laplace
    and Gaussian in turn, or Gaussian only with ``pure=False``)."""
    kw = {} if filt is None else {"filter": filt}
    ledger = Ledger.create(tmp_path / f"{name}.ledger", epsilon=3.0, delta=1e-6, name=name,
                           **kw)
    for i, off in enumerate(offsets):
        event = PureEvent(0.2) if pure and i % 2 == 0 else GaussianEvent(20.0, 1.0, 1e-8)
        with monkeypatch.context() as m:
            m.setattr(time, "time", lambda off=off: T0 + off)
            ledger.charge(event, capability="heatmap", mechanism="laplace")
    return ledger


def _panels(fig):
    by_order, by_time = fig.axes
    return by_order, by_time


def _tick_labels(ax):
    ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
    return ticks, ax.xaxis.get_major_formatter().format_ticks(ticks)


def _check_time_ticks(ax):
    """Plain numbers of one unit, none before the first release, no clock or date."""
    ticks, labels = _tick_labels(ax)
    assert ticks and all(t >= 0 for t in ticks)
    for label in labels:
        assert re.fullmatch(r"\d+(\.\d+)?", label), labels
    return ticks, labels


def test_one_release_axes(tmp_path, monkeypatch):
    ledger = _ledger(tmp_path, [0.0], monkeypatch)
    fig = ledger.plot(tmp_path / "one.png")
    by_order, by_time = _panels(fig)
    assert by_order.get_xlim() == pytest.approx((0.5, 1.5))
    ticks, labels = _tick_labels(by_order)
    assert list(ticks) == [1] and labels == ["1"]
    # minutes around the one instant, not 2025 to 2029
    lo, hi = by_time.get_xlim()
    assert (lo, hi) == pytest.approx((-TIME_PAD_MIN_UNITS, TIME_PAD_MIN_UNITS))
    assert "(minutes)" in by_time.get_xlabel()
    assert "first at " + time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(T0)) \
        in by_time.get_xlabel()
    _check_time_ticks(by_time)
    # the release is drawn inside both panels
    for ax, x in ((by_order, 1.0), (by_time, 0.0)):
        xdata = np.asarray(ax.lines[0].get_xdata(), dtype=float)
        assert xdata.tolist() == [x]


def test_three_releases_minutes_apart(tmp_path, monkeypatch):
    ledger = _ledger(tmp_path, [0.0, 240.0, 600.0], monkeypatch)
    by_order, by_time = _panels(ledger.plot())
    assert by_order.get_xlim() == pytest.approx((0.5, 3.5))
    ticks, labels = _tick_labels(by_order)
    assert list(ticks) == [1, 2, 3] and labels == ["1", "2", "3"]
    assert "(minutes)" in by_time.get_xlabel()
    np.testing.assert_allclose(by_time.lines[0].get_xdata(), [0.0, 4.0, 10.0])
    lo, hi = by_time.get_xlim()
    assert -1.0 < lo < 0.0 and 10.0 < hi < 11.0  # a small pad, in minutes
    ticks, _ = _check_time_ticks(by_time)
    assert min(ticks) == 0 and max(ticks) == 10


def test_releases_days_apart(tmp_path, monkeypatch):
    ledger = _ledger(tmp_path, [0.0, 2.3 * DAY, 5.1 * DAY, 9.0 * DAY], monkeypatch)
    by_order, by_time = _panels(ledger.plot())
    assert by_order.get_xlim() == pytest.approx((0.5, 4.5))
    assert "(days)" in by_time.get_xlabel()
    np.testing.assert_allclose(by_time.lines[0].get_xdata(), [0.0, 2.3, 5.1, 9.0])
    lo, hi = by_time.get_xlim()
    assert -1.0 < lo < 0.0 and 9.0 < hi < 10.0
    _check_time_ticks(by_time)


def test_releases_seconds_apart_use_one_unit(tmp_path, monkeypatch):
    """The demo's case: releases seconds apart across a minute boundary read as seconds,
    not as "30" beside "12:04"."""
    ledger = _ledger(tmp_path, [0.0, 12.0, 30.0, 47.0, 71.0], monkeypatch)
    _, by_time = _panels(ledger.plot())
    assert "(seconds)" in by_time.get_xlabel()
    ticks, _ = _check_time_ticks(by_time)
    assert max(ticks) >= 60  # the span is in seconds, past the minute


def test_many_releases_integer_ticks(tmp_path, monkeypatch):
    ledger = _ledger(tmp_path, [37.0 * i for i in range(25)], monkeypatch, filt="rdp",
                     pure=False)
    by_order, by_time = _panels(ledger.plot())
    assert by_order.get_xlim() == pytest.approx((0.5, 25.5))
    ticks, labels = _tick_labels(by_order)
    assert all(float(t).is_integer() for t in ticks)
    assert all(re.fullmatch(r"\d+", s) for s in labels)
    assert "(minutes)" in by_time.get_xlabel()
    _check_time_ticks(by_time)


def test_empty_ledger_and_legend_outside_the_panels(tmp_path, monkeypatch):
    empty = Ledger.create(tmp_path / "empty.ledger", epsilon=1.0, delta=1e-6)
    fig = empty.plot(tmp_path / "empty.png")
    by_order, by_time = _panels(fig)
    assert by_order.get_xlim() == pytest.approx((0.5, 1.5))
    assert "no release yet" in by_time.get_xlabel()
    # the legend is the figure's, below the panels: it hides no release
    fig = _ledger(tmp_path, [0.0, 60.0], monkeypatch, name="legend").plot()
    assert len(fig.legends) == 1
    assert all(ax.get_legend() is None for ax in fig.axes)
    texts = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any("enforced" in t for t in texts) and any("total eps=3" in t for t in texts)


@pytest.mark.parametrize(("span", "unit"), [
    (0.0, "minutes"), (5.0, "seconds"), (119.0, "seconds"), (120.0, "minutes"),
    (7_199.0, "minutes"), (7_200.0, "hours"), (47 * 3600.0, "hours"), (2 * DAY, "days"),
    (400 * DAY, "days")])
def test_time_unit(span, unit):
    assert time_unit(span)[0] == unit


def test_time_axis_pad_is_small():
    ax = time_axis([T0, T0 + 100 * DAY])
    assert ax["unit"] == "days"
    lo, hi = ax["limits"]
    assert lo == pytest.approx(-5.0) and hi == pytest.approx(105.0)  # 5% of the span
    assert ax["x"].tolist() == [0.0, 100.0]
