"""What a ledger has spent, in numbers, words and curves (nothing is written).

:func:`ledger_status` (``Ledger.status``), :func:`format_report` (``Ledger.report``,
``privot budget show``), :func:`spending_curve` (``Ledger.spending_curve``, the figure of
:mod:`privot.privacy.ledger_plot`) and :func:`pld_epsilon`, the privacy-loss-distribution
composition reported beside the enforced filter (tight for a plan of releases fixed in
advance, never enforced: not valid under adaptive choice).

Privacy
-------
No noise; every figure is computed from the ledger's public records.
"""

from __future__ import annotations

import json
import time
from typing import Any

import numpy as np

from privot.privacy.ledger._filters import FilterRule, filter_name
from privot.privacy.ledger._records import BudgetStatus, LedgerRelease
from privot.privacy.ledger._store import LedgerStore
from privot.privacy.types import PLD_DISCRETIZATION, PrivacyEvent

__all__ = ["format_report", "ledger_status", "pld_epsilon", "spending_curve"]


def ledger_status(rule: FilterRule, store: LedgerStore, *, pld: bool = True,
                  discretization: float = PLD_DISCRETIZATION) -> BudgetStatus:
    """Spent and remaining budget of the ledger kept in ``store`` under ``rule`` (see
    :class:`BudgetStatus`).

    ``pld=True`` also composes the privacy loss distributions (identical events are
    self-composed once, so thousands of releases take seconds).
    """
    st, counts, by_view = store.summary(views=rule.filter == "hybrid")
    eps_t, dlt_t = rule.total
    spent, order, route = rule.enforced(st)
    pld_eps = renyi_eps = None
    if pld and dlt_t > 0 and st["count"]:
        events = [r.event for r in store.rows("ORDER BY id", ())]
        pld_eps = pld_epsilon(events, dlt_t, discretization)
        # the discretisation can put a pure composition a hair above its exact sum,
        # itself a valid bound at every delta: report the smaller
        pld_eps = min(pld_eps, st["inf"])
        if rule.filter == "hybrid":
            renyi_eps = float(rule.renyi_only_curve(events)[-1])
    return BudgetStatus(total=(eps_t, dlt_t), filter=rule.filter, spent_epsilon=spent,
                        remaining_epsilon=max(0.0, eps_t - spent),
                        basic=(st["eps"], st["delta"]), pld_epsilon=pld_eps,
                        best_order=order,
                        approx_delta=(st["approx"], rule.reserve),
                        releases=st["count"], by_status=counts,
                        renyi_epsilon=renyi_eps, by_view=by_view, route=route)


def format_report(ledger: Any, st: BudgetStatus, releases: list[LedgerRelease]) -> str:
    """A multi-line report of ``ledger`` (a :class:`~privot.privacy.ledger.Ledger`): its
    totals and status ``st`` (the three compositions), then each of ``releases``."""
    eps_t, dlt_t = ledger.total
    how = {"basic": ", by its basic route (the sum of epsilons)",
           "renyi": ", by its Renyi filter"}.get(st.route or "", "") \
        if ledger.filter == "hybrid" else ""
    lines = [f"Ledger {ledger.name!r} ({ledger.path}): {ledger.unit}-level, {ledger.relation}",
             f"  total:      eps={eps_t:g}, delta={dlt_t:g}",
             f"  spent:      eps={st.spent_epsilon:.6g} ({filter_name(ledger.filter)}{how}; "
             "valid for adaptively chosen releases)",
             f"  remaining:  eps={st.remaining_epsilon:.6g}",
             f"  basic:      eps={st.basic[0]:.6g}, delta={st.basic[1]:.3g} (sums)"]
    if st.renyi_epsilon is not None:
        lines.append(f"  Renyi only: eps={st.renyi_epsilon:.6g} (the Renyi filter alone "
                     "over the same releases, for comparison)")
    if st.pld_epsilon is not None:
        lines.append(f"  PLD:        eps={st.pld_epsilon:.6g} at delta={dlt_t:g} (tight if the "
                     "sequence of releases was fixed in advance)")
    if st.approx_delta[1] > 0:
        lines.append(f"  reserve:    delta {st.approx_delta[0]:.3g} of the "
                     f"{st.approx_delta[1]:.3g} set aside for releases counted by their "
                     "(eps, delta) pair")
    lines.append(f"Releases ({st.releases}):")
    for r in releases:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.created))
        conv = f", as a group of {r.conversion} from {r.unit}/{r.relation}" \
            if (r.unit, r.relation) != (ledger.unit, ledger.relation) else ""
        note = " (not finished: the process may have died; the charge stands)" \
            if r.status == "pending" else ""
        view = {"basic": "; (eps, delta) in the basic route",
                "renyi": "; Renyi curve only"}.get(r.view or "", "")
        lines.append(f"  #{r.id} {when} {r.capability} {r.mechanism} [{r.status}{note}]: "
                     f"eps={r.epsilon:.6g}, delta={r.delta:.3g}{conv}{view}; "
                     f"{r.event.describe()}" + (f" -> {r.output}" if r.output else ""))
    return "\n".join(lines)


def spending_curve(rule: FilterRule, store: LedgerStore, *, pld_points: int = 0,
                   discretization: float = 1e-3) -> dict[str, np.ndarray]:
    """Cumulative spending after each release of the ledger in ``store`` under ``rule``:
    ``time``, ``filter`` (the enforced figure, from the records stored with the rows) and
    ``basic`` eps; on a hybrid ledger also ``renyi``, the Renyi filter alone for
    comparison.

    ``pld_points > 0`` adds ``pld``: the PLD epsilon after that many releases spread
    evenly (the last included; NaN elsewhere; only when delta > 0), composed with a
    coarser ``discretization`` than :func:`ledger_status` (still an upper bound).
    """
    rels = store.rows("ORDER BY id", ())
    # the Renyi records the filter summed, as stored with each row (not recomputed)
    stored = store.stored_records()
    st: dict[str, Any] = {"rdp": np.zeros(rule.orders.size), "inf": 0.0,
                          "approx": 0.0, "eps": 0.0, "delta": 0.0, "count": 0}
    out: dict[str, list[float]] = {"time": [], "filter": [], "basic": []}
    for r, (rec_json, apx) in zip(rels, stored, strict=True):
        rec = json.loads(rec_json)
        st["rdp"] = st["rdp"] + np.asarray(rec["finite"], dtype=float)
        st["inf"] += float(rec["inf"])
        st["approx"] += float(apx)
        st["eps"] += r.epsilon
        st["delta"] += r.delta
        st["count"] += 1
        basic, f = st["eps"], rule.enforced(st)[0]
        out["time"].append(r.created)
        out["filter"].append(f)
        out["basic"].append(basic)
    curve = {k: np.asarray(v, dtype=float) for k, v in out.items()}
    if rule.filter == "hybrid":
        curve["renyi"] = rule.renyi_only_curve([r.event for r in rels])
    if pld_points > 0 and rule.total[1] > 0:
        pld = np.full(len(rels), np.nan)
        ends = np.unique(np.linspace(len(rels), 0, pld_points, endpoint=False)
                         .round().astype(int))
        events = [r.event for r in rels]
        for e in ends[ends > 0]:
            pld[e - 1] = pld_epsilon(events[:e], rule.total[1], discretization)
        curve["pld"] = pld
    return curve


def pld_epsilon(events: list[PrivacyEvent], delta: float,
                discretization: float = PLD_DISCRETIZATION) -> float:
    """Epsilon at ``delta`` of the composition of ``events`` by privacy loss distributions.

    Identical atomic events are self-composed once (``PrivacyLossDistribution
    .self_compose``), then the groups are composed.
    """
    groups: dict[str, tuple[PrivacyEvent, int]] = {}
    for ev in events:
        for part in ev.parts():
            key = json.dumps(part.to_dict(), sort_keys=True)
            e, c = groups.get(key, (part, 0))
            groups[key] = (e, c + 1)
    total = None
    for e, c in groups.values():
        one = e.pld(discretization)
        pl = one.self_compose(c) if c > 1 else one
        total = pl if total is None else total.compose(pl)
    if total is None:
        return 0.0
    return float(total.get_epsilon_for_delta(delta))
