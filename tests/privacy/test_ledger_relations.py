"""The ledger's conversions between units and relations, checked by brute force.

A release that is eps-DP for its relation R is k eps-DP (group privacy) for a ledger's
relation L when every L-neighbouring pair of datasets is joined by a chain of at most k
R-neighbouring steps. Here datasets are all multisets of at most four rows over three
users, two groups (a row is ``(user, group)``), and each relation is its definition as a
graph on them; :func:`privot.privacy.ledger.conversion_factor` must be

* an upper bound: every L-pair of datasets of at most three rows is within k R-steps
  (intermediate datasets of up to four rows);
* tight: some L-pair needs exactly k steps;
* and a refusal (None) must be necessary: some L-pair is not joined by R-steps at all
  (the relation keeps something public that L changes: the size, the user list, the
  group sizes), or only by as many steps as a user has rows (no constant k).

Issue 24, item 2: the ledger used to record a group-labelled release (barycenters,
learning: replace-one inside a group, group sizes public) on a plain replace-one ledger
as a group of 1, a user-level replace-one release on a row ledger as a group of 1, and a
user-level add/remove release on a row-level replace-one ledger as a group of 2.
Deterministic: no randomness, no false alarm.
"""

from __future__ import annotations

import itertools
from collections import Counter
from functools import cache

import pytest

from privot.privacy.ledger import RELATIONS, UNITS, conversion_factor

USERS = ("a", "b", "c")
GROUPS = (0, 1)
ROWS = tuple(itertools.product(USERS, GROUPS))
MAX_ROWS = 4  # datasets explored; the pairs checked have at most MAX_ROWS - 1 rows

Dataset = tuple  # a sorted tuple of rows (a multiset)


def _datasets() -> list[Dataset]:
    out = []
    for n in range(MAX_ROWS + 1):
        out += [tuple(c) for c in itertools.combinations_with_replacement(ROWS, n)]
    return out


ALL = _datasets()
SMALL = [d for d in ALL if len(d) < MAX_ROWS]


def _sorted(rows) -> Dataset:
    return tuple(sorted(rows))


def _users(d: Dataset) -> set[str]:
    return {u for u, _ in d}


def _without_user(d: Dataset, u: str) -> list:
    return [r for r in d if r[0] != u]


def _user_data(u: str, room: int) -> list[list]:
    """Every non-empty multiset of rows of user ``u`` with at most ``room`` rows."""
    mine = [r for r in ROWS if r[0] == u]
    return [list(c) for n in range(1, room + 1)
            for c in itertools.combinations_with_replacement(mine, n)]


@cache
def neighbours(unit: str, relation: str, d: Dataset) -> frozenset:
    """The datasets (at most MAX_ROWS rows) that are ``unit``/``relation`` neighbours
    of ``d``, by the relation's definition."""
    out = set()
    rows = list(d)
    if relation == "local":
        # a local release publishes one report per unit (their number is public) and
        # never the ids (privot sample: the multiset of reports): the randomisers are
        # exchangeable, so on what is published "any two inputs of one unit" is
        # replace-one of that unit
        relation = "replace-one"
    if unit == "row":
        if relation == "add-remove":
            out |= {_sorted(rows[:i] + rows[i + 1:]) for i in range(len(rows))}
            if len(d) < MAX_ROWS:
                out |= {_sorted(rows + [r]) for r in ROWS}
        elif relation in ("replace-one", "replace-one-in-group"):
            for i, old in enumerate(rows):
                for new in ROWS:
                    if relation == "replace-one-in-group" and new[1] != old[1]:
                        continue
                    out.add(_sorted(rows[:i] + [new] + rows[i + 1:]))
    else:
        present = _users(d)
        if relation == "add-remove":
            out |= {_sorted(_without_user(d, u)) for u in present}
            for v in set(USERS) - present:
                out |= {_sorted(rows + s) for s in _user_data(v, MAX_ROWS - len(d))}
        elif relation == "replace-one":  # one user's data by another user's (same count)
            for u in present:
                rest = _without_user(d, u)
                for v in (set(USERS) - _users(tuple(rest))):
                    out |= {_sorted(rest + s) for s in _user_data(v, MAX_ROWS - len(rest))}
        elif relation == "replace-one-in-group":  # ... keeping each of its rows' groups
            for u in present:
                rest = _without_user(d, u)
                groups = Counter(g for w, g in d if w == u)
                for v in (set(USERS) - _users(tuple(rest))):
                    out |= {_sorted(rest + s) for s in _user_data(v, MAX_ROWS - len(rest))
                            if Counter(g for _, g in s) == groups}
    out.discard(d)
    return frozenset(out)


@cache
def distances(unit: str, relation: str, d: Dataset) -> dict:
    """Breadth-first distances from ``d`` in the ``unit``/``relation`` graph."""
    dist = {d: 0}
    frontier = [d]
    while frontier:
        nxt = []
        for x in frontier:
            for y in neighbours(unit, relation, x):
                if y not in dist:
                    dist[y] = dist[x] + 1
                    nxt.append(y)
        frontier = nxt
    return dist


def worst_steps(release: tuple[str, str], ledger: tuple[str, str]) -> float:
    """The most release-steps any ledger-neighbouring pair of small datasets needs
    (``inf``: some pair is not joined at all)."""
    worst = 0.0
    for d in SMALL:
        dist = distances(*release, d)
        for e in neighbours(*ledger, d):
            if len(e) < MAX_ROWS:
                worst = max(worst, dist.get(e, float("inf")))
    return worst


RELEASES = [(u, r) for u in UNITS for r in (*RELATIONS, "local")]
LEDGERS = [(u, r) for u in UNITS for r in RELATIONS]


@pytest.mark.parametrize("ledger", LEDGERS, ids="/".join)
@pytest.mark.parametrize("release", RELEASES, ids="/".join)
def test_conversion_factor_is_what_the_relations_need(release, ledger):
    k = conversion_factor(*release, *ledger)
    need = worst_steps(release, ledger)
    if k is not None:
        assert need <= k, f"{release} on {ledger}: a pair needs {need} steps, k = {k}"
        assert need == k, f"{release} on {ledger}: k = {k} is loose (at most {need})"
    else:
        # refused: either no chain at all, or one as long as a user's rows (unbounded)
        assert need == float("inf") or need >= MAX_ROWS - 1, (
            f"{release} on {ledger} is refused but every pair is within {need} steps")


def test_the_issue_cases():
    # a group-labelled release (barycenters, learning) on a plain replace-one ledger:
    # a row that changes group changes the published group sizes
    assert conversion_factor("row", "replace-one-in-group", "row", "replace-one") is None
    assert conversion_factor("row", "replace-one-in-group", "row",
                             "replace-one-in-group") == 1
    # heatmaps (user add/remove) on a row-level replace-one ledger: a row may move
    # between two users
    assert conversion_factor("user", "add-remove", "row", "replace-one") == 4
    # a user-level replace-one or local release on a row ledger: a row may take a new
    # user id (the number of users, of reports, changes)
    assert conversion_factor("user", "replace-one", "row", "replace-one") is None
    assert conversion_factor("user", "local", "row", "replace-one") is None
