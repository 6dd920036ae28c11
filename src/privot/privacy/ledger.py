r"""One privacy budget per data set, across runs and capabilities: the budget ledger.

A ledger is one SQLite file (the standard library's ``sqlite3``: transactions, durable,
one file the curator keeps next to the data) holding a data set's total
``(epsilon, delta)``, its unit of privacy and neighbouring relation, and every release
charged to it: capability, mechanism, parameters, the event that ran
(:mod:`privot.privacy.events`), time and output folder.

Charging is check-and-record inside one write transaction (``BEGIN IMMEDIATE``), so two
processes charging the same file at once can never both pass the limit, and a charge
is committed before any noise is drawn. :meth:`Ledger.release` charges a whole release
up front ("pending"), hands the release an in-memory accountant of exactly that budget,
and afterwards records what actually ran ("released") or that it failed after drawing
noise ("failed"; the charge stands); a release that stopped before any noise is
cancelled (:meth:`Ledger.cancel`: it counts as nothing). A process killed in between
leaves the charge "pending": spent, never half written.

Composition (derivations in ``docs/privacy/budget.md``):

* ``filter="hybrid"`` (default when delta > 0): two filters side by side on one split of
  delta fixed at creation, the smaller enforced: basic composition of the (eps, delta)
  pairs the releases prove, their deltas within a reserve (half of delta by default),
  and the Renyi filter below with the rest of delta. A release proving (eps, delta),
  delta within the reserve, is charged eps on an empty ledger;
* ``filter="rdp"`` (the rule before, kept for comparison): a Renyi filter over a fixed
  grid of orders (Feldman and Zrnic 2021, Thm 3.1, at each order; a union bound over the
  orders; the order infinity is the pure-DP sum);
* ``filter="basic"``: sums of epsilons and deltas (Rogers et al. 2016's basic filter);
* all three are valid when each release and its parameters are chosen after seeing
  earlier answers (fully adaptive use);
* reported beside them: the privacy-loss-distribution composition (dp-accounting), the
  tight figure when the sequence of releases was fixed in advance; natural PLD filters
  are not valid under adaptive parameter choice, so it is shown, never enforced.

Units and relations must agree; :func:`conversion_factor` lists the documented
conversions a charge can ask for explicitly (``convert=True``).

Privacy
-------
The ledger adds no noise. Unit and relation: the ledger's, stated at creation; every
event is recorded under them (converted by group privacy where the caller asked).
Guarantee: everything released through the ledger is, jointly, ``(epsilon, delta)``-DP
for the ledger's unit and relation, under the filter named in the file.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import socket
import sqlite3
import time
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from privot._validation import check_delta, check_epsilon, check_probability
from privot.errors import BudgetExceededError, InvalidParameterError
from privot.privacy.budget import PrivacyAccountant, _jsonable
from privot.privacy.events import (
    PLD_DISCRETIZATION,
    ComposedEvent,
    PrivacyEvent,
    event_for_cost,
    event_from_dict,
)
from privot.privacy.types import Neighbouring, PrivacyCost

__all__ = ["BudgetStatus", "ChargePreview", "FILTERS", "HYBRID_APPROX_FRACTION", "LEDGER_ENV",
           "Ledger", "LedgerAccountant", "LedgerRelease", "ORDERS", "RELATIONS", "UNITS", "VIEWS",
           "accepting_ledgers", "conversion_factor", "split_budget"]

#: Environment variable naming the ledger every releasing command charges.
LEDGER_ENV = "PRIVOT_LEDGER"
UNITS = ("user", "row")
RELATIONS = ("add-remove", "replace-one", "replace-one-in-group")
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
STATUSES = ("pending", "released", "failed")
_SCHEMA_VERSION = "2"
#: File versions this code opens: "1" (written before the hybrid filter: its rows carry no
#: view and are read as Renyi-view rows, which is what they were) and "2".
_READABLE_VERSIONS = ("1", "2")
_BUSY_TIMEOUT_S = 120.0


def conversion_factor(unit: str, relation: str, ledger_unit: str,
                      ledger_relation: str) -> int | None:
    r"""Group size ``k`` that restates a release's guarantee for the ledger's, or None.

    ``u`` is either unit; "in-group" is ``replace-one-in-group`` (one unit replaced by
    another of its group, the group labels and sizes public).

    ====================  ==========================  ===  ==================================
    release               ledger                      k    why
    ====================  ==========================  ===  ==================================
    same                  same                        1    nothing to convert
    u, add-remove         u, replace-one or in-group  2    replace = remove then add
    u, replace-one        u, in-group                 1    an in-group change is a change
    u, local              u, replace-one or in-group  1    one randomiser's input changes
    user, add-remove      row, add-remove             2    a row added: a user added, or one
                                                           user's rows changed (2)
    user, add-remove      row, replace-one or         4    a replaced row may move from one
                          in-group                         user to another: two users'
                                                           rows change (2 each)
    anything else         --                          --   refused
    ====================  ==========================  ===  ==================================

    Refused, and why: a replace-one release on an add-remove ledger (the size of the data
    is not protected); an in-group release on a plain replace-one ledger (a replacement
    that changes a unit's group changes the published group sizes); a row-level release
    on a user ledger (a user may hold many rows); a user-level replace-one or local
    release on a row ledger (a replaced row may take a user id not in the data: the
    number of users, or of reports, changes, which neither release covers); a local
    release on an add-remove ledger (adding a user adds a report: participation is
    public in the local model). Reading a local release as replace-one takes its list of
    randomisers (the user list of ``privot sample``) as public and fixed: one report per
    listed user whatever their data (``docs/privacy/sampling.md``).
    """
    if (unit, relation) == (ledger_unit, ledger_relation):
        return 1
    replace = ("replace-one", "replace-one-in-group")
    if unit == ledger_unit:
        if relation in ("add-remove", "local") and ledger_relation in replace:
            return 2 if relation == "add-remove" else 1
        if (relation, ledger_relation) == ("replace-one", "replace-one-in-group"):
            return 1
        return None
    if (unit, ledger_unit, relation) == ("user", "row", "add-remove"):
        return 2 if ledger_relation == "add-remove" else 4
    return None


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


def _check_choice(value: object, name: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise InvalidParameterError(name, value, f"one of {list(allowed)}")
    return str(value)


def _relation_value(relation: object) -> str:
    if isinstance(relation, Neighbouring):
        return relation.value
    allowed = [r.value for r in Neighbouring]
    if relation not in allowed:
        raise InvalidParameterError("relation", relation, f"one of {allowed}")
    return str(relation)


class Ledger:
    """A data set's privacy budget, kept in one SQLite file.

    Create one with :meth:`create` (``privot budget init``), open it with :meth:`open`.
    Every method opens its own short connection, so a :class:`Ledger` object can be
    shared by threads and many processes can use the same file.
    """

    def __init__(self, path: str | os.PathLike[str], _spec: dict[str, Any]) -> None:
        self._path = Path(path)
        self._spec = _spec
        self._orders = np.asarray(_spec["orders"], dtype=float)

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
        unit = _check_choice(unit, "unit", UNITS)
        relation = _check_choice(_relation_value(relation), "relation", RELATIONS)
        filt = filter if filter is not None else ("hybrid" if dlt > 0 else "basic")
        filt = _check_choice(filt, "filter", FILTERS)
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
        spec = {"version": _SCHEMA_VERSION, "name": name, "epsilon": eps, "delta": dlt,
                "unit": unit, "relation": relation, "filter": filt,
                "approx_delta": frac * dlt, "orders": list(ORDERS), "created": time.time()}
        tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
        con = sqlite3.connect(tmp, isolation_level=None)
        try:
            con.execute("PRAGMA journal_mode=DELETE")
            con.execute("BEGIN")
            con.execute("CREATE TABLE spec (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            con.execute(
                "CREATE TABLE releases (id INTEGER PRIMARY KEY AUTOINCREMENT, "
                "created REAL NOT NULL, finished REAL, status TEXT NOT NULL CHECK (status "
                "IN ('pending', 'released', 'failed')), capability TEXT NOT NULL, "
                "mechanism TEXT NOT NULL, unit TEXT NOT NULL, relation TEXT NOT NULL, "
                "conversion INTEGER NOT NULL, epsilon REAL NOT NULL, delta REAL NOT NULL, "
                "approx_delta REAL NOT NULL, rdp TEXT NOT NULL, event TEXT NOT NULL, "
                "params TEXT NOT NULL, output TEXT, pid INTEGER, host TEXT)")
            # running sums over the rows, updated in the same transactions as the rows:
            # a charge reads one row instead of every release (tests check they agree)
            con.execute("CREATE TABLE totals (id INTEGER PRIMARY KEY CHECK (id = 1), "
                        "count INTEGER NOT NULL, epsilon REAL NOT NULL, delta REAL NOT NULL, "
                        "approx_delta REAL NOT NULL, inf REAL NOT NULL, "
                        "unbounded INTEGER NOT NULL, rdp TEXT NOT NULL)")
            con.execute("INSERT INTO totals VALUES (1, 0, 0.0, 0.0, 0.0, 0.0, 0, ?)",
                        (json.dumps([0.0] * len(ORDERS)),))
            con.executemany("INSERT INTO spec VALUES (?, ?)",
                            [(k, json.dumps(v)) for k, v in spec.items()])
            con.execute("COMMIT")
        finally:
            con.close()
        try:
            os.link(tmp, path)  # atomic, and refuses an existing file (two inits racing)
        except FileExistsError as exc:
            raise InvalidParameterError("path", str(path), "a file that does not exist "
                                        "yet (a ledger is never re-initialised)") from exc
        finally:
            tmp.unlink(missing_ok=True)
        return cls(path, spec)

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> Ledger:
        """Open an existing ledger file (a crashed writer's journal is rolled back)."""
        path = Path(path)
        if not path.is_file():
            raise InvalidParameterError("ledger", str(path),
                                        "an existing ledger file (create one with "
                                        "'privot budget init PATH --epsilon E')")
        try:
            con = cls._connect(path)
            try:
                rows = con.execute("SELECT key, value FROM spec").fetchall()
            finally:
                con.close()
        except sqlite3.DatabaseError as exc:
            raise InvalidParameterError("ledger", str(path),
                                        f"a privot ledger file ({exc})") from exc
        spec = {k: json.loads(v) for k, v in rows}
        if spec.get("version") not in _READABLE_VERSIONS:
            raise InvalidParameterError("ledger", str(path),
                                        f"a ledger of version {' or '.join(_READABLE_VERSIONS)}"
                                        f" (this file says {spec.get('version')!r})")
        if spec.get("filter") not in FILTERS:
            raise InvalidParameterError("ledger", str(path),
                                        f"a ledger whose filter is one of {list(FILTERS)} "
                                        f"(this file says {spec.get('filter')!r})")
        return cls(path, spec)

    @staticmethod
    def _connect(path: Path) -> sqlite3.Connection:
        con = sqlite3.connect(path, timeout=_BUSY_TIMEOUT_S, isolation_level=None)
        con.execute("PRAGMA synchronous=FULL")
        return con

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (``BEGIN IMMEDIATE``: SQLite's write lock, taken before
        anything is read), committed when the block ends and rolled back on an exception."""
        con = self._connect(self._path)
        try:
            con.execute("BEGIN IMMEDIATE")
            try:
                yield con
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise
        finally:
            con.close()

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

    def _filter_epsilon(self, rdp_sum: np.ndarray, inf_sum: float, approx_used: float,
                        reserve: float | None = None) -> tuple[float, float | None]:
        """The filter's epsilon at the ledger's delta and the order giving it (``reserve``:
        another split of delta than the file's, for comparisons only)."""
        eps_t, dlt_t = self.total
        if self.filter == "basic":
            return math.nan, None
        best, order = inf_sum, (math.inf if math.isfinite(inf_sum) else None)
        if reserve is None:
            reserve = float(self._spec["approx_delta"])
        dlt_r = dlt_t - reserve
        if dlt_r > 0 and approx_used <= reserve * (1 + RELATIVE_TOLERANCE):
            cand = rdp_sum + _conversion_offset(self._orders, dlt_r)
            i = int(np.argmin(cand))
            if cand[i] < best:
                best, order = float(cand[i]), float(self._orders[i])
        return best, order

    def _enforced(self, st: Mapping[str, Any]) -> tuple[float, float | None, str]:
        """The enforced epsilon of a state (running sums ``rdp``, ``inf``, ``approx``,
        ``eps``, ``delta``, ``count``), the Renyi order giving it (``inf``: the pure sum;
        None otherwise) and the route: ``"basic"``, ``"renyi"`` or ``"none"``.

        ``"basic"`` ledgers: the epsilon sum. ``"rdp"``: the Renyi filter. ``"hybrid"``:
        the smaller of the Renyi filter (delta minus the reserve converting its sums) and,
        while it is open, the basic route (the epsilon sum, every delta in the reserve).
        """
        if self.filter == "basic":
            return float(st["eps"]), None, "basic"
        spent, order = self._filter_epsilon(st["rdp"], st["inf"], st["approx"])
        route = "renyi" if math.isfinite(spent) else "none"
        if (self.filter == "hybrid" and self._basic_route_open(st)
                and st["approx"] <= self._reserve_limit() and st["eps"] <= spent):
            return float(st["eps"]), None, "basic"
        return spent, order, route

    def _reserve_limit(self) -> float:
        return float(self._spec["approx_delta"]) * (1 + RELATIVE_TOLERANCE)

    def _state(self, con: sqlite3.Connection) -> dict[str, Any]:
        """The running sums (one row; read inside the caller's transaction)."""
        count, eps, dlt, approx, inf, unbounded, rdp = con.execute(
            "SELECT count, epsilon, delta, approx_delta, inf, unbounded, rdp "
            "FROM totals").fetchone()
        return {"rdp": np.asarray(json.loads(rdp), dtype=float),
                "inf": math.inf if unbounded else float(inf), "inf_finite": float(inf),
                "unbounded": int(unbounded), "eps": float(eps), "delta": float(dlt),
                "approx": float(approx), "count": int(count)}

    def _add_to_totals(self, con: sqlite3.Connection, sign: int, epsilon: float,
                       delta: float, approx: float, rec: dict[str, Any]) -> None:
        """Add (``sign=+1``) or remove (``-1``) one row's contribution to the sums. The
        order-infinity sum keeps its finite part and a count of unbounded rows apart, so
        that removing an unbounded row is exact."""
        st = self._state(con)
        rdp = st["rdp"] + sign * np.asarray(rec["finite"], dtype=float)
        unbounded = not math.isfinite(rec["inf"])
        con.execute("UPDATE totals SET count = ?, epsilon = ?, delta = ?, approx_delta = ?, "
                    "inf = ?, unbounded = ?, rdp = ? WHERE id = 1",
                    (st["count"] + sign, st["eps"] + sign * epsilon,
                     st["delta"] + sign * delta, st["approx"] + sign * approx,
                     st["inf_finite"] + (0.0 if unbounded else sign * rec["inf"]),
                     st["unbounded"] + (sign if unbounded else 0),
                     json.dumps([float(x) for x in rdp])))

    def recomputed_state(self) -> dict[str, Any]:
        """The sums recomputed from every release row (:meth:`status` reads the running
        sums; this checks them)."""
        con = self._connect(self._path)
        try:
            rows = con.execute(
                "SELECT epsilon, delta, approx_delta, rdp FROM releases").fetchall()
        finally:
            con.close()
        rdp = np.zeros(self._orders.size)
        inf_sum, eps_b, dlt_b, approx = 0.0, [], [], []
        for eps, dlt, apx, r in rows:
            vec = json.loads(r)
            rdp = rdp + np.asarray(vec["finite"], dtype=float)
            inf_sum += float(vec["inf"])
            eps_b.append(eps)
            dlt_b.append(dlt)
            approx.append(apx)
        return {"rdp": rdp, "inf": inf_sum, "eps": math.fsum(eps_b),
                "delta": math.fsum(dlt_b), "approx": math.fsum(approx), "count": len(rows)}

    def _rdp_record(self, event: PrivacyEvent) -> dict[str, Any]:
        finite = event.rdp(self._orders)
        # order infinity: the max divergence, finite only for pure (or approx-as-pure) parts
        inf = math.fsum(e.basic()[0] if e.kind in ("pure", "approx") else math.inf
                        for e in event.parts())
        return {"finite": [float(x) for x in finite], "inf": inf}

    def _basic_route_open(self, state: dict[str, Any]) -> bool:
        """Whether a hybrid ledger's basic route is still open: every row so far took its
        whole delta from the reserve (so the reserve's running sum equals the delta sum,
        to the ledger's relative tolerance) and the epsilon sum is within the total."""
        if state["count"] == 0:
            return True
        tol = 1 + RELATIVE_TOLERANCE
        return (state["delta"] <= state["approx"] * tol
                and state["eps"] <= self.total[0] * tol)

    def _charge_record(self, state: dict[str, Any], event: PrivacyEvent
                       ) -> tuple[dict[str, Any], float, str | None]:
        """The record a new charge of ``event`` gets, the delta it takes from the reserve,
        and why it breaks the limit (None when it fits). Read inside the charging
        transaction.

        Every row records the event's Renyi curve (:meth:`_rdp_record`). On a hybrid
        ledger the row also enters the *basic route* when that route is still open and
        the release's whole (eps, delta) pair fits in it (its delta within the reserve,
        the epsilon sum within the total): it then takes its whole delta from the
        reserve (``view="basic"``); otherwise only its approx parts' delta
        (``view="renyi"``). Decided here, before the release runs, from the public state
        and the event alone (``docs/privacy/budget.md``, "The hybrid filter").
        """
        rec = self._rdp_record(event)
        if self.filter != "hybrid":
            apx = event.approx_delta()
            return rec, apx, self._over(state, event, rec, apx)
        tol = 1 + RELATIVE_TOLERANCE
        e, d = event.basic()
        reserve = float(self._spec["approx_delta"])
        open_before = self._basic_route_open(state)
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
        renyi, _ = self._filter_epsilon(state["rdp"] + np.asarray(rec["finite"]),
                                        state["inf"] + rec["inf"], state["approx"] + apx)
        if basic:
            rec["why"] = (f"(eps, delta) pair in the basic route (reserve "
                          f"{state['approx'] + apx:.3g} of {reserve:.3g}): after it the "
                          f"basic route reads eps {state['eps'] + e:.6g}, the Renyi filter "
                          f"{renyi:.6g}")
        else:
            rec["why"] = f"Renyi curve only ({reason}): the Renyi filter reads {renyi:.6g}"
        return rec, apx, self._over(state, event, rec, apx)

    def _rerecord(self, event: PrivacyEvent, old_rec: dict[str, Any]
                  ) -> tuple[dict[str, Any], float]:
        """The record of what a pending row actually ran (for :meth:`finish`) and the
        delta it takes from the reserve, keeping the route the row was charged in: a row
        in the basic route keeps its whole delta in the reserve (the delta of what ran,
        at most what was charged), other rows their approx parts' delta. (Dropping a row
        from the basic route afterwards would be safe -- it only closes that route --
        but would lose it.)"""
        rec = self._rdp_record(event)
        view = old_rec.get("view")
        if view is None:
            return rec, event.approx_delta()
        rec["view"] = view
        if "why" in old_rec:
            rec["why"] = old_rec["why"]
        return rec, (event.basic()[1] if view == "basic" else event.approx_delta())

    def _over(self, state: dict[str, Any], event: PrivacyEvent,
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
        reserve = float(self._spec["approx_delta"])
        if approx > reserve * tol:
            return (f"the delta it takes from the reserve would reach {approx:.3g} but the "
                    f"ledger reserved {reserve:.3g} for releases charged by their (eps, "
                    "delta) pair (create the ledger with --approx-delta, or with --filter "
                    "basic)")
        new = {"rdp": state["rdp"] + np.asarray(rec["finite"]),
               "inf": state["inf"] + rec["inf"], "approx": approx,
               "eps": state["eps"] + e_new, "delta": state["delta"] + d_new,
               "count": state["count"] + 1}
        spent, _, _ = self._enforced(new)
        if spent > eps_t * tol:
            before, _, _ = self._enforced(state)
            detail = ""
            if self.filter == "hybrid":
                renyi, _ = self._filter_epsilon(new["rdp"], new["inf"], new["approx"])
                basic = (f"{new['eps']:.6g}" if rec.get("view") == "basic"
                         else "closed: " + rec.get("why", "").partition("(")[2].partition(
                             ")")[0])
                detail = f": Renyi filter {renyi:.6g}, basic route {basic}"
            return (f"the {_filter_name(self.filter)} would reach eps={spent:.6g} at "
                    f"delta={dlt_t:.3g}{detail} (already spent eps={before:.6g})")
        return None

    # -- charging -----------------------------------------------------------------------

    def _resolve(self, event: PrivacyEvent, unit: str | None, relation: object,
                 convert: bool) -> tuple[PrivacyEvent, str, str, int]:
        if not isinstance(event, PrivacyEvent):
            raise InvalidParameterError("event", event, "a privot.privacy.events.PrivacyEvent")
        unit = self.unit if unit is None else _check_choice(unit, "unit", UNITS)
        rel = self.relation if relation is None else _relation_value(relation)
        k = conversion_factor(unit, rel, self.unit, self.relation)
        if k is None:
            raise InvalidParameterError(
                "relation", f"{unit}/{rel}", "a release this ledger can record",
                message=f"ledger {self.name!r} is {self.unit}-level {self.relation} and "
                        f"cannot record a {unit}-level {rel} release: no documented "
                        "conversion leads there (docs/privacy/budget.md); nothing was "
                        f"charged. A ledger of {accepting_ledgers(unit, rel)} would "
                        "record it.")
        if k > 1 and not convert:  # a group of 1 restates nothing: no consent needed
            raise InvalidParameterError(
                "convert", False, f"True to record it as a group of {k}",
                message=f"a {unit}-level {rel} release counts as a group of {k} on ledger "
                        f"{self.name!r} ({self.unit}-level {self.relation}): its epsilon "
                        f"would be charged {k} times (docs/privacy/budget.md); nothing was "
                        "charged. Pass convert=True (--convert) to record it so, or use a "
                        f"ledger of {accepting_ledgers(unit, rel, group=1)}.")
        return event.grouped(k), unit, rel, k

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
        with self._write() as con:
            # the record depends on the spending so far (a hybrid ledger's view): chosen
            # under the write lock, from public state only, before the release runs
            rec, apx, why = self._charge_record(self._state(con), ev)
            now = time.time()
            row = (now, now if status == "released" else None, status, capability,
                   mechanism, unit, rel, k, eps, dlt, apx, json.dumps(rec),
                   json.dumps(ev.to_dict()), json.dumps(_jsonable_params(params or {})),
                   None if output is None else str(output), os.getpid(),
                   socket.gethostname())
            if why is not None:
                raise BudgetExceededError(
                    f"ledger {str(self._path)!r} ({self.name}, total eps={self.total[0]:g}, "
                    f"delta={self.total[1]:g}) refuses {capability} {mechanism!r} asking "
                    f"{ev.describe()}: {why}; nothing was recorded")
            cur = con.execute(
                "INSERT INTO releases (created, finished, status, capability, mechanism, "
                "unit, relation, conversion, epsilon, delta, approx_delta, rdp, event, "
                "params, output, pid, host) VALUES "
                "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", row)
            rid = int(cur.lastrowid)
            self._add_to_totals(con, +1, eps, dlt, apx, rec)
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
        con = self._connect(self._path)
        try:
            return self._state(con)
        finally:
            con.close()

    def _plan_from(self, state: dict[str, Any], events: list[PrivacyEvent | PrivacyCost], *,
                   unit: str | None, relation: object, convert: bool
                   ) -> list[ChargePreview]:
        """:meth:`plan` from the running sums ``state`` (read once by the caller)."""
        out = []
        for raw in events:
            ev = event_for_cost(raw, "plan") if isinstance(raw, PrivacyCost) else raw
            ev, _, _, k = self._resolve(ev, unit, relation, convert)
            rec, apx, why = self._charge_record(state, ev)
            before = self._enforced(state)[0]
            after_state = _added(state, ev, rec, apx)
            after = self._enforced(after_state)[0]
            eps_t = self.total[0]
            out.append(ChargePreview(
                accepted=why is None, reason=why, event=ev, conversion=k,
                view=rec.get("view"), spent_before=before, spent_after=after,
                remaining_after=max(0.0, eps_t - (after if why is None else before))))
            if why is None:
                state = after_state
        return out

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
        with self._write() as con:
            # read and rewrite under the write lock: a row closed meanwhile by
            # another process is never rewritten
            found = con.execute("SELECT status, conversion, epsilon, delta, approx_delta, "
                                "rdp, event FROM releases WHERE id = ?",
                                (int(release_id),)).fetchone()
            if found is None or found[0] != "pending":
                raise InvalidParameterError("release_id", release_id,
                                            "the id of a pending release")
            _, conversion, old_eps, old_dlt, old_apx, old_rdp, old_event = found
            sets: dict[str, Any] = {"status": status, "finished": time.time()}
            if output is not None:
                sets["output"] = str(output)
            old_rec = json.loads(old_rdp)
            if event is not None and status == "released":
                ev = event.grouped(conversion)
                rec, apx = self._rerecord(ev, old_rec)  # keeps the row's route
                e, d = ev.basic()
                if not _no_larger(e, d, apx, rec, old_eps, old_dlt, old_apx, old_rec):
                    warnings.warn(
                        f"ledger {str(self._path)!r}: release #{release_id} ran "
                        f"{ev.describe()}, more than it was charged; recorded as it ran, "
                        "so the ledger may now be past its total", RuntimeWarning,
                        stacklevel=3)
                sets.update(event=json.dumps(ev.to_dict()), rdp=json.dumps(rec),
                            epsilon=e, delta=d, approx_delta=apx)
                self._add_to_totals(con, -1, old_eps, old_dlt, old_apx, old_rec)
                self._add_to_totals(con, +1, e, d, apx, rec)
            con.execute(f"UPDATE releases SET {', '.join(f'{k} = ?' for k in sets)} "
                        "WHERE id = ? AND status = 'pending'",
                        (*sets.values(), int(release_id)))
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
        held = self._rows("WHERE id = ? AND status = 'pending'", (int(release_id),))
        if not held:
            raise InvalidParameterError("release_id", release_id, "the id of a pending release")
        with self._write() as con:
            found = con.execute("SELECT status, epsilon, delta, approx_delta, rdp FROM "
                                "releases WHERE id = ?", (int(release_id),)).fetchone()
            if found is None or found[0] != "pending":
                raise InvalidParameterError("release_id", release_id,
                                            "the id of a pending release")
            _, eps, dlt, apx, rdp = found
            self._add_to_totals(con, -1, eps, dlt, apx, json.loads(rdp))
            con.execute("DELETE FROM releases WHERE id = ? AND status = 'pending'",
                        (int(release_id),))
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
        acct = _ReleaseAccountant(self, event.grouped(entry.conversion), entry.conversion,
                                  eps, dlt, name=capability)
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
        rows = self._rows("WHERE id = ?", (int(release_id),))
        if not rows:
            raise InvalidParameterError("release_id", release_id, "the id of a release")
        return rows[0]

    def releases(self) -> list[LedgerRelease]:
        """Every release, in charging order."""
        return self._rows("ORDER BY id", ())

    def _rows(self, where: str, args: tuple) -> list[LedgerRelease]:
        con = self._connect(self._path)
        try:
            rows = con.execute(
                "SELECT id, created, finished, status, capability, mechanism, unit, "
                f"relation, conversion, epsilon, delta, event, params, output, pid, host, "
                f"rdp FROM releases {where}", args).fetchall()
        finally:
            con.close()
        out = []
        for r in rows:
            rec = json.loads(r[16])
            out.append(LedgerRelease(id=r[0], created=r[1], finished=r[2], status=r[3],
                                     capability=r[4], mechanism=r[5], unit=r[6],
                                     relation=r[7], conversion=r[8], epsilon=r[9],
                                     delta=r[10], event=event_from_dict(json.loads(r[11])),
                                     params=json.loads(r[12]), output=r[13], pid=r[14],
                                     host=r[15], view=rec.get("view"),
                                     view_reason=rec.get("why")))
        return out

    def status(self, *, pld: bool = True,
               discretization: float = PLD_DISCRETIZATION) -> BudgetStatus:
        """Spent and remaining budget (see :class:`BudgetStatus`).

        ``pld=True`` also composes the privacy loss distributions (identical events are
        self-composed once, so thousands of releases take seconds).
        """
        con = self._connect(self._path)
        try:
            st = self._state(con)
            counts = dict(con.execute(
                "SELECT status, COUNT(*) FROM releases GROUP BY status").fetchall())
            by_view: dict[str, int] = {}
            if self.filter == "hybrid":
                for (rec,) in con.execute("SELECT rdp FROM releases"):
                    view = json.loads(rec).get("view", "renyi")
                    by_view[view] = by_view.get(view, 0) + 1
        finally:
            con.close()
        eps_t, dlt_t = self.total
        spent, order, route = self._enforced(st)
        pld_eps = renyi_eps = None
        if pld and dlt_t > 0 and st["count"]:
            events = [r.event for r in self.releases()]
            pld_eps = pld_epsilon(events, dlt_t, discretization)
            # the discretisation can put a pure composition a hair above its exact sum,
            # itself a valid bound at every delta: report the smaller
            pld_eps = min(pld_eps, st["inf"])
            if self.filter == "hybrid":
                renyi_eps = float(self._renyi_only_curve(events)[-1])
        return BudgetStatus(total=(eps_t, dlt_t), filter=self.filter, spent_epsilon=spent,
                            remaining_epsilon=max(0.0, eps_t - spent),
                            basic=(st["eps"], st["delta"]), pld_epsilon=pld_eps,
                            best_order=order,
                            approx_delta=(st["approx"], float(self._spec["approx_delta"])),
                            releases=st["count"], by_status=counts,
                            renyi_epsilon=renyi_eps, by_view=by_view, route=route)

    def _renyi_only_curve(self, events: list[PrivacyEvent]) -> np.ndarray:
        """For comparison on a hybrid ledger: the Renyi filter alone (``filter="rdp"``)
        after each of ``events``, each by its Renyi curve; all of delta converts the sums
        unless a release has approx parts (then they take the file's reserve)."""
        if not events:
            return np.zeros(0)
        apx = np.cumsum([e.approx_delta() for e in events])
        reserve = float(self._spec["approx_delta"]) if apx[-1] > 0 else 0.0
        rdp, inf_sum, out = np.zeros(self._orders.size), 0.0, []
        for ev, used in zip(events, apx, strict=True):
            rec = self._rdp_record(ev)
            rdp = rdp + np.asarray(rec["finite"], dtype=float)
            inf_sum += rec["inf"]
            out.append(math.inf if used > reserve * (1 + RELATIVE_TOLERANCE)
                       else self._filter_epsilon(rdp, inf_sum, float(used), reserve)[0])
        return np.asarray(out, dtype=float)

    def report(self, *, pld: bool = True) -> str:
        """A multi-line report: totals, the three compositions, each release."""
        st = self.status(pld=pld)
        eps_t, dlt_t = self.total
        how = {"basic": ", by its basic route (the sum of epsilons)",
               "renyi": ", by its Renyi filter"}.get(st.route or "", "") \
            if self.filter == "hybrid" else ""
        lines = [f"Ledger {self.name!r} ({self._path}): {self.unit}-level, {self.relation}",
                 f"  total:      eps={eps_t:g}, delta={dlt_t:g}",
                 f"  spent:      eps={st.spent_epsilon:.6g} ({_filter_name(self.filter)}{how}; "
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
        for r in self.releases():
            when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.created))
            conv = f", as a group of {r.conversion} from {r.unit}/{r.relation}" \
                if (r.unit, r.relation) != (self.unit, self.relation) else ""
            note = " (not finished: the process may have died; the charge stands)" \
                if r.status == "pending" else ""
            view = {"basic": "; (eps, delta) in the basic route",
                    "renyi": "; Renyi curve only"}.get(r.view or "", "")
            lines.append(f"  #{r.id} {when} {r.capability} {r.mechanism} [{r.status}{note}]: "
                         f"eps={r.epsilon:.6g}, delta={r.delta:.3g}{conv}{view}; "
                         f"{r.event.describe()}" + (f" -> {r.output}" if r.output else ""))
        return "\n".join(lines)

    def spending_curve(self, *, pld_points: int = 0,
                       discretization: float = 1e-3) -> dict[str, np.ndarray]:
        """Cumulative spending after each release: ``time``, ``filter`` (the enforced
        figure, from the records stored with the rows) and ``basic`` eps; on a hybrid
        ledger also ``renyi``, the Renyi filter alone for comparison.

        ``pld_points > 0`` adds ``pld``: the PLD epsilon after that many releases spread
        evenly (the last included; NaN elsewhere; only when delta > 0), composed with a
        coarser ``discretization`` than :meth:`status` (still an upper bound).
        """
        rels = self.releases()
        # the Renyi records the filter summed, as stored with each row (not recomputed)
        con = self._connect(self._path)
        try:
            stored = con.execute("SELECT rdp, approx_delta FROM releases ORDER BY id"
                                 ).fetchall()
        finally:
            con.close()
        st: dict[str, Any] = {"rdp": np.zeros(self._orders.size), "inf": 0.0,
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
            basic, f = st["eps"], self._enforced(st)[0]
            out["time"].append(r.created)
            out["filter"].append(f)
            out["basic"].append(basic)
        curve = {k: np.asarray(v, dtype=float) for k, v in out.items()}
        if self.filter == "hybrid":
            curve["renyi"] = self._renyi_only_curve([r.event for r in rels])
        if pld_points > 0 and self.total[1] > 0:
            pld = np.full(len(rels), np.nan)
            ends = np.unique(np.linspace(len(rels), 0, pld_points, endpoint=False)
                             .round().astype(int))
            events = [r.event for r in rels]
            for e in ends[ends > 0]:
                pld[e - 1] = pld_epsilon(events[:e], self.total[1], discretization)
            curve["pld"] = pld
        return curve

    def plot(self, path: str | os.PathLike[str] | None = None):
        """Spending over the releases: the enforced filter, basic composition and the
        total. Returns the matplotlib figure; writes it to ``path`` when given."""
        from privot.privacy.ledger_plot import plot_spending

        return plot_spending(self, path)


def accepting_ledgers(unit: str, relation: str, *, group: int | None = None) -> str:
    """In words, the ledgers (unit and relation) that record a ``unit``/``relation``
    release, with their group factor (:func:`conversion_factor`); only those of factor
    ``group`` when given. For refusals that say what would work."""
    found = [(u, r, conversion_factor(unit, relation, u, r))
             for u in UNITS for r in RELATIONS]
    names = [f"unit {u}, relation {r}" + ("" if k == 1 else f" (a group of {k})")
             for u, r, k in found if k is not None and group in (None, k)]
    if not names:
        return "no unit and relation privot knows (docs/privacy/budget.md)"
    return " or ".join(names) + " (privot budget init FILE --unit U --relation R)"


def _added(state: Mapping[str, Any], event: PrivacyEvent, rec: Mapping[str, Any],
           approx: float) -> dict[str, Any]:
    """The running sums of ``state`` with one more row (``event`` recorded as ``rec``,
    taking ``approx`` from the reserve), as :meth:`Ledger._add_to_totals` would write
    them."""
    eps, dlt = event.basic()
    unbounded = not math.isfinite(rec["inf"])
    inf_finite = state["inf_finite"] + (0.0 if unbounded else rec["inf"])
    n_unbounded = state["unbounded"] + (1 if unbounded else 0)
    return {"rdp": state["rdp"] + np.asarray(rec["finite"], dtype=float),
            "inf": math.inf if n_unbounded else inf_finite, "inf_finite": inf_finite,
            "unbounded": n_unbounded, "eps": state["eps"] + eps,
            "delta": state["delta"] + dlt, "approx": state["approx"] + approx,
            "count": state["count"] + 1}


def split_budget(ledger: Ledger, weights: list[float], *, delta_each: float = 0.0,
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
    from privot.privacy.events import ApproxEvent, PureEvent

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


def _add_note(exc: BaseException, note: str) -> None:
    """``exc.add_note(note)`` where Python has it (3.11+); the note is shown with the
    traceback and in :attr:`BaseException.__notes__`."""
    if hasattr(exc, "add_note"):
        exc.add_note(note)


def _no_larger(eps: float, delta: float, approx: float, rec: dict[str, Any],
               old_eps: float, old_delta: float, old_approx: float,
               old_rec: dict[str, Any]) -> bool:
    """Whether a description is no larger than another in every part (basic pair, approx
    delta, each Renyi order and infinity), up to 1e-9 relative."""
    tol = 1 + 1e-9
    return (eps <= old_eps * tol and delta <= old_delta * tol
            and approx <= old_approx * tol and rec["inf"] <= old_rec["inf"] * tol
            and all(a <= b * tol + 1e-15
                    for a, b in zip(rec["finite"], old_rec["finite"], strict=True)))


def _conversion_offset(orders: np.ndarray, delta: float) -> np.ndarray:
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


def _filter_name(filt: str) -> str:
    return {"hybrid": "hybrid filter", "rdp": "Renyi filter"}.get(filt, "basic composition")


def _jsonable_params(params: Mapping[str, Any]) -> dict[str, Any]:
    out = {}
    for k, v in params.items():
        if isinstance(v, (list, tuple)):
            out[str(k)] = [_jsonable(x) for x in v]
        else:
            out[str(k)] = _jsonable(v)
    return out


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


class _ReleaseAccountant(PrivacyAccountant):
    """The in-memory accountant of one :meth:`Ledger.release`: besides its basic total,
    it refuses, before the piece's noise, any piece after which what ran would exceed
    the charged event in any description (so the row can always record what ran)."""

    def __init__(self, ledger: Ledger, hold: PrivacyEvent, conversion: int,
                 epsilon: float, delta: float, *, name: str) -> None:
        super().__init__(epsilon, delta, name=name)
        self._owner = ledger
        self._hold = hold
        self._hold_rec = ledger._rdp_record(hold)  # noqa: SLF001
        self._conversion = conversion

    def spend(self, cost: PrivacyCost, *, mechanism: str,
              relation: Neighbouring = Neighbouring.ADD_REMOVE,
              params: Mapping[str, Any] | None = None) -> Any:
        if isinstance(cost, PrivacyCost):
            pieces = [event_for_cost(e.cost, e.mechanism) for e in self.ledger]
            ran = ComposedEvent((*pieces, event_for_cost(cost, mechanism))).grouped(
                self._conversion)
            rec = self._owner._rdp_record(ran)  # noqa: SLF001
            e, d = ran.basic()
            h_e, h_d = self._hold.basic()
            if not _no_larger(e, d, ran.approx_delta(), rec, h_e, h_d,
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

    def __init__(self, ledger: Ledger, *, capability: str, unit: str | None,
                 relation: object, convert: bool, output: str | None,
                 pending: bool = False) -> None:
        self._ledger = ledger
        self._pending = bool(pending)
        self._open: list[int] = []
        self._capability = capability
        self._unit = unit
        self._relation = None if relation is None else _relation_value(relation)
        self._convert = convert
        self._output = output

    @property
    def ledger(self) -> Ledger:
        return self._ledger

    def spend(self, cost: PrivacyCost, *, mechanism: str,
              relation: Neighbouring = Neighbouring.ADD_REMOVE,
              params: Mapping[str, Any] | None = None) -> LedgerRelease:
        """Charge ``cost`` (its event) to the ledger, or raise before anything is recorded."""
        if not isinstance(cost, PrivacyCost):
            raise InvalidParameterError("cost", cost, "a privot.privacy.types.PrivacyCost")
        rel = _relation_value(relation)
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
