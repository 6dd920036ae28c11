"""The figure of a budget ledger: spending over the releases and over time.

Kept apart from :mod:`privot.privacy.ledger` so that matplotlib is imported only when a
figure is asked for.

Axes (issue 29): the left panel numbers the releases from 1 to n with integer ticks and
half a release of room either side (one release is not drawn between 0.945 and 1.05);
the right panel is the time elapsed since the first release in **one** unit chosen from
the span of the releases (seconds, minutes, hours or days, :func:`time_unit`), named in
the axis label with the first release's local date and time, and padded by a small
fraction of that span (never years around a single instant, never "30" seconds beside
"04:10" clock ticks).
"""

from __future__ import annotations

import datetime as dt
import os
from typing import Any

import numpy as np

#: Releases at which the PLD figure is composed for the plot (each is a composition).
PLD_POINTS = 8

#: Units of the time axis, (name, seconds), and the span below which each is used: a
#: span under 2 minutes is drawn in seconds, under 2 hours in minutes, under 2 days in
#: hours, anything longer in days.
TIME_UNITS = (("seconds", 1.0, 120.0), ("minutes", 60.0, 7_200.0),
              ("hours", 3_600.0, 172_800.0), ("days", 86_400.0, float("inf")))

#: Pad of the time axis either side of the releases, as a fraction of their span ...
TIME_PAD_FRACTION = 0.05
#: ... and at least this many of the axis unit (one release, or releases in one instant).
TIME_PAD_MIN_UNITS = 0.5


def time_unit(span_seconds: float) -> tuple[str, float]:
    """The unit the time axis uses for releases ``span_seconds`` apart (first to last):
    ``(name, seconds per unit)``, from :data:`TIME_UNITS`. A single release (span 0)
    is drawn in minutes, so that the axis reads as a moment, not years around it."""
    if span_seconds <= 0:
        return "minutes", 60.0
    for name, seconds, below in TIME_UNITS:
        if span_seconds < below:
            return name, seconds
    raise AssertionError("unreachable: the last unit has no upper bound")


def time_axis(times: Any) -> dict[str, Any]:
    """Where the releases at ``times`` (POSIX seconds) go on the time axis.

    Returns
    -------
    dict
        ``x`` (elapsed time since the first release, in ``unit``), ``unit``, ``limits``
        (the axis limits: the releases' span padded by :data:`TIME_PAD_FRACTION` of it,
        at least :data:`TIME_PAD_MIN_UNITS` of the unit) and ``label`` (the axis label,
        naming the unit and the first release's local date and time).
    """
    t = np.asarray(times, dtype=float).reshape(-1)
    if t.size == 0:
        return {"x": t, "unit": "minutes", "limits": (-TIME_PAD_MIN_UNITS, 1.0),
                "label": "time since the first release (minutes; no release yet)"}
    span = float(t.max() - t.min())
    unit, seconds = time_unit(span)
    x = (t - t.min()) / seconds
    pad = max(TIME_PAD_FRACTION * span / seconds, TIME_PAD_MIN_UNITS)
    first = dt.datetime.fromtimestamp(float(t.min())).astimezone()
    when = first.strftime("%Y-%m-%d %H:%M:%S %Z").strip()
    return {"x": x, "unit": unit, "limits": (-pad, float(x.max()) + pad),
            "label": f"time since the first release ({unit}); first at {when}"}


def plot_spending(ledger: Any, path: str | os.PathLike[str] | None = None):
    """Cumulative epsilon (enforced filter and basic sum) against the total.

    Left: after each release, in charging order (releases 1 to n, integer ticks).
    Right: the same against the time elapsed since the first release, in one unit
    chosen from the span of the releases (:func:`time_axis`), so that releases seconds,
    minutes or months apart, and a single release, all stay readable.

    Parameters
    ----------
    ledger : privot.privacy.ledger.Ledger
    path : path, optional
        Where to write the figure (format from the suffix, e.g. ``.png``).

    Returns
    -------
    matplotlib.figure.Figure
    """
    from privot._optional import require

    mfigure = require("matplotlib.figure", "plot")
    mticker = require("matplotlib.ticker", "plot")
    curve = ledger.spending_curve(pld_points=PLD_POINTS)
    eps_t, dlt_t = ledger.total
    fig = mfigure.Figure(figsize=(11, 4.6), layout="constrained")
    by_order, by_time = fig.subplots(1, 2, sharey=True)
    n = curve["basic"].size
    when = time_axis(curve["time"])
    xs = (np.arange(1, n + 1, dtype=float), when["x"])
    top = max([eps_t] + ([float(np.nanmax(curve["filter"])), float(curve["basic"].max())]
                         if n else []))
    for ax, x in zip((by_order, by_time), xs, strict=True):
        if n:
            # a marker at each release, so that the last jump (and a lone release) shows
            ax.plot(x, curve["basic"], drawstyle="steps-post", marker=".", color="0.5",
                    linestyle="--", label="basic composition (sum of eps)")
            if ledger.filter != "basic":
                name = {"hybrid": "hybrid filter (basic route or Renyi filter)",
                        "rdp": "Renyi filter"}[ledger.filter]
                ax.plot(x, curve["filter"], drawstyle="steps-post", marker=".",
                        color="C0", label=f"{name} at delta={dlt_t:g} (enforced)")
            if "renyi" in curve:
                ax.plot(x, curve["renyi"], drawstyle="steps-post", color="C1",
                        linestyle=":", label="Renyi filter alone (comparison)")
            if "pld" in curve:
                ok = np.isfinite(curve["pld"])
                # hollow, so that the filter's marker under it stays visible
                ax.plot(x[ok], curve["pld"][ok], "D", color="C2", markerfacecolor="none",
                        markersize=6, label="PLD (if the plan was fixed in advance)")
        else:
            ax.text(0.5, 0.5, "no release yet", transform=ax.transAxes, ha="center",
                    va="center", color="0.4")
        ax.axhline(eps_t, color="C3", label=f"total eps={eps_t:g}")
        ax.set_ylim(0, top * 1.1)
        ax.grid(alpha=0.3)
    # releases 1..n, half a release of room either side, integer ticks only
    by_order.set_xlim(0.5, max(n, 1) + 0.5)
    by_order.xaxis.set_major_locator(mticker.MaxNLocator(integer=True, min_n_ticks=1))
    by_order.xaxis.set_major_formatter(mticker.StrMethodFormatter("{x:.0f}"))
    by_order.set_xlabel("release (charging order)")
    by_order.set_ylabel("epsilon spent")
    # elapsed time in one unit, plain numbers (no offset, no clock/date mix)
    by_time.set_xlim(*when["limits"])
    by_time.xaxis.set_major_locator(_elapsed_locator(mticker))
    by_time.xaxis.set_major_formatter(mticker.FuncFormatter(_plain))
    by_time.set_xlabel(when["label"])
    handles, labels = by_order.get_legend_handles_labels()
    # below the panels, where it hides no step (a lone release sits under the total)
    fig.legend(handles, labels, loc="outside lower center", ncols=3, fontsize=8)
    fig.suptitle(f"Privacy budget of {ledger.name!r} ({ledger.unit}-level, "
                 f"{ledger.relation}): {n} release(s)")
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig


def _elapsed_locator(mticker: Any) -> Any:
    """Ticks at round numbers of the unit, none before the first release (the pad on
    the left is room, not a time before the ledger's first charge)."""

    class _Elapsed(mticker.MaxNLocator):
        def tick_values(self, vmin: float, vmax: float) -> np.ndarray:
            ticks = super().tick_values(vmin, vmax)
            return ticks[ticks >= -1e-9 * max(abs(vmin), abs(vmax), 1.0)]

    return _Elapsed(nbins=8, steps=[1, 2, 2.5, 5, 10])


def _plain(value: float, _pos: Any = None) -> str:
    """A tick of the time axis: the number in its unit, without trailing zeros."""
    text = f"{value:.6g}"
    return "0" if text in ("-0", "0") else text
