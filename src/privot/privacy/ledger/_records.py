"""What a ledger hands back: its rows, the preview of a charge, and its status.

Plain frozen records (no SQL, no arithmetic beyond ``charged``), shared by the
storage, the planning and the report of :mod:`privot.privacy.ledger`.

Privacy
-------
No noise; every field is public bookkeeping of the ledger.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from privot.privacy.types import PrivacyEvent

__all__ = ["BudgetStatus", "ChargePreview", "LEDGER_ENV", "LedgerRelease", "STATUSES"]

#: Environment variable naming the ledger every releasing command charges.
LEDGER_ENV = "PRIVOT_LEDGER"
STATUSES = ("pending", "released", "failed")


@dataclass(frozen=True)
class LedgerRelease:
    """One row of the ledger (see :meth:`Ledger.releases`)."""

    id: int
    created: float
    finished: float | None
    status: str
    capability: str
    mechanism: str
    unit: str
    relation: str
    conversion: int
    epsilon: float
    delta: float
    event: PrivacyEvent
    params: Mapping[str, Any]
    output: str | None
    pid: int
    host: str
    #: On a hybrid ledger, how the row is counted (:data:`VIEWS`): ``"basic"`` (its
    #: (eps, delta) pair in the basic route and its Renyi curve in the Renyi filter) or
    #: ``"renyi"`` (its Renyi curve only); None on rdp and basic ledgers.
    view: str | None = None
    #: Why, with what each route read just after the charge.
    view_reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly dict (the event as its dict)."""
        out = {k: v for k, v in self.__dict__.items() if k not in ("event", "params")}
        out["event"] = self.event.to_dict()
        out["params"] = dict(self.params)
        return out


@dataclass(frozen=True)
class ChargePreview:
    """What a charge would do, computed and not recorded (:meth:`Ledger.preview`,
    :meth:`Ledger.plan`).

    Attributes
    ----------
    accepted : bool
        Whether the ledger would accept it now.
    reason : str or None
        Why it would be refused (None when accepted).
    event : PrivacyEvent
        The event as it would be recorded (restated as a group of ``conversion``).
    conversion : int
        The group factor of the release's unit and relation on this ledger.
    view : str or None
        On a hybrid ledger, the route it would join: ``"basic"`` (charged its pair) or
        ``"renyi"``; None on the other filters.
    spent_before, spent_after : float
        The enforced epsilon now, and after the charge (what it would reach when refused).
    remaining_after : float
        ``max(0, total - spent_after)`` when accepted, else what is left now.
    """

    accepted: bool
    reason: str | None
    event: PrivacyEvent
    conversion: int
    view: str | None
    spent_before: float
    spent_after: float
    remaining_after: float

    @property
    def charged(self) -> float:
        """The enforced epsilon this charge adds: ``spent_after - spent_before``."""
        return self.spent_after - self.spent_before


@dataclass(frozen=True)
class BudgetStatus:
    """What a ledger has spent and has left.

    Attributes
    ----------
    total : (epsilon, delta)
    spent_epsilon : float
        The enforced filter's epsilon at the ledger's delta (``inf`` past it).
    remaining_epsilon : float
        ``max(0, total epsilon - spent_epsilon)``.
    basic : (epsilon, delta)
        Sums over the releases.
    pld_epsilon : float or None
        Tight composition at the ledger's delta (fixed plan of releases); None when not
        computed or when delta is 0 (then it is the basic sum).
    best_order : float or None
        The Renyi order giving ``spent_epsilon`` (``inf``: the pure-DP sum).
    approx_delta : (used, reserve)
        Delta charged to the reserve (releases known only by (eps, delta), and on a
        hybrid ledger every release charged by its (eps, delta) pair), and the reserve.
    releases : int
    by_status : dict
    renyi_epsilon : float or None
        On a hybrid ledger, for comparison: the Renyi filter alone (``filter="rdp"``) over
        the same releases, each by its Renyi curve, with all of delta converting the sums
        unless a release needs the reserve; None elsewhere or when not computed.
    by_view : dict
        On a hybrid ledger, how many rows are in the basic route (``"basic"``: their whole
        delta in the reserve) and how many only by their Renyi curve (``"renyi"``).
    route : str or None
        What gives ``spent_epsilon``: ``"basic"`` (the sum of epsilons: a basic ledger, or
        a hybrid ledger's basic route), ``"renyi"`` (the Renyi filter) or ``"none"``.
    """

    total: tuple[float, float]
    filter: str
    spent_epsilon: float
    remaining_epsilon: float
    basic: tuple[float, float]
    pld_epsilon: float | None
    best_order: float | None
    approx_delta: tuple[float, float]
    releases: int
    by_status: dict[str, int] = field(default_factory=dict)
    renyi_epsilon: float | None = None
    by_view: dict[str, int] = field(default_factory=dict)
    route: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly dict (infinities as strings)."""
        def j(v: Any) -> Any:
            if isinstance(v, float) and not math.isfinite(v):
                return str(v)
            if isinstance(v, tuple):
                return [j(x) for x in v]
            return v
        return {k: j(v) for k, v in self.__dict__.items()}
