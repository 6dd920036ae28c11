"""The in-memory accountant: a budget with hierarchical scopes and atomic refusal.

:class:`ScopedAccountant` is everything :class:`~privot.privacy.budget.PrivacyAccountant`
does in memory (charging, scopes, reports); the public class adds only the opener of a
budget ledger file. It lives here, below both :mod:`privot.privacy.budget` and
:mod:`privot.privacy.ledger`, because the ledger runs one of these for each release it
holds (``Ledger.release``) while ``PrivacyAccountant.open`` opens a ledger: with the
accountant in either module the two would import each other.
Derivations and the tolerance rule are in ``docs/privacy/budget.md``.

Privacy
-------
The accountant adds no noise; see :class:`~privot.privacy.budget.PrivacyAccountant`.
"""

from __future__ import annotations

import contextlib
import json
import math
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from privot._validation import (
    check_delta,
    check_epsilon,
    check_nonnegative,
    check_probability,
)
from privot.errors import BudgetExceededError, InvalidParameterError
from privot.privacy.accounting import gdp_compose, gdp_to_epsilon
from privot.privacy.types import Neighbouring, PrivacyCost

__all__ = ["BudgetAmount", "COMPOSITIONS", "LedgerEntry", "RELATIVE_TOLERANCE", "ScopedAccountant"]

#: Relative slack allowed when comparing the composed spending with the total, so that
#: e.g. ten charges of ``total/10`` are accepted despite rounding. At most
#: ``1e-12 * total`` can slip through.
RELATIVE_TOLERANCE = 1e-12

COMPOSITIONS = ("basic", "gdp")


@dataclass(frozen=True)
class BudgetAmount:
    """An ``(epsilon, delta)`` pair of spent or remaining budget (zero allowed)."""

    epsilon: float
    delta: float = 0.0

    def __str__(self) -> str:
        return f"eps={self.epsilon:.6g}, delta={self.delta:.3g}"

    def to_dict(self) -> dict[str, float]:
        """``{"epsilon": ..., "delta": ...}``."""
        return {"epsilon": self.epsilon, "delta": self.delta}


@dataclass(frozen=True)
class LedgerEntry:
    """One recorded release.

    Attributes
    ----------
    order : int
        Position in the root ledger (0, 1, ...), shared by all scopes.
    mechanism : str
        Name of the mechanism that released.
    relation : Neighbouring
        The neighbouring relation the cost is stated for.
    cost : PrivacyCost
        Epsilon, delta and, when known, the GDP ``mu``.
    params : Mapping[str, Any]
        Calibration details (noise scale, sensitivity...).
    scope : tuple of str
        Path of the accountant that was charged, from the root (``("root", "heatmap")``).
    timestamp : float
        ``time.time()`` at recording.
    """

    order: int
    mechanism: str
    relation: Neighbouring
    cost: PrivacyCost
    params: Mapping[str, Any]
    scope: tuple[str, ...]
    timestamp: float

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly dict (non-JSON parameter values are turned into strings)."""
        return {
            "order": self.order,
            "mechanism": self.mechanism,
            "relation": self.relation.value,
            "epsilon": self.cost.epsilon if math.isfinite(self.cost.epsilon) else None,
            "delta": self.cost.delta,
            "mu": self.cost.mu,
            "params": {str(k): _jsonable(v) for k, v in self.params.items()},
            "scope": "/".join(self.scope),
            "timestamp": self.timestamp,
        }


def _jsonable(v: Any) -> Any:
    if isinstance(v, (bool, int, str)) or v is None:
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else str(v)
    try:
        f = float(v)  # numpy scalars
    except (TypeError, ValueError):
        return str(v)
    return f if math.isfinite(f) else str(f)


class ScopedAccountant:
    """The in-memory accountant behind :class:`~privot.privacy.budget.PrivacyAccountant`
    (parameters, composition rules and guarantee are documented there).

    Scopes made by :meth:`scope` and :meth:`split` are of the kind :meth:`_new_scope`
    returns: a :class:`ScopedAccountant` here, a ``PrivacyAccountant`` there.
    """

    def __init__(self, total_epsilon: float, total_delta: float = 0.0, *, name: str = "root",
                 composition: str = "basic") -> None:
        self._total = BudgetAmount(check_epsilon(total_epsilon, "total_epsilon"),
                                   check_delta(total_delta, "total_delta"))
        if not isinstance(name, str) or not name or "/" in name:
            raise InvalidParameterError("name", name, "a non-empty string without '/'")
        if composition not in COMPOSITIONS:
            raise InvalidParameterError("composition", composition, f"one of {COMPOSITIONS}")
        self._name = name
        self._composition = composition
        self._parent: ScopedAccountant | None = None
        self._children: dict[str, ScopedAccountant] = {}
        self._entries: list[LedgerEntry] = []  # shared with every descendant (root's list)

    # -- identity ---------------------------------------------------------------------

    @property
    def name(self) -> str:
        """This accountant's name."""
        return self._name

    @property
    def path(self) -> tuple[str, ...]:
        """Names from the root down to this accountant."""
        return (self._parent.path if self._parent is not None else ()) + (self._name,)

    @property
    def parent(self) -> ScopedAccountant | None:
        """The accountant this one was split from, if any."""
        return self._parent

    @property
    def children(self) -> Mapping[str, ScopedAccountant]:
        """Child scopes by name (read-only view)."""
        return dict(self._children)

    @property
    def total(self) -> BudgetAmount:
        """This accountant's limit."""
        return self._total

    @property
    def composition(self) -> str:
        """``"basic"`` or ``"gdp"``."""
        return self._composition

    # -- ledger views -----------------------------------------------------------------

    def _root(self) -> ScopedAccountant:
        node = self
        while node._parent is not None:
            node = node._parent
        return node

    @property
    def ledger(self) -> tuple[LedgerEntry, ...]:
        """Entries charged to this accountant or any of its descendants, in order."""
        p = self.path
        return tuple(e for e in self._root()._entries if e.scope[:len(p)] == p)

    def _compose(self, costs: list[PrivacyCost]) -> BudgetAmount:
        if not costs:
            return BudgetAmount(0.0, 0.0)
        basic = BudgetAmount(math.fsum(c.epsilon for c in costs),
                             math.fsum(c.delta for c in costs))
        if self._composition != "gdp":
            return basic
        gdp = [c for c in costs if c.mu is not None]
        other = [c for c in costs if c.mu is None]
        if not gdp:
            return basic
        eps_o = math.fsum(c.epsilon for c in other)
        delta_o = math.fsum(c.delta for c in other)
        delta_g = self._total.delta - delta_o
        if delta_g <= 0:
            return basic
        mu = gdp_compose(c.mu for c in gdp)  # type: ignore[misc]
        cand = BudgetAmount(eps_o + gdp_to_epsilon(mu, delta_g), self._total.delta)
        return cand if cand.epsilon < basic.epsilon else basic

    @property
    def spent(self) -> BudgetAmount:
        """Composed spending of this scope (its own and its descendants' entries)."""
        return self._compose([e.cost for e in self.ledger])

    @property
    def remaining(self) -> BudgetAmount:
        """``total - spent``, floored at zero, and never more than any ancestor has left."""
        s = self.spent
        rem = BudgetAmount(max(0.0, self._total.epsilon - s.epsilon),
                           max(0.0, self._total.delta - s.delta))
        if self._parent is not None:
            pr = self._parent.remaining
            rem = BudgetAmount(min(rem.epsilon, pr.epsilon), min(rem.delta, pr.delta))
        return rem

    # -- spending ---------------------------------------------------------------------

    def _check(self, cost: PrivacyCost, mechanism: str) -> None:
        """Raise if adding ``cost`` breaks this accountant's or any ancestor's limit."""
        node: ScopedAccountant | None = self
        while node is not None:
            before = node.spent
            after = node._compose([e.cost for e in node.ledger] + [cost])
            tot = node._total
            over_eps = after.epsilon > tot.epsilon * (1.0 + RELATIVE_TOLERANCE)
            over_delta = after.delta > tot.delta * (1.0 + RELATIVE_TOLERANCE)
            if over_eps or over_delta:
                rem = BudgetAmount(max(0.0, tot.epsilon - before.epsilon),
                                   max(0.0, tot.delta - before.delta))
                where = "/".join(node.path)
                via = "" if node is self else f" (charged via {'/'.join(self.path)})"
                raise BudgetExceededError(
                    f"accountant {where!r}{via} refuses {mechanism!r} asking {cost}: "
                    f"already spent {before}, remaining {rem} of total {tot} "
                    f"({node._composition} composition); nothing was recorded")
            node = node._parent

    def spend(self, cost: PrivacyCost, *, mechanism: str,
              relation: Neighbouring = Neighbouring.ADD_REMOVE,
              params: Mapping[str, Any] | None = None) -> LedgerEntry:
        """Record ``cost`` or raise :class:`~privot.errors.BudgetExceededError`.

        The check runs against this accountant and every ancestor *before* anything
        is recorded: a refused charge leaves every ledger unchanged.

        Parameters
        ----------
        cost : PrivacyCost
            What the release spends.
        mechanism : str
            Name of the mechanism (non-empty).
        relation : Neighbouring, default ADD_REMOVE
            The relation ``cost`` is stated for.
        params : mapping, optional
            Calibration details to keep in the ledger (copied).

        Returns
        -------
        LedgerEntry
            The recorded entry.
        """
        if not isinstance(cost, PrivacyCost):
            raise InvalidParameterError("cost", cost, "a privot.privacy.types.PrivacyCost")
        if not isinstance(mechanism, str) or not mechanism:
            raise InvalidParameterError("mechanism", mechanism, "a non-empty string")
        if not isinstance(relation, Neighbouring):
            try:
                relation = Neighbouring(relation)
            except ValueError as exc:
                raise InvalidParameterError(
                    "relation", relation,
                    f"one of {[r.value for r in Neighbouring]}") from exc
        if params is not None and not isinstance(params, Mapping):
            raise InvalidParameterError("params", params, "a mapping or None")
        self._check(cost, mechanism)
        root = self._root()
        entry = LedgerEntry(order=len(root._entries), mechanism=mechanism, relation=relation,
                            cost=cost, params=dict(params or {}), scope=self.path,
                            timestamp=time.time())
        root._entries.append(entry)
        return entry

    def can_spend(self, cost: PrivacyCost) -> bool:
        """Whether :meth:`spend` would accept ``cost`` now (nothing is recorded)."""
        try:
            self._check(cost, "can_spend")
        except BudgetExceededError:
            return False
        return True

    # -- scopes -----------------------------------------------------------------------

    def _new_scope(self, epsilon: float, delta: float, name: str) -> ScopedAccountant:
        """A child accountant of this one's composition (not yet attached); subclasses
        return their own kind (:class:`~privot.privacy.budget.PrivacyAccountant`)."""
        return ScopedAccountant(epsilon, delta, name=name, composition=self._composition)

    def _child(self, name: str, fraction: float) -> ScopedAccountant:
        if not isinstance(name, str) or not name or "/" in name:
            raise InvalidParameterError("name", name, "a non-empty string without '/'")
        if name in self._children:
            raise InvalidParameterError(
                "name", name, f"a name not already used under {'/'.join(self.path)!r} "
                f"(existing: {sorted(self._children)})")
        frac = check_probability(fraction, "fraction", open_left=True)
        rem = self.remaining
        if rem.epsilon <= 0:
            raise BudgetExceededError(
                f"accountant {'/'.join(self.path)!r} has no epsilon left to give to scope "
                f"{name!r}: spent {self.spent} of total {self._total}")
        child = self._new_scope(frac * rem.epsilon, frac * rem.delta, name)
        child._parent = self
        self._children[name] = child
        return child

    @contextlib.contextmanager
    def scope(self, name: str, *, fraction: float) -> Iterator[ScopedAccountant]:
        """A child accountant with ``fraction`` of this one's *remaining* budget.

        Use as ``with acct.scope("heatmap", fraction=0.5) as sub: ...``. The child's
        spending is checked against its own limit and every ancestor's, and appears
        in every ancestor's ledger. The child stays in the tree after the block.

        Parameters
        ----------
        name : str
            Unique among this accountant's children.
        fraction : float
            In (0, 1]; applied to both remaining epsilon and remaining delta.
        """
        yield self._child(name, fraction)

    def split(self, weights: Mapping[str, float]) -> dict[str, ScopedAccountant]:
        r"""Children sharing this accountant's remaining budget in proportion to ``weights``.

        ``acct.split({"a": 1, "b": 3})`` gives ``a`` a quarter and ``b`` three
        quarters of the remaining epsilon and delta (basic composition of the shares
        is at most the remaining budget).

        Parameters
        ----------
        weights : mapping of str to float
            Non-negative weights with a positive sum; a zero weight is refused.
        """
        if not isinstance(weights, Mapping) or not weights:
            raise InvalidParameterError("weights", weights, "a non-empty mapping name -> weight")
        ws = {k: check_nonnegative(v, f"weights[{k!r}]") for k, v in weights.items()}
        total = math.fsum(ws.values())
        if total <= 0 or any(w == 0 for w in ws.values()):
            raise InvalidParameterError("weights", dict(weights), "weights > 0")
        for k in ws:
            if k in self._children:
                raise InvalidParameterError("weights", k, "names not already used as scopes")
        rem = self.remaining  # measured once, before any child exists
        if rem.epsilon <= 0:
            raise BudgetExceededError(
                f"accountant {'/'.join(self.path)!r} has no epsilon left to split: "
                f"spent {self.spent} of total {self._total}")
        out = {}
        for k, w in ws.items():
            if not isinstance(k, str) or not k or "/" in k:
                raise InvalidParameterError("weights", k, "names: non-empty strings without '/'")
            child = self._new_scope(rem.epsilon * w / total, rem.delta * w / total, k)
            child._parent = self
            out[k] = child
        self._children.update(out)
        return out

    # -- reports ----------------------------------------------------------------------

    def _walk(self) -> Iterator[ScopedAccountant]:
        yield self
        for c in self._children.values():
            yield from c._walk()

    def explain(self) -> str:
        """A multi-line, human-readable report of everything spent.

        Lists the composition rule, every scope with its limit, spending and
        remaining budget, totals per mechanism, each ledger entry, and the total.
        """
        lines = [f"Privacy accountant {'/'.join(self.path)!r} "
                 f"({self._composition} composition, tolerance {RELATIVE_TOLERANCE:g} "
                 "relative)",
                 f"  total:     {self._total}",
                 f"  spent:     {self.spent}",
                 f"  remaining: {self.remaining}"]
        entries = self.ledger
        lines.append("Per scope:")
        for node in self._walk():
            depth = len(node.path) - len(self.path)
            lines.append(f"  {'  ' * depth}{'/'.join(node.path)}: limit {node.total}; "
                         f"spent {node.spent}; remaining {node.remaining}; "
                         f"{len(node.ledger)} release(s)")
        lines.append("Per mechanism:")
        mechs: dict[str, list[PrivacyCost]] = {}
        for e in entries:
            mechs.setdefault(e.mechanism, []).append(e.cost)
        if not mechs:
            lines.append("  (nothing spent)")
        for m, costs in mechs.items():
            lines.append(f"  {m}: {len(costs)} release(s), {self._compose(costs)}")
        lines.append("Ledger:")
        if not entries:
            lines.append("  (empty)")
        for e in entries:
            par = ", ".join(f"{k}={_jsonable(v)}" for k, v in e.params.items())
            lines.append(f"  #{e.order} [{'/'.join(e.scope)}] {e.mechanism} "
                         f"({e.relation.value}): {e.cost}" + (f"; {par}" if par else ""))
        relations = sorted({e.relation.value for e in entries})
        if len(relations) > 1:
            lines.append(f"Warning: entries use several relations {relations}; make sure "
                         "the costs are stated for the same unit of privacy.")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly snapshot: totals, spending, ledger and children."""
        return {
            "name": self._name,
            "path": "/".join(self.path),
            "composition": self._composition,
            "relative_tolerance": RELATIVE_TOLERANCE,
            "total": self._total.to_dict(),
            "spent": self.spent.to_dict(),
            "remaining": self.remaining.to_dict(),
            "ledger": [e.to_dict() for e in self.ledger],
            "children": [c.to_dict() for c in self._children.values()],
        }

    def to_json(self, **kwargs: Any) -> str:
        """``json.dumps(self.to_dict(), **kwargs)`` (``indent=2`` by default)."""
        kwargs.setdefault("indent", 2)
        return json.dumps(self.to_dict(), **kwargs)

    def __repr__(self) -> str:
        return (f"PrivacyAccountant(name={'/'.join(self.path)!r}, total=({self._total}), "
                f"spent=({self.spent}), composition={self._composition!r})")
