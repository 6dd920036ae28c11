"""The figure of a budget ledger: spending over the releases against the total.

Kept apart from :mod:`privot.privacy.ledger` so that matplotlib is imported only when a
figure is asked for.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np


def plot_spending(ledger: Any, path: str | os.PathLike[str] | None = None):
    """Cumulative epsilon after each release (enforced filter and basic sum) and the total.

    Parameters
    ----------
    ledger : privot.privacy.ledger.Ledger
    path : path, optional
        Where to write the figure (PNG, by the suffix).

    Returns
    -------
    matplotlib.figure.Figure
    """
    from privot._optional import require

    mfigure = require("matplotlib.figure", "plot")
    curve = ledger.spending_curve()
    eps_t, dlt_t = ledger.total
    fig = mfigure.Figure(figsize=(7, 4), layout="constrained")
    ax = fig.add_subplot()
    x = np.arange(1, curve["basic"].size + 1)
    if x.size:
        ax.step(x, curve["basic"], where="post", label="basic composition (sum of eps)",
                color="0.5", linestyle="--")
        if ledger.filter != "basic":
            ax.step(x, curve["filter"], where="post", color="C0",
                    label=f"Renyi filter at delta={dlt_t:g} (enforced)")
    ax.axhline(eps_t, color="C3", label=f"total eps={eps_t:g}")
    ax.set_xlabel("release (charging order)")
    ax.set_ylabel("epsilon spent")
    ax.set_title(f"Privacy budget of {ledger.name!r} ({ledger.unit}-level, {ledger.relation})")
    ax.set_ylim(0, max(eps_t, float(curve["filter"].max()) if x.size and ledger.filter != "basic"
                       else 0.0, float(curve["basic"].max()) if x.size else 0.0) * 1.1)
    ax.legend(loc="upper left", fontsize=8)
    ax.grid(alpha=0.3)
    if path is not None:
        fig.savefig(path, dpi=120)
    return fig
