"""The figure of a budget ledger: spending over the releases and over time.

Kept apart from :mod:`privot.privacy.ledger` so that matplotlib is imported only when a
figure is asked for.
"""

from __future__ import annotations

import datetime as dt
import os
from typing import Any

import numpy as np

#: Releases at which the PLD figure is composed for the plot (each is a composition).
PLD_POINTS = 8


def plot_spending(ledger: Any, path: str | os.PathLike[str] | None = None):
    """Cumulative epsilon (enforced filter and basic sum) against the total.

    Left: after each release, in charging order. Right: the same against the time of
    each charge (releases minutes apart and months apart both stay readable).

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
    curve = ledger.spending_curve(pld_points=PLD_POINTS)
    eps_t, dlt_t = ledger.total
    fig = mfigure.Figure(figsize=(11, 4), layout="constrained")
    by_order, by_time = fig.subplots(1, 2, sharey=True)
    n = curve["basic"].size
    xs = (np.arange(1, n + 1),
          [dt.datetime.fromtimestamp(t) for t in curve["time"]])
    top = max([eps_t] + ([float(np.nanmax(curve["filter"])), float(curve["basic"].max())]
                         if n else []))
    for ax, x in zip((by_order, by_time), xs, strict=True):
        if n:
            # a marker at each release, so that the last jump shows too
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
                ax.plot(np.asarray(x, dtype=object)[ok], curve["pld"][ok], "D", color="C2",
                        markersize=5, label="PLD (if the plan was fixed in advance)")
        ax.axhline(eps_t, color="C3", label=f"total eps={eps_t:g}")
        ax.set_ylim(0, top * 1.1)
        ax.grid(alpha=0.3)
    by_order.xaxis.set_major_locator(require("matplotlib.ticker", "plot")
                                     .MaxNLocator(integer=True))
    by_order.set_xlabel("release (charging order)")
    by_order.set_ylabel("epsilon spent")
    by_order.legend(loc="upper left", fontsize=8)
    by_time.set_xlabel("time of the charge")
    mdates = require("matplotlib.dates", "plot")
    locator = mdates.AutoDateLocator()
    by_time.xaxis.set_major_locator(locator)
    by_time.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
    fig.suptitle(f"Privacy budget of {ledger.name!r} ({ledger.unit}-level, "
                 f"{ledger.relation}): {n} release(s)")
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig
