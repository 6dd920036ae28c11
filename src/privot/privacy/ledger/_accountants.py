"""The accountants a ledger hands out: one charge per ``spend``, or one whole release.

:class:`LedgerAccountant` (``Ledger.accountant``, ``PrivacyAccountant.open``) is the
:class:`~privot.privacy.types.Spender` of a ledger file: each ``spend`` is one atomic
charge. :class:`ReleaseAccountant` is the in-memory accountant ``Ledger.release`` gives
a release whose whole cost was charged up front: it refuses, before its noise, any
piece that would take what ran past that charge.

Privacy
-------
No noise. Both refuse a charge before anything is recorded and before the piece's
noise is drawn (every privot API charges before drawing).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from privot.errors import BudgetExceededError, InvalidParameterError
from privot.privacy._scopes import ScopedAccountant
from privot.privacy.events import ComposedEvent, event_for_cost
from privot.privacy.ledger._filters import FilterRule, no_larger
from privot.privacy.ledger._records import LedgerRelease
from privot.privacy.ledger._relations import relation_value
from privot.privacy.types import Neighbouring, PrivacyCost, PrivacyEvent

__all__ = ["LedgerAccountant", "ReleaseAccountant"]


class ReleaseAccountant(ScopedAccountant):
    """The in-memory accountant of one ``Ledger.release``: besides its basic total,
    it refuses, before the piece's noise, any piece after which what ran would exceed
    the charged event in any description (so the row can always record what ran).

    ``rule`` is the ledger's filter rule (for the Renyi records), ``hold`` the charged
    event restated for the ledger (a group of ``conversion``).
    """

    def __init__(self, rule: FilterRule, hold: PrivacyEvent, conversion: int,
                 epsilon: float, delta: float, *, name: str) -> None:
        super().__init__(epsilon, delta, name=name)
        self._rule = rule
        self._hold = hold
        self._hold_rec = rule.rdp_record(hold)
        self._conversion = conversion

    def spend(self, cost: PrivacyCost, *, mechanism: str,
              relation: Neighbouring = Neighbouring.ADD_REMOVE,
              params: Mapping[str, Any] | None = None) -> Any:
        if isinstance(cost, PrivacyCost):
            pieces = [event_for_cost(e.cost, e.mechanism) for e in self.ledger]
            ran = ComposedEvent((*pieces, event_for_cost(cost, mechanism))).grouped(
                self._conversion)
            rec = self._rule.rdp_record(ran)
            e, d = ran.basic()
            h_e, h_d = self._hold.basic()
            if not no_larger(e, d, ran.approx_delta(), rec, h_e, h_d,
                              self._hold.approx_delta(), self._hold_rec):
                raise BudgetExceededError(
                    f"release {self.name!r} was charged {self._hold.describe()} but its "
                    f"pieces would run {ran.describe()}, more in some description (basic "
                    "pair, a Renyi order or the approx delta); refused before this piece's "
                    "noise")
        return super().spend(cost, mechanism=mechanism, relation=relation, params=params)


class LedgerAccountant:
    """The :class:`~privot.privacy.types.Spender` of a ledger: every ``spend`` is one
    atomic charge of the file, so any privot API call can charge it.

    A release made of several charges (one per level) is refused up front when the
    whole does not fit (``can_spend``), but another process may charge in between: for
    an all-or-nothing release use :meth:`Ledger.release`.
    """

    def __init__(self, ledger: Any, *, capability: str, unit: str | None,
                 relation: object, convert: bool, output: str | None,
                 pending: bool = False) -> None:
        self._ledger = ledger
        self._pending = bool(pending)
        self._open: list[int] = []
        self._capability = capability
        self._unit = unit
        self._relation = None if relation is None else relation_value(relation)
        self._convert = convert
        self._output = output

    @property
    def ledger(self) -> Any:
        return self._ledger

    def spend(self, cost: PrivacyCost, *, mechanism: str,
              relation: Neighbouring = Neighbouring.ADD_REMOVE,
              params: Mapping[str, Any] | None = None) -> LedgerRelease:
        """Charge ``cost`` (its event) to the ledger, or raise before anything is recorded."""
        if not isinstance(cost, PrivacyCost):
            raise InvalidParameterError("cost", cost, "a privot.privacy.types.PrivacyCost")
        rel = relation_value(relation)
        if self._relation is not None and rel != self._relation:
            raise InvalidParameterError("relation", rel, f"{self._relation!r}, the relation "
                                        "this accountant was opened for")
        entry = self._ledger.charge(cost, capability=self._capability, mechanism=mechanism,
                                    unit=self._unit, relation=rel, convert=self._convert,
                                    params=params, output=self._output,
                                    status="pending" if self._pending else "released")
        if self._pending:
            self._open.append(entry.id)
        return entry

    @property
    def charges(self) -> list[LedgerRelease]:
        """The releases this accountant charged that are still pending."""
        return [self._ledger.get(i) for i in self._open]

    def finish(self, status: str = "released") -> None:
        """Close this accountant's pending charges (``"released"`` or ``"failed"``); a
        charge that cannot be closed stays "pending" (counted in full) with a warning."""
        for rid in self._open:
            self._ledger._close_quietly(rid, status, None)  # noqa: SLF001
        self._open.clear()

    def __enter__(self) -> LedgerAccountant:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.finish("failed" if exc_type is not None else "released")

    def can_spend(self, cost: PrivacyCost) -> bool:
        """Whether the ledger would accept ``cost`` now (nothing is recorded)."""
        return self._ledger.preview(event_for_cost(cost, "can_spend"), unit=self._unit,
                                    relation=self._relation, convert=self._convert).accepted

    @property
    def remaining(self) -> str:
        st = self._ledger.status(pld=False)
        return f"eps={st.remaining_epsilon:.6g} (of {self._ledger.total[0]:g})"
