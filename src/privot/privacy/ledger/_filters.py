r"""The enforced composition of a ledger: the hybrid, Renyi and basic filters.

A :class:`FilterRule` is the rule a ledger file fixes at creation (filter, total,
reserve, Renyi orders) and answers, from the running sums alone, what a charge would
record and whether it fits. It reads and writes nothing: the storage
(:mod:`privot.privacy.ledger._store`) keeps the sums, the ledger decides with this.
Derivations in ``docs/privacy/budget.md`` ("The Renyi filter", "The hybrid filter").

Privacy
-------
No noise. Each filter is valid under fully adaptive use (Feldman and Zrnic 2021 for the
Renyi filter, Rogers et al. 2016 for the basic one); the hybrid filter enforces the
smaller of the two on one split of delta fixed at creation.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from privot.privacy.types import PrivacyEvent

__all__ = ["FILTERS", "FilterRule", "HYBRID_APPROX_FRACTION", "ORDERS", "RELATIVE_TOLERANCE",
           "VIEWS", "added", "conversion_offset", "filter_name", "no_larger"]

FILTERS = ("hybrid", "rdp", "basic")
#: Part of delta a ``"hybrid"`` ledger sets aside, by default, for releases charged by the
#: (eps, delta) pair they prove (the rest converts the Renyi sums). Fixed at creation: the
#: split must not depend on the answers (``docs/privacy/budget.md``, "The hybrid filter").
HYBRID_APPROX_FRACTION = 0.5
#: How a row of a hybrid ledger is counted: ``"basic"``, its (eps, delta) pair in the basic
#: route (its whole delta from the reserve) besides its Renyi curve in the Renyi filter;
#: ``"renyi"``, its Renyi curve only (its approx parts' delta from the reserve).
VIEWS = ("basic", "renyi")
#: Finite Renyi orders of the filter (the order infinity is added to them). Fixed in the
#: code and stored in each file: a filter's orders must not depend on the answers.
ORDERS = (1.25, 1.5, 1.75, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0, 6.0, 8.0, 10.0, 12.0, 16.0,
          20.0, 24.0, 32.0, 48.0, 64.0, 128.0, 256.0)
#: Relative slack in the limit checks (as :data:`privot.privacy.budget.RELATIVE_TOLERANCE`).
RELATIVE_TOLERANCE = 1e-12


class FilterRule:
    """A ledger's composition rule, as fixed in its file.

    Parameters
    ----------
    spec : mapping
        The ledger's spec (``filter``, ``epsilon``, ``delta``, ``approx_delta``: the
        reserve, ``orders``).

    Attributes
    ----------
    filter : {"hybrid", "rdp", "basic"}
    total : (epsilon, delta)
    reserve : float
        The delta set aside for releases charged by their (eps, delta) pair.
    orders : float array
        The finite Renyi orders of the filter.
    """

    def __init__(self, spec: Mapping[str, Any]) -> None:
        self.filter = str(spec["filter"])
        self.total = (float(spec["epsilon"]), float(spec["delta"]))
        self.reserve = float(spec["approx_delta"])
        self.orders = np.asarray(spec["orders"], dtype=float)

    def filter_epsilon(self, rdp_sum: np.ndarray, inf_sum: float, approx_used: float,
                        reserve: float | None = None) -> tuple[float, float | None]:
        """The filter's epsilon at the ledger's delta and the order giving it (``reserve``:
        another split of delta than the file's, for comparisons only)."""
        eps_t, dlt_t = self.total
        if self.filter == "basic":
            return math.nan, None
        best, order = inf_sum, (math.inf if math.isfinite(inf_sum) else None)
        if reserve is None:
            reserve = self.reserve
        dlt_r = dlt_t - reserve
        if dlt_r > 0 and approx_used <= reserve * (1 + RELATIVE_TOLERANCE):
            cand = rdp_sum + conversion_offset(self.orders, dlt_r)
            i = int(np.argmin(cand))
            if cand[i] < best:
                best, order = float(cand[i]), float(self.orders[i])
        return best, order

    def enforced(self, st: Mapping[str, Any]) -> tuple[float, float | None, str]:
        """The enforced epsilon of a state (running sums ``rdp``, ``inf``, ``approx``,
        ``eps``, ``delta``, ``count``), the Renyi order giving it (``inf``: the pure sum;
        None otherwise) and the route: ``"basic"``, ``"renyi"`` or ``"none"``.

        ``"basic"`` ledgers: the epsilon sum. ``"rdp"``: the Renyi filter. ``"hybrid"``:
        the smaller of the Renyi filter (delta minus the reserve converting its sums) and,
        while it is open, the basic route (the epsilon sum, every delta in the reserve).
        """
        if self.filter == "basic":
            return float(st["eps"]), None, "basic"
        spent, order = self.filter_epsilon(st["rdp"], st["inf"], st["approx"])
        route = "renyi" if math.isfinite(spent) else "none"
        if (self.filter == "hybrid" and self.basic_route_open(st)
                and st["approx"] <= self.reserve_limit() and st["eps"] <= spent):
            return float(st["eps"]), None, "basic"
        return spent, order, route

    def reserve_limit(self) -> float:
        return self.reserve * (1 + RELATIVE_TOLERANCE)

    def rdp_record(self, event: PrivacyEvent) -> dict[str, Any]:
        finite = event.rdp(self.orders)
        # order infinity: the max divergence, finite only for pure (or approx-as-pure) parts
        inf = math.fsum(e.basic()[0] if e.kind in ("pure", "approx") else math.inf
                        for e in event.parts())
        return {"finite": [float(x) for x in finite], "inf": inf}

    def basic_route_open(self, state: dict[str, Any]) -> bool:
        """Whether a hybrid ledger's basic route is still open: every row so far took its
        whole delta from the reserve (so the reserve's running sum equals the delta sum,
        to the ledger's relative tolerance) and the epsilon sum is within the total."""
        if state["count"] == 0:
            return True
        tol = 1 + RELATIVE_TOLERANCE
        return (state["delta"] <= state["approx"] * tol
                and state["eps"] <= self.total[0] * tol)

    def charge_record(self, state: dict[str, Any], event: PrivacyEvent
                       ) -> tuple[dict[str, Any], float, str | None]:
        """The record a new charge of ``event`` gets, the delta it takes from the reserve,
        and why it breaks the limit (None when it fits). Read inside the charging
        transaction.

        Every row records the event's Renyi curve (:meth:`rdp_record`). On a hybrid
        ledger the row also enters the *basic route* when that route is still open and
        the release's whole (eps, delta) pair fits in it (its delta within the reserve,
        the epsilon sum within the total): it then takes its whole delta from the
        reserve (``view="basic"``); otherwise only its approx parts' delta
        (``view="renyi"``). Decided here, before the release runs, from the public state
        and the event alone (``docs/privacy/budget.md``, "The hybrid filter").
        """
        rec = self.rdp_record(event)
        if self.filter != "hybrid":
            apx = event.approx_delta()
            return rec, apx, self.over(state, event, rec, apx)
        tol = 1 + RELATIVE_TOLERANCE
        e, d = event.basic()
        reserve = self.reserve
        open_before = self.basic_route_open(state)
        if not open_before:
            reason = "the basic route was closed by an earlier release"
        elif state["approx"] + d > reserve * tol:
            reason = (f"its delta {d:.3g} would take the reserve to "
                      f"{state['approx'] + d:.3g}, past the {reserve:.3g} set aside")
        elif state["eps"] + e > self.total[0] * tol:
            reason = (f"the epsilon sum would reach {state['eps'] + e:.6g}, past the total "
                      f"{self.total[0]:g}")
        else:
            reason = None
        basic = reason is None
        apx = d if basic else event.approx_delta()
        rec["view"] = "basic" if basic else "renyi"
        renyi, _ = self.filter_epsilon(state["rdp"] + np.asarray(rec["finite"]),
                                        state["inf"] + rec["inf"], state["approx"] + apx)
        if basic:
            rec["why"] = (f"(eps, delta) pair in the basic route (reserve "
                          f"{state['approx'] + apx:.3g} of {reserve:.3g}): after it the "
                          f"basic route reads eps {state['eps'] + e:.6g}, the Renyi filter "
                          f"{renyi:.6g}")
        else:
            rec["why"] = f"Renyi curve only ({reason}): the Renyi filter reads {renyi:.6g}"
        return rec, apx, self.over(state, event, rec, apx)

    def rerecord(self, event: PrivacyEvent, old_rec: dict[str, Any]
                  ) -> tuple[dict[str, Any], float]:
        """The record of what a pending row actually ran (for ``Ledger.finish``) and the
        delta it takes from the reserve, keeping the route the row was charged in: a row
        in the basic route keeps its whole delta in the reserve (the delta of what ran,
        at most what was charged), other rows their approx parts' delta. (Dropping a row
        from the basic route afterwards would be safe -- it only closes that route --
        but would lose it.)"""
        rec = self.rdp_record(event)
        view = old_rec.get("view")
        if view is None:
            return rec, event.approx_delta()
        rec["view"] = view
        if "why" in old_rec:
            rec["why"] = old_rec["why"]
        return rec, (event.basic()[1] if view == "basic" else event.approx_delta())

    def over(self, state: dict[str, Any], event: PrivacyEvent,
              rec: dict[str, Any], approx_delta: float | None = None) -> str | None:
        """Why adding ``event`` (recorded as ``rec``, taking ``approx_delta`` from the
        reserve: by default its approx parts' delta) breaks the limit, or None."""
        eps_t, dlt_t = self.total
        tol = 1 + RELATIVE_TOLERANCE
        e_new, d_new = event.basic()
        if self.filter == "basic":
            eps = state["eps"] + e_new
            dlt = state["delta"] + d_new
            if eps > eps_t * tol or dlt > dlt_t * tol:
                return (f"basic composition would reach eps={eps:.6g}, delta={dlt:.3g} "
                        f"(already spent eps={state['eps']:.6g}, delta={state['delta']:.3g})")
            return None
        if approx_delta is None:
            approx_delta = event.approx_delta()
        approx = state["approx"] + approx_delta
        reserve = self.reserve
        if approx > reserve * tol:
            return (f"the delta it takes from the reserve would reach {approx:.3g} but the "
                    f"ledger reserved {reserve:.3g} for releases charged by their (eps, "
                    "delta) pair (create the ledger with --approx-delta, or with --filter "
                    "basic)")
        new = {"rdp": state["rdp"] + np.asarray(rec["finite"]),
               "inf": state["inf"] + rec["inf"], "approx": approx,
               "eps": state["eps"] + e_new, "delta": state["delta"] + d_new,
               "count": state["count"] + 1}
        spent, _, _ = self.enforced(new)
        if spent > eps_t * tol:
            before, _, _ = self.enforced(state)
            detail = ""
            if self.filter == "hybrid":
                renyi, _ = self.filter_epsilon(new["rdp"], new["inf"], new["approx"])
                basic = (f"{new['eps']:.6g}" if rec.get("view") == "basic"
                         else "closed: " + rec.get("why", "").partition("(")[2].partition(
                             ")")[0])
                detail = f": Renyi filter {renyi:.6g}, basic route {basic}"
            return (f"the {filter_name(self.filter)} would reach eps={spent:.6g} at "
                    f"delta={dlt_t:.3g}{detail} (already spent eps={before:.6g})")
        return None

    def renyi_only_curve(self, events: list[PrivacyEvent]) -> np.ndarray:
        """For comparison on a hybrid ledger: the Renyi filter alone (``filter="rdp"``)
        after each of ``events``, each by its Renyi curve; all of delta converts the sums
        unless a release has approx parts (then they take the file's reserve)."""
        if not events:
            return np.zeros(0)
        apx = np.cumsum([e.approx_delta() for e in events])
        reserve = self.reserve if apx[-1] > 0 else 0.0
        rdp, inf_sum, out = np.zeros(self.orders.size), 0.0, []
        for ev, used in zip(events, apx, strict=True):
            rec = self.rdp_record(ev)
            rdp = rdp + np.asarray(rec["finite"], dtype=float)
            inf_sum += rec["inf"]
            out.append(math.inf if used > reserve * (1 + RELATIVE_TOLERANCE)
                       else self.filter_epsilon(rdp, inf_sum, float(used), reserve)[0])
        return np.asarray(out, dtype=float)


def added(state: Mapping[str, Any], event: PrivacyEvent, rec: Mapping[str, Any],
           approx: float) -> dict[str, Any]:
    """The running sums of ``state`` with one more row (``event`` recorded as ``rec``,
    taking ``approx`` from the reserve), as the storage would write them
    (``LedgerStore.add_to_totals``)."""
    eps, dlt = event.basic()
    unbounded = not math.isfinite(rec["inf"])
    inf_finite = state["inf_finite"] + (0.0 if unbounded else rec["inf"])
    n_unbounded = state["unbounded"] + (1 if unbounded else 0)
    return {"rdp": state["rdp"] + np.asarray(rec["finite"], dtype=float),
            "inf": math.inf if n_unbounded else inf_finite, "inf_finite": inf_finite,
            "unbounded": n_unbounded, "eps": state["eps"] + eps,
            "delta": state["delta"] + dlt, "approx": state["approx"] + approx,
            "count": state["count"] + 1}


def no_larger(eps: float, delta: float, approx: float, rec: dict[str, Any],
               old_eps: float, old_delta: float, old_approx: float,
               old_rec: dict[str, Any]) -> bool:
    """Whether a description is no larger than another in every part (basic pair, approx
    delta, each Renyi order and infinity), up to 1e-9 relative."""
    tol = 1 + 1e-9
    return (eps <= old_eps * tol and delta <= old_delta * tol
            and approx <= old_approx * tol and rec["inf"] <= old_rec["inf"] * tol
            and all(a <= b * tol + 1e-15
                    for a, b in zip(rec["finite"], old_rec["finite"], strict=True)))


def conversion_offset(orders: np.ndarray, delta: float) -> np.ndarray:
    r"""What the filter adds to the Renyi sum at each order to get its epsilon.

    .. math:: \frac{\log(|\Lambda|/\delta) - \log\alpha}{\alpha - 1}
              + \log\frac{\alpha - 1}{\alpha}

    Each order gets :math:`\delta/|\Lambda|` (the union over the grid) and the
    hockey-stick bound of Canonne, Kamath and Steinke (2020, Prop. 12), which holds on
    the part of the outcomes where that order's sum stayed within its threshold
    (``docs/privacy/budget.md``).
    """
    a = np.asarray(orders, dtype=float)
    return (math.log(a.size / delta) - np.log(a)) / (a - 1.0) + np.log((a - 1.0) / a)


def filter_name(filt: str) -> str:
    """How reports name a filter (``"hybrid"`` -> "hybrid filter")."""
    return {"hybrid": "hybrid filter", "rdp": "Renyi filter"}.get(filt, "basic composition")
