"""The :class:`Ledger`: one data set's privacy budget in one SQLite file.

The class ties the pieces of :mod:`privot.privacy.ledger` together: it validates what a
caller asks, restates it for the ledger's unit and relation (``_relations``), decides
with the filter rule (``_filters``) inside one write transaction of the store
(``_store``), and delegates planning (``_planning``), the report (``_report``) and the
accountants it hands out (``_accountants``). The package docstring states the rules.

Privacy
-------
The ledger adds no noise. Everything released through it is, jointly,
``(epsilon, delta)``-DP for the ledger's unit and relation, under the filter named in
the file.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import socket
import sqlite3
import time
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from privot._validation import check_delta, check_epsilon, check_probability
from privot.errors import BudgetExceededError, InvalidParameterError
from privot.privacy.events import ComposedEvent, event_for_cost
from privot.privacy.ledger._accountants import LedgerAccountant, ReleaseAccountant
from privot.privacy.ledger._filters import (
    FILTERS,
    HYBRID_APPROX_FRACTION,
    ORDERS,
    FilterRule,
    no_larger,
)
from privot.privacy.ledger._planning import plan_from
from privot.privacy.ledger._records import BudgetStatus, ChargePreview, LedgerRelease
from privot.privacy.ledger._relations import (
    RELATIONS,
    UNITS,
    check_choice,
    relation_value,
    resolve,
)
from privot.privacy.ledger._report import format_report, ledger_status, spending_curve
from privot.privacy.ledger._store import SCHEMA_VERSION, LedgerStore, jsonable_params
from privot.privacy.types import PLD_DISCRETIZATION, PrivacyCost, PrivacyEvent

__all__ = ["Ledger"]


class Ledger:
    """A data set's privacy budget, kept in one SQLite file.

    Create one with :meth:`create` (``privot budget init``), open it with :meth:`open`.
    Every method opens its own short connection, so a :class:`Ledger` object can be
    shared by threads and many processes can use the same file.
    """

    def __init__(self, path: str | os.PathLike[str], _spec: dict[str, Any]) -> None:
        self._path = Path(path)
        self._spec = _spec
        self._store = LedgerStore(self._path)
        self._rule = FilterRule(_spec)

    # -- creation -----------------------------------------------------------------------

    @classmethod
    def create(cls, path: str | os.PathLike[str], *, epsilon: float, delta: float = 0.0,
               name: str | None = None, unit: str = "user", relation: str = "add-remove",
               filter: str | None = None, approx_delta: float | None = None) -> Ledger:
        r"""Create a ledger file for one data set.

        Parameters
        ----------
        path : path
            The file to create (refused if it exists: a budget is never reset).
        epsilon : float
            Total epsilon > 0.
        delta : float, default 0
            Total delta in [0, 1).
        name : str, optional
            The data set's name (default: the file's stem).
        unit : {"user", "row"}
            The unit of privacy.
        relation : {"add-remove", "replace-one"}
        filter : {"hybrid", "rdp", "basic"}, optional
            Default ``"hybrid"`` when delta > 0, else ``"basic"``. ``"hybrid"`` runs two
            filters side by side on one split of delta and enforces the smaller: basic
            composition of the (eps, delta) pairs the releases prove, their deltas within
            the reserve, and the Renyi filter of their curves with the rest of delta (a
            single release proving (eps, delta) with delta within the reserve is charged
            eps). ``"rdp"`` is the Renyi filter alone (the rule before the hybrid, kept
            for comparison); ``"basic"`` sums the pairs with all of delta
            (``docs/privacy/budget.md``).
        approx_delta : float, optional
            Fraction of ``delta``, in [0, 1), set aside now as the reserve: on a hybrid
            ledger for the basic route (and for releases known only by their pair), on an
            rdp ledger for releases known only by their pair (e.g. shuffled heatmaps);
            the rest of delta converts the Renyi sums. Default
            :data:`HYBRID_APPROX_FRACTION` on a hybrid ledger, 0 otherwise. Fixed at
            creation: a filter's thresholds must not depend on the answers.
        """
        path = Path(path)
        eps = check_epsilon(epsilon, "epsilon")
        dlt = check_delta(delta, "delta")
        unit = check_choice(unit, "unit", UNITS)
        relation = check_choice(relation_value(relation), "relation", RELATIONS)
        filt = filter if filter is not None else ("hybrid" if dlt > 0 else "basic")
        filt = check_choice(filt, "filter", FILTERS)
        if filt != "basic" and dlt == 0:
            raise InvalidParameterError("filter", filt, "'basic' when delta is 0 (the Renyi "
                                        "filter converts to (eps, delta) with delta > 0)")
        if approx_delta is None:
            approx_delta = HYBRID_APPROX_FRACTION if filt == "hybrid" else 0.0
        frac = check_probability(approx_delta, "approx_delta")
        if frac >= 1:
            raise InvalidParameterError("approx_delta", approx_delta, "a fraction in [0, 1)")
        if name is None:
            name = path.stem
        if not isinstance(name, str) or not name.strip():
            raise InvalidParameterError("name", name, "a non-empty string")
        if path.exists():
            raise InvalidParameterError("path", str(path), "a file that does not exist yet "
                                        "(a ledger is never re-initialised)")
        if not path.parent.exists():
            raise InvalidParameterError("path", str(path), "a path in an existing folder")
        spec = {"version": SCHEMA_VERSION, "name": name, "epsilon": eps, "delta": dlt,
                "unit": unit, "relation": relation, "filter": filt,
                "approx_delta": frac * dlt, "orders": list(ORDERS), "created": time.time()}
        LedgerStore.create(path, spec)
        return cls(path, spec)

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> Ledger:
        """Open an existing ledger file (a crashed writer's journal is rolled back)."""
        path = Path(path)
        spec = LedgerStore.read_spec(path)
        if spec.get("filter") not in FILTERS:
            raise InvalidParameterError("ledger", str(path),
                                        f"a ledger whose filter is one of {list(FILTERS)} "
                                        f"(this file says {spec.get('filter')!r})")
        return cls(path, spec)

    # -- identity -----------------------------------------------------------------------

    @property
    def path(self) -> Path:
        """The ledger file."""
        return self._path

    @property
    def name(self) -> str:
        """The data set's name."""
        return str(self._spec["name"])

    @property
    def total(self) -> tuple[float, float]:
        """``(epsilon, delta)``."""
        return float(self._spec["epsilon"]), float(self._spec["delta"])

    @property
    def unit(self) -> str:
        return str(self._spec["unit"])

    @property
    def relation(self) -> str:
        return str(self._spec["relation"])

    @property
    def filter(self) -> str:
        return str(self._spec["filter"])

    @property
    def spec(self) -> dict[str, Any]:
        """Everything fixed at creation (a copy)."""
        return dict(self._spec)

    def __repr__(self) -> str:
        st = self.status(pld=False)
        return (f"Ledger({str(self._path)!r}, name={self.name!r}, total=(eps={self.total[0]:g}, "
                f"delta={self.total[1]:g}), {self.unit}/{self.relation}, filter={self.filter!r}, "
                f"spent eps={st.spent_epsilon:.4g}, releases={st.releases})")

    # -- composition --------------------------------------------------------------------

    def recomputed_state(self) -> dict[str, Any]:
        """The sums recomputed from every release row (:meth:`status` reads the running
        sums; this checks them)."""
        return self._store.recomputed_state(self._rule.orders.size)

    # -- charging -----------------------------------------------------------------------

    def _resolve(self, event: PrivacyEvent, unit: str | None, relation: object,
                 convert: bool) -> tuple[PrivacyEvent, str, str, int]:
        """``event`` restated for this ledger (:func:`_relations.resolve
        <privot.privacy.ledger._relations.resolve>`), or a refusal naming what would work."""
        return resolve(event, unit, relation, convert, ledger_name=self.name,
                       ledger_unit=self.unit, ledger_relation=self.relation)

    def charge(self, event: PrivacyEvent | PrivacyCost, *, capability: str, mechanism: str,
               unit: str | None = None, relation: object = None, convert: bool = False,
               params: Mapping[str, Any] | None = None, output: str | None = None,
               status: str = "released") -> LedgerRelease:
        """Record a release, or raise :class:`~privot.errors.BudgetExceededError`.

        Check and record happen in one write transaction: concurrent charges are
        serialised and none can pass the limit. Nothing is recorded on refusal.

        Parameters
        ----------
        event : PrivacyEvent or PrivacyCost
            What the release runs (a cost is turned into its event).
        capability, mechanism : str
            For the report (``"heatmap"``, ``"laplace-levels"``...).
        unit, relation : optional
            The release's own; default the ledger's.
        convert : bool, default False
            Allow a documented conversion that counts the release as a group of more
            than 1 (a group of 1, which restates nothing, needs no consent).
        params : mapping, optional
            Public parameters to keep (JSON; others become strings).
        output : str, optional
            Where the release is written.
        status : {"released", "pending"}
            ``"pending"`` for a charge made before the release runs (see :meth:`release`).
        """
        if isinstance(event, PrivacyCost):
            event = event_for_cost(event, mechanism)
        for nm, v in (("capability", capability), ("mechanism", mechanism)):
            if not isinstance(v, str) or not v:
                raise InvalidParameterError(nm, v, "a non-empty string")
        if status not in ("released", "pending"):
            raise InvalidParameterError("status", status, "'released' or 'pending'")
        ev, unit, rel, k = self._resolve(event, unit, relation, convert)
        eps, dlt = ev.basic()
        with self._store.write() as con:
            # the record depends on the spending so far (a hybrid ledger's view): chosen
            # under the write lock, from public state only, before the release runs
            rec, apx, why = self._rule.charge_record(self._store.state(con), ev)
            now = time.time()
            row = (now, now if status == "released" else None, status, capability,
                   mechanism, unit, rel, k, eps, dlt, apx, json.dumps(rec),
                   json.dumps(ev.to_dict()), json.dumps(jsonable_params(params or {})),
                   None if output is None else str(output), os.getpid(),
                   socket.gethostname())
            if why is not None:
                raise BudgetExceededError(
                    f"ledger {str(self._path)!r} ({self.name}, total eps={self.total[0]:g}, "
                    f"delta={self.total[1]:g}) refuses {capability} {mechanism!r} asking "
                    f"{ev.describe()}: {why}; nothing was recorded")
            rid = self._store.insert(con, row)
            self._store.add_to_totals(con, +1, eps, dlt, apx, rec)
        return self.get(rid)

    # -- planning (nothing is recorded) --------------------------------------------------

    def preview(self, event: PrivacyEvent | PrivacyCost, *, unit: str | None = None,
                relation: object = None, convert: bool = False) -> ChargePreview:
        """What :meth:`charge` would do with ``event`` now, without recording anything.

        The same rule as :meth:`charge` (conversion, route, filter), on the spending read
        now; another process may charge in between, so only :meth:`charge` decides. A
        unit or relation the ledger cannot record (or only with ``convert``) raises as
        :meth:`charge` does.
        """
        return self.plan([event], unit=unit, relation=relation, convert=convert)[0]

    def plan(self, events: list[PrivacyEvent | PrivacyCost], *, unit: str | None = None,
             relation: object = None, convert: bool = False) -> list[ChargePreview]:
        """What charging ``events`` one after the other would do, without recording
        anything: one :class:`ChargePreview` each, every accepted one counted before the
        next (a refused one is not).

        See :func:`split_budget` for the largest equal or weighted epsilons that fit.
        """
        return self._plan_from(self._read_state(), events, unit=unit, relation=relation,
                               convert=convert)

    def _read_state(self) -> dict[str, Any]:
        """The running sums, read now (outside any write transaction)."""
        return self._store.read_state()

    def _plan_from(self, state: dict[str, Any], events: list[PrivacyEvent | PrivacyCost], *,
                   unit: str | None, relation: object, convert: bool
                   ) -> list[ChargePreview]:
        """:meth:`plan` from the running sums ``state`` (read once by the caller)."""
        return plan_from(self._rule, lambda ev: self._resolve(ev, unit, relation, convert),
                         state, events)

    def finish(self, release_id: int, *, status: str, event: PrivacyEvent | None = None,
               output: str | None = None) -> LedgerRelease:
        """Close a pending charge: ``"released"`` (optionally with the event that ran) or
        ``"failed"`` (the charge stands).

        With ``event``, the row records what ran (restated for the row's conversion).
        Through :meth:`release` the pieces were checked against the charge before they
        ran, so this lowers the spending or raises it by floating-point rounding only
        (at most 1e-9 relative in any part). An event larger than the charge beyond that
        is still recorded as it ran (the ledger tells the truth), with a warning: it was
        released past what was admitted.
        """
        if status not in ("released", "failed"):
            raise InvalidParameterError("status", status, "'released' or 'failed'")
        with self._store.write() as con:
            # read and rewrite under the write lock: a row closed meanwhile by
            # another process is never rewritten
            found = self._store.stored_charge(con, release_id)
            if found is None or found["status"] != "pending":
                raise InvalidParameterError("release_id", release_id,
                                            "the id of a pending release")
            conversion, old_rdp = found["conversion"], found["rdp"]
            old_eps, old_dlt, old_apx = found["epsilon"], found["delta"], found["approx_delta"]
            sets: dict[str, Any] = {"status": status, "finished": time.time()}
            if output is not None:
                sets["output"] = str(output)
            old_rec = json.loads(old_rdp)
            if event is not None and status == "released":
                ev = event.grouped(conversion)
                rec, apx = self._rule.rerecord(ev, old_rec)  # keeps the row's route
                e, d = ev.basic()
                if not no_larger(e, d, apx, rec, old_eps, old_dlt, old_apx, old_rec):
                    warnings.warn(
                        f"ledger {str(self._path)!r}: release #{release_id} ran "
                        f"{ev.describe()}, more than it was charged; recorded as it ran, "
                        "so the ledger may now be past its total", RuntimeWarning,
                        stacklevel=3)
                sets.update(event=json.dumps(ev.to_dict()), rdp=json.dumps(rec),
                            epsilon=e, delta=d, approx_delta=apx)
                self._store.add_to_totals(con, -1, old_eps, old_dlt, old_apx, old_rec)
                self._store.add_to_totals(con, +1, e, d, apx, rec)
            self._store.update_pending(con, release_id, sets)
        return self.get(release_id)

    def cancel(self, release_id: int) -> LedgerRelease:
        """Withdraw a pending charge whose release drew no noise: it counts as nothing.

        For a hold taken before a release ran (:meth:`release`, or a pending
        :meth:`accountant`) when the release then stopped before any of its pieces was
        charged, hence before any noise was drawn (privot charges a piece before its
        noise). Like a refused charge, a cancelled one leaves no row: its contribution is
        taken out of the running sums and the row removed, in one write transaction. A
        release that drew noise must be closed with :meth:`finish` instead (its charge
        stands). Returns the withdrawn row, with status ``"cancelled"``.
        """
        held = self._store.rows("WHERE id = ? AND status = 'pending'", (int(release_id),))
        if not held:
            raise InvalidParameterError("release_id", release_id, "the id of a pending release")
        with self._store.write() as con:
            found = self._store.stored_charge(con, release_id)
            if found is None or found["status"] != "pending":
                raise InvalidParameterError("release_id", release_id,
                                            "the id of a pending release")
            self._store.add_to_totals(con, -1, found["epsilon"], found["delta"],
                                      found["approx_delta"], json.loads(found["rdp"]))
            self._store.delete_pending(con, release_id)
        return dataclasses.replace(held[0], status="cancelled", finished=time.time())

    @contextlib.contextmanager
    def release(self, event: PrivacyEvent | PrivacyCost, *, capability: str, mechanism: str,
                unit: str | None = None, relation: object = None, convert: bool = False,
                params: Mapping[str, Any] | None = None,
                output: str | None = None) -> Iterator[Any]:
        """Charge a whole release up front, run it, record what ran.

        Use as::

            with ledger.release(PureEvent(1.0), capability="heatmap", mechanism="...",
                                output="out/") as acct:
                private_heatmap(..., epsilon=1.0, accountant=acct)

        The charge is committed ("pending") before the block runs; the block gets a
        :class:`~privot.privacy.budget.PrivacyAccountant` of exactly the charged
        ``(epsilon, delta)`` for the release's pieces. On success the row becomes
        "released" with the pieces' events (each piece is refused before its noise when
        the pieces would exceed the charge in any description: basic pair, Renyi
        order, approx delta). On an exception: if no piece was charged, no noise was
        drawn and the hold is cancelled in full (:meth:`cancel`: it counts as nothing);
        if a piece was charged, noise may have been drawn, the row becomes "failed" and
        the whole charge stands. The exception carries a note saying which. A killed
        process leaves it "pending", still counted.

        The block's noise must be charged to ``acct`` (every privot API does so before
        drawing): noise drawn past it is outside what the ledger can know.
        """

        if isinstance(event, PrivacyCost):
            event = event_for_cost(event)
        entry = self.charge(event, capability=capability, mechanism=mechanism, unit=unit,
                            relation=relation, convert=convert, params=params, output=output,
                            status="pending")
        eps, dlt = event.basic()
        acct = ReleaseAccountant(self._rule, event.grouped(entry.conversion),
                                 entry.conversion, eps, dlt, name=capability)
        try:
            yield acct
        except BaseException as exc:
            if acct.ledger:  # a piece was charged, so noise may have been drawn
                self._close_quietly(entry.id, "failed", None)
                _add_note(exc, f"ledger {str(self._path)!r}: release #{entry.id} failed "
                          f"after drawing noise; its charge of {event.describe()} stands")
            elif self._cancel_quietly(entry.id):
                _add_note(exc, f"ledger {str(self._path)!r}: release #{entry.id} drew no "
                          f"noise; its hold of {event.describe()} was cancelled, nothing "
                          "is charged")
            raise
        pieces = [event_for_cost(e.cost, e.mechanism) for e in acct.ledger]
        self._close_quietly(entry.id, "released",
                            ComposedEvent(tuple(pieces)) if pieces else None)

    def _close_quietly(self, release_id: int, status: str,
                       event: PrivacyEvent | None) -> None:
        """:meth:`finish`, but a release that ran is never turned into an error by the
        bookkeeping after it: if the file cannot be written, the row stays "pending"
        (counted in full) and a warning says so."""
        try:
            self.finish(release_id, status=status, event=event)
        except (sqlite3.Error, OSError) as exc:
            warnings.warn(f"ledger {str(self._path)!r}: release #{release_id} could not be "
                          f"marked {status!r} ({exc}); it stays 'pending' and counts in full",
                          RuntimeWarning, stacklevel=3)

    def _cancel_quietly(self, release_id: int) -> bool:
        """:meth:`cancel`; if the file cannot be written the hold stays "pending" (counted
        in full) with a warning. Whether it was cancelled."""
        try:
            self.cancel(release_id)
        except (sqlite3.Error, OSError) as exc:
            warnings.warn(f"ledger {str(self._path)!r}: the hold of release #{release_id} "
                          f"could not be cancelled ({exc}); it stays 'pending' and counts "
                          "in full", RuntimeWarning, stacklevel=3)
            return False
        return True

    def accountant(self, *, capability: str = "api", unit: str | None = None,
                   relation: object = None, convert: bool = False,
                   output: str | None = None, pending: bool = False) -> LedgerAccountant:
        """A :class:`LedgerAccountant`: each ``spend`` is one atomic charge of this file.

        ``pending=True``: charges are recorded "pending" and closed when the accountant
        is used as a context manager (``with ledger.accountant(pending=True) as acct:``):
        "released" on success, "failed" on an exception (the charges stand).
        """
        return LedgerAccountant(self, capability=capability, unit=unit, relation=relation,
                                convert=convert, output=output, pending=pending)

    # -- reading ------------------------------------------------------------------------

    def get(self, release_id: int) -> LedgerRelease:
        """One release by id."""
        rows = self._store.rows("WHERE id = ?", (int(release_id),))
        if not rows:
            raise InvalidParameterError("release_id", release_id, "the id of a release")
        return rows[0]

    def releases(self) -> list[LedgerRelease]:
        """Every release, in charging order."""
        return self._store.rows("ORDER BY id", ())

    def status(self, *, pld: bool = True,
               discretization: float = PLD_DISCRETIZATION) -> BudgetStatus:
        """Spent and remaining budget (see :class:`BudgetStatus`).

        ``pld=True`` also composes the privacy loss distributions (identical events are
        self-composed once, so thousands of releases take seconds).
        """
        return ledger_status(self._rule, self._store, pld=pld, discretization=discretization)

    def report(self, *, pld: bool = True) -> str:
        """A multi-line report: totals, the three compositions, each release."""
        st = self.status(pld=pld)
        return format_report(self, st, self.releases())

    def spending_curve(self, *, pld_points: int = 0,
                       discretization: float = 1e-3) -> dict[str, np.ndarray]:
        """Cumulative spending after each release: ``time``, ``filter`` (the enforced
        figure, from the records stored with the rows) and ``basic`` eps; on a hybrid
        ledger also ``renyi``, the Renyi filter alone for comparison.

        ``pld_points > 0`` adds ``pld``: the PLD epsilon after that many releases spread
        evenly (the last included; NaN elsewhere; only when delta > 0), composed with a
        coarser ``discretization`` than :meth:`status` (still an upper bound).
        """
        return spending_curve(self._rule, self._store, pld_points=pld_points,
                              discretization=discretization)

    def plot(self, path: str | os.PathLike[str] | None = None) -> Any:
        """Spending over the releases: the enforced filter, basic composition and the
        total. Returns the matplotlib figure; writes it to ``path`` when given."""
        from privot.privacy.ledger_plot import plot_spending

        return plot_spending(self, path)


def _add_note(exc: BaseException, note: str) -> None:
    """``exc.add_note(note)`` where Python has it (3.11+); the note is shown with the
    traceback and in :attr:`BaseException.__notes__`."""
    if hasattr(exc, "add_note"):
        exc.add_note(note)
