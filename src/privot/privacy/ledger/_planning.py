r"""Planning on a ledger: what charges would do, computed and never recorded.

:func:`plan_from` is ``Ledger.plan`` and ``Ledger.preview`` (the rule of
``Ledger.charge`` on the spending read now); :func:`split_budget` finds the largest
epsilons a list of releases can take, all accepted, by bisection on that plan
(``privot budget plan``).

Privacy
-------
No noise and no charge: a plan reads the ledger's public state only; another process
may charge in between, so only ``Ledger.charge`` decides.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from privot._validation import check_probability
from privot.errors import BudgetExceededError, InvalidParameterError
from privot.privacy.events import ApproxEvent, PureEvent, event_for_cost
from privot.privacy.ledger._filters import FilterRule, added
from privot.privacy.ledger._records import ChargePreview
from privot.privacy.types import PrivacyCost, PrivacyEvent

__all__ = ["plan_from", "split_budget"]


def plan_from(rule: FilterRule,
              resolve: Callable[[PrivacyEvent], tuple[PrivacyEvent, str, str, int]],
              state: dict[str, Any], events: list[PrivacyEvent | PrivacyCost]
              ) -> list[ChargePreview]:
    """What charging ``events`` one after the other would do under ``rule``, from the
    running sums ``state`` (read once by the caller), without recording anything: one
    :class:`ChargePreview` each, every accepted one counted before the next (a refused
    one is not). ``resolve`` restates an event for the ledger (its unit and relation:
    :func:`~privot.privacy.ledger._relations.resolve`) and raises when it cannot."""
    out = []
    for raw in events:
        ev = event_for_cost(raw, "plan") if isinstance(raw, PrivacyCost) else raw
        ev, _, _, k = resolve(ev)
        rec, apx, why = rule.charge_record(state, ev)
        before = rule.enforced(state)[0]
        after_state = added(state, ev, rec, apx)
        after = rule.enforced(after_state)[0]
        eps_t = rule.total[0]
        out.append(ChargePreview(
            accepted=why is None, reason=why, event=ev, conversion=k,
            view=rec.get("view"), spent_before=before, spent_after=after,
            remaining_after=max(0.0, eps_t - (after if why is None else before))))
        if why is None:
            state = after_state
    return out


def split_budget(ledger: Any, weights: list[float], *, delta_each: float = 0.0,
                 unit: str | None = None, relation: object = None, convert: bool = False,
                 bisections: int = 60) -> tuple[list[float], list[ChargePreview]]:
    r"""The largest epsilons :math:`s w_i` such that the releases, charged in order, are
    all accepted by ``ledger`` now; and their previews.

    Each planned release is pure (``delta_each = 0``: a
    :class:`~privot.privacy.events.PureEvent`) or proves
    ``(s w_i, delta_each)`` (an :class:`~privot.privacy.events.ApproxEvent`, charged by
    its pair). ``s`` is found by bisection (``bisections`` halvings of ``[0, eps_T]``):
    acceptance is monotone in ``s`` because every description of the events grows with
    it. Nothing is recorded. Raises :class:`~privot.errors.BudgetExceededError` when not
    even a vanishing epsilon fits (the ledger is spent, or ``delta_each`` does not fit).
    """
    w = [float(x) for x in weights]
    if not w or any(not math.isfinite(x) or x <= 0 for x in w):
        raise InvalidParameterError("weights", weights, "one or more positive numbers")
    dlt = check_probability(delta_each, "delta_each")

    def events(scale: float) -> list[PrivacyEvent]:
        return [PureEvent(scale * x, "planned") if dlt == 0
                else ApproxEvent(scale * x, dlt, "planned") for x in w]

    state = ledger._read_state()  # noqa: SLF001 -- one read for the whole bisection

    def plan(scale: float) -> list[ChargePreview]:
        return ledger._plan_from(state, events(scale), unit=unit,  # noqa: SLF001
                                 relation=relation, convert=convert)

    def fits(scale: float) -> bool:
        return all(p.accepted for p in plan(scale))

    hi = ledger.total[0] / min(w)  # no single release can pass the total
    lo = hi * 1e-9  # far above the ledger's relative tolerance (1e-12)
    if not fits(lo):
        reason = next(p.reason for p in plan(lo) if not p.accepted)
        raise BudgetExceededError(f"ledger {ledger.name!r} cannot take {len(w)} more "
                                  f"release(s) of any epsilon: {reason}")
    if fits(hi):
        lo = hi
    for _ in range(bisections if lo < hi else 0):
        mid = 0.5 * (lo + hi)
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return [lo * x for x in w], plan(lo)
