"""Small data types shared by the privacy core: relations, costs, events and releases.

These are the vocabulary that mechanisms, the accountant, the ledger and the audit
speak. They carry no behaviour beyond validation (and, for :class:`PrivacyEvent`, the
interface its subclasses fill in) so that every module can import them; this module
imports no other module of :mod:`privot.privacy`.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

import numpy as np

from privot._validation import check_delta, check_epsilon, check_positive
from privot.errors import InvalidParameterError

__all__ = ["Neighbouring", "PLD_DISCRETIZATION", "PrivacyCost", "PrivacyEvent", "Release",
           "Spender", "check_spender"]

T = TypeVar("T")


class Neighbouring(str, enum.Enum):
    """The neighbouring relation a guarantee is stated for.

    ``ADD_REMOVE``: the datasets differ by one unit added or removed (unbounded DP).
    ``REPLACE_ONE``: same size, one unit replaced by another (bounded DP).
    ``REPLACE_ONE_IN_GROUP``: one unit replaced by another *of the same group*, the group
    labels and sizes public (barycenters of k groups, paper 000 Def. 4; DP-SGD with
    per-group batches and fairness penalties, paper 004): a replacement that changes a
    unit's group changes the published group sizes and is not covered.
    ``LOCAL``: local DP, any two inputs of one user (the randomiser's input space).
    """

    ADD_REMOVE = "add-remove"
    REPLACE_ONE = "replace-one"
    REPLACE_ONE_IN_GROUP = "replace-one-in-group"
    LOCAL = "local"


#: Grid of privacy-loss values for the PLDs (dp-accounting's unit). Pessimistic rounding
#: keeps every result an upper bound; 1e-4 puts the discretisation error near 1e-4 * count.
PLD_DISCRETIZATION = 1e-4


@dataclass(frozen=True)
class PrivacyEvent:
    """What a release ran: the base class of :mod:`privot.privacy.events`.

    Subclasses are frozen dataclasses with a ``kind`` class attribute. Defined here, not
    in :mod:`privot.privacy.events`, because :class:`PrivacyCost` checks its ``event``
    against it: the events module builds on this one (and on the accounting), never the
    reverse.
    """

    kind = "event"

    # -- the three descriptions ----------------------------------------------------------

    def basic(self) -> tuple[float, float]:
        """The ``(epsilon, delta)`` the release was charged (basic composition)."""
        raise NotImplementedError

    def rdp(self, orders: np.ndarray) -> np.ndarray:
        """Renyi DP :math:`\\rho(\\alpha)` at each order (``inf`` where unbounded)."""
        raise NotImplementedError

    def approx_delta(self) -> float:
        """Delta this event needs beside its RDP curve (only :class:`ApproxEvent`)."""
        return 0.0

    def pld(self, discretization: float = PLD_DISCRETIZATION):
        """The dp-accounting ``PrivacyLossDistribution`` of this event."""
        raise NotImplementedError

    def grouped(self, k: int) -> PrivacyEvent:
        """This event restated for groups of ``k`` units (``k = 1`` returns itself)."""
        raise NotImplementedError

    # -- storage -------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly ``{"kind": ..., field: value}``."""
        out: dict[str, Any] = {"kind": self.kind}
        out.update({k: v for k, v in self.__dict__.items()})
        return out

    def parts(self) -> tuple[PrivacyEvent, ...]:
        """The atomic events (a composed event's parts, flattened)."""
        return (self,)

    def describe(self) -> str:
        """One line for reports."""
        inner = ", ".join(f"{k}={_fmt(v)}" for k, v in self.__dict__.items())
        return f"{self.kind}({inner})"


def _fmt(v: Any) -> str:
    return f"{v:.6g}" if isinstance(v, float) else str(v)


@dataclass(frozen=True)
class PrivacyCost:
    """What one release spends.

    Attributes
    ----------
    epsilon : float
        The epsilon of the (epsilon, delta)-DP guarantee. ``math.inf`` is allowed only
        when ``mu`` carries the guarantee (a Gaussian DP release converted later).
    delta : float
        In [0, 1). Zero for pure DP.
    mu : float or None
        When set, the release is also ``mu``-GDP (Dong, Roth and Su); accountants
        that understand GDP compose ``mu`` exactly instead of (epsilon, delta).
    event : PrivacyEvent or None
        What ran, when the mechanism knows it better than ``(epsilon, delta, mu)`` say
        (e.g. DP-SGD's subsampled Gaussian steps); the budget ledger composes it.
    """

    epsilon: float
    delta: float = 0.0
    mu: float | None = None
    event: Any = None

    def __post_init__(self) -> None:
        if not (self.mu is not None and math.isinf(self.epsilon)):
            object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        object.__setattr__(self, "delta", check_delta(self.delta))
        if self.mu is not None:
            object.__setattr__(self, "mu", check_positive(self.mu, "mu"))
        if self.event is not None:
            if not isinstance(self.event, PrivacyEvent):
                raise InvalidParameterError("event", self.event,
                                            "None or a privot.privacy.events.PrivacyEvent")

    @property
    def is_pure(self) -> bool:
        """True for a pure epsilon-DP cost (delta = 0)."""
        return self.delta == 0.0

    def __str__(self) -> str:
        s = f"eps={self.epsilon:.6g}"
        if self.delta:
            s += f", delta={self.delta:.3g}"
        if self.mu is not None:
            s += f", mu={self.mu:.6g}"
        return s


@dataclass(frozen=True)
class Release(Generic[T]):
    """A released value with everything needed to judge it.

    Attributes
    ----------
    value : T
        The noisy output.
    cost : PrivacyCost
        The privacy it spent.
    mechanism : str
        Name of the mechanism (``"laplace"``, ``"gaussian-analytic"``...).
    relation : Neighbouring
        The neighbouring relation the cost is stated for.
    sensitivity : float
        The sensitivity the noise was calibrated to (in the mechanism's norm).
    secure : bool
        False when the noise came from a caller-seeded generator: reproducible but
        **not fit for publication**.
    params : Mapping[str, Any]
        Noise scale and other calibration details.
    """

    value: T
    cost: PrivacyCost
    mechanism: str
    relation: Neighbouring
    sensitivity: float
    secure: bool
    params: Mapping[str, Any] = field(default_factory=dict)


class Spender(Protocol):
    """Anything that can be charged for a release (the budget accountant)."""

    def spend(self, cost: PrivacyCost, *, mechanism: str,
              relation: Neighbouring = Neighbouring.ADD_REMOVE,
              params: Mapping[str, Any] | None = None) -> None:
        """Record ``cost`` or raise :class:`~privot.errors.BudgetExceededError`
        *before* anything is released."""
        ...


def check_spender(accountant: object) -> None:
    """Refuse an ``accountant=`` argument that cannot be charged (the one accountant check).

    ``None`` (nothing is charged) or any object with a ``spend`` method (a
    :class:`~privot.privacy.budget.PrivacyAccountant`, a ledger's spender) is allowed;
    every release path calls this before it reads data or draws noise.
    """
    if accountant is not None and not callable(getattr(accountant, "spend", None)):
        raise InvalidParameterError("accountant", accountant,
                                    "None or an object with spend() (a PrivacyAccountant)")
