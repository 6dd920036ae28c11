"""A ledger's SQLite file: its schema, its transactions, its rows and running sums.

Every SQL statement of :mod:`privot.privacy.ledger` is here. The file holds three
tables: ``spec`` (everything fixed at creation, JSON values), ``releases`` (one row per
charge) and ``totals`` (the running sums over the rows, updated in the same
transactions as the rows, so that a charge reads one row instead of every release).
Each call opens its own short connection, so one store can be shared by threads and
many processes can use the same file; a write is one ``BEGIN IMMEDIATE`` transaction.

Privacy
-------
No noise: the store keeps what the ledger decided and nothing else.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sqlite3
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from privot.errors import InvalidParameterError
from privot.privacy._scopes import _jsonable
from privot.privacy.events import event_from_dict
from privot.privacy.ledger._records import LedgerRelease

__all__ = ["BUSY_TIMEOUT_S", "READABLE_VERSIONS", "SCHEMA_VERSION", "LedgerStore",
           "jsonable_params"]

SCHEMA_VERSION = "2"
#: File versions this code opens: "1" (written before the hybrid filter: its rows carry no
#: view and are read as Renyi-view rows, which is what they were) and "2".
READABLE_VERSIONS = ("1", "2")
BUSY_TIMEOUT_S = 120.0

_NOT_NEW = "a file that does not exist yet (a ledger is never re-initialised)"


class LedgerStore:
    """The SQLite file of one ledger.

    Parameters
    ----------
    path : path
        An existing ledger file (:meth:`create` makes one).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    # -- the file -----------------------------------------------------------------------

    @classmethod
    def create(cls, path: Path, spec: Mapping[str, Any]) -> LedgerStore:
        """Write a new ledger file holding ``spec`` and no release.

        Built under a temporary name and linked into place (atomic, and refusing an
        existing file: two inits racing cannot both succeed).
        """
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
                        (json.dumps([0.0] * len(spec["orders"])),))
            con.executemany("INSERT INTO spec VALUES (?, ?)",
                            [(k, json.dumps(v)) for k, v in spec.items()])
            con.execute("COMMIT")
        finally:
            con.close()
        try:
            os.link(tmp, path)  # atomic, and refuses an existing file (two inits racing)
        except FileExistsError as exc:
            raise InvalidParameterError("path", str(path), _NOT_NEW) from exc
        finally:
            tmp.unlink(missing_ok=True)
        return cls(path)

    @classmethod
    def read_spec(cls, path: Path) -> dict[str, Any]:
        """The spec of an existing ledger file of a readable version (a crashed writer's
        journal is rolled back)."""
        if not path.is_file():
            raise InvalidParameterError("ledger", str(path),
                                        "an existing ledger file (create one with "
                                        "'privot budget init PATH --epsilon E')")
        try:
            con = cls.connect(path)
            try:
                rows = con.execute("SELECT key, value FROM spec").fetchall()
            finally:
                con.close()
        except sqlite3.DatabaseError as exc:
            raise InvalidParameterError("ledger", str(path),
                                        f"a privot ledger file ({exc})") from exc
        spec = {k: json.loads(v) for k, v in rows}
        if spec.get("version") not in READABLE_VERSIONS:
            raise InvalidParameterError("ledger", str(path),
                                        f"a ledger of version {' or '.join(READABLE_VERSIONS)}"
                                        f" (this file says {spec.get('version')!r})")
        return spec

    @staticmethod
    def connect(path: Path) -> sqlite3.Connection:
        """A connection to ``path`` (autocommit, durable writes, waits for the lock)."""
        con = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        con.execute("PRAGMA synchronous=FULL")
        return con

    @contextlib.contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (``BEGIN IMMEDIATE``: SQLite's write lock, taken before
        anything is read), committed when the block ends and rolled back on an exception."""
        con = self.connect(self.path)
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

    # -- the running sums ---------------------------------------------------------------

    @staticmethod
    def state(con: sqlite3.Connection) -> dict[str, Any]:
        """The running sums (one row; read inside the caller's transaction)."""
        count, eps, dlt, approx, inf, unbounded, rdp = con.execute(
            "SELECT count, epsilon, delta, approx_delta, inf, unbounded, rdp "
            "FROM totals").fetchone()
        return {"rdp": np.asarray(json.loads(rdp), dtype=float),
                "inf": math.inf if unbounded else float(inf), "inf_finite": float(inf),
                "unbounded": int(unbounded), "eps": float(eps), "delta": float(dlt),
                "approx": float(approx), "count": int(count)}

    def read_state(self) -> dict[str, Any]:
        """The running sums, read now (outside any write transaction)."""
        con = self.connect(self.path)
        try:
            return self.state(con)
        finally:
            con.close()

    def add_to_totals(self, con: sqlite3.Connection, sign: int, epsilon: float,
                      delta: float, approx: float, rec: dict[str, Any]) -> None:
        """Add (``sign=+1``) or remove (``-1``) one row's contribution to the sums. The
        order-infinity sum keeps its finite part and a count of unbounded rows apart, so
        that removing an unbounded row is exact."""
        st = self.state(con)
        rdp = st["rdp"] + sign * np.asarray(rec["finite"], dtype=float)
        unbounded = not math.isfinite(rec["inf"])
        con.execute("UPDATE totals SET count = ?, epsilon = ?, delta = ?, approx_delta = ?, "
                    "inf = ?, unbounded = ?, rdp = ? WHERE id = 1",
                    (st["count"] + sign, st["eps"] + sign * epsilon,
                     st["delta"] + sign * delta, st["approx"] + sign * approx,
                     st["inf_finite"] + (0.0 if unbounded else sign * rec["inf"]),
                     st["unbounded"] + (sign if unbounded else 0),
                     json.dumps([float(x) for x in rdp])))

    def recomputed_state(self, n_orders: int) -> dict[str, Any]:
        """The sums recomputed from every release row (``n_orders`` finite Renyi orders)."""
        con = self.connect(self.path)
        try:
            rows = con.execute(
                "SELECT epsilon, delta, approx_delta, rdp FROM releases").fetchall()
        finally:
            con.close()
        rdp = np.zeros(n_orders)
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

    # -- the rows -----------------------------------------------------------------------

    @staticmethod
    def insert(con: sqlite3.Connection, row: tuple) -> int:
        """Insert one release row (the columns after ``id``, in order); its id."""
        cur = con.execute(
            "INSERT INTO releases (created, finished, status, capability, mechanism, "
            "unit, relation, conversion, epsilon, delta, approx_delta, rdp, event, "
            "params, output, pid, host) VALUES "
            "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", row)
        return int(cur.lastrowid)

    @staticmethod
    def stored_charge(con: sqlite3.Connection, release_id: int) -> dict[str, Any] | None:
        """What row ``release_id`` was charged (``status``, ``conversion``, ``epsilon``,
        ``delta``, ``approx_delta``, ``rdp`` record, ``event`` JSON), or None; read inside
        the caller's write transaction so that it cannot change before the rewrite."""
        found = con.execute("SELECT status, conversion, epsilon, delta, approx_delta, "
                            "rdp, event FROM releases WHERE id = ?",
                            (int(release_id),)).fetchone()
        if found is None:
            return None
        keys = ("status", "conversion", "epsilon", "delta", "approx_delta", "rdp", "event")
        return dict(zip(keys, found, strict=True))

    @staticmethod
    def update_pending(con: sqlite3.Connection, release_id: int,
                       sets: Mapping[str, Any]) -> None:
        """Set columns ``sets`` of row ``release_id`` if it is still pending."""
        con.execute(f"UPDATE releases SET {', '.join(f'{k} = ?' for k in sets)} "
                    "WHERE id = ? AND status = 'pending'",
                    (*sets.values(), int(release_id)))

    @staticmethod
    def delete_pending(con: sqlite3.Connection, release_id: int) -> None:
        """Remove row ``release_id`` if it is still pending."""
        con.execute("DELETE FROM releases WHERE id = ? AND status = 'pending'",
                    (int(release_id),))

    def rows(self, where: str, args: tuple) -> list[LedgerRelease]:
        """The release rows selected by SQL ``where`` (with ``args``)."""
        con = self.connect(self.path)
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

    def summary(self, *, views: bool) -> tuple[dict[str, Any], dict[str, int], dict[str, int]]:
        """In one read: the running sums, the number of rows by status, and (``views``:
        a hybrid ledger) by view."""
        con = self.connect(self.path)
        try:
            st = self.state(con)
            counts = dict(con.execute(
                "SELECT status, COUNT(*) FROM releases GROUP BY status").fetchall())
            by_view: dict[str, int] = {}
            if views:
                for (rec,) in con.execute("SELECT rdp FROM releases"):
                    view = json.loads(rec).get("view", "renyi")
                    by_view[view] = by_view.get(view, 0) + 1
        finally:
            con.close()
        return st, counts, by_view

    def stored_records(self) -> list[tuple[str, float]]:
        """Each row's stored Renyi record (JSON) and reserve delta, in charging order."""
        con = self.connect(self.path)
        try:
            return con.execute("SELECT rdp, approx_delta FROM releases ORDER BY id"
                               ).fetchall()
        finally:
            con.close()


def jsonable_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` as stored in a row: JSON values, others (and non-finite floats) as
    strings, sequences element by element."""
    out = {}
    for k, v in params.items():
        if isinstance(v, (list, tuple)):
            out[str(k)] = [_jsonable(x) for x in v]
        else:
            out[str(k)] = _jsonable(v)
    return out
