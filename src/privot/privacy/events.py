r"""What a release ran, in its natural form: the events the budget ledger composes.

A :class:`~privot.privacy.types.PrivacyCost` says how much a release spent as an
``(epsilon, delta)`` pair. Composing many releases tightly needs more: *which*
mechanism ran, with which noise. A :class:`PrivacyEvent` records that and gives the
three descriptions the ledger composes with (the base class is defined in
:mod:`privot.privacy.types`, beside the cost that may carry an event, and re-exported
here):

* :meth:`PrivacyEvent.basic` -- the ``(epsilon, delta)`` the release was charged
  (basic composition adds these);
* :meth:`PrivacyEvent.rdp` -- a Renyi DP curve :math:`\rho(\alpha)` on the ledger's
  orders (the Renyi filter adds these, valid under fully adaptive use);
* :meth:`PrivacyEvent.pld` -- a privacy loss distribution (dp-accounting), composed for
  the tight figure that holds when the sequence of releases was fixed in advance.

Events (all stated for one neighbouring relation, the ledger's):

================================  ===========================  ==========================
event                             RDP                          PLD
================================  ===========================  ==========================
:class:`PureEvent` (eps)          randomised response          randomised response
:class:`GaussianEvent` (sigma)    :math:`\alpha/(2\sigma^2)`   Gaussian
:class:`SubsampledGaussianEvent`  dp-accounting RDP            dp-accounting / fixed-size
:class:`ApproxEvent` (eps, dlt)   eps, delta set aside         (eps, delta) worst case
:class:`ComposedEvent`            sum of parts                 composition of parts
================================  ===========================  ==========================

privot's Laplace mechanisms add *discrete* Laplace noise on a grid (float-attack
safety), whose loss is bounded by eps but whose loss distribution is not the continuous
Laplace's. They are recorded as :class:`PureEvent`: randomised response with the same
eps is the worst case over every eps-DP mechanism (Kairouz, Oh and Viswanath 2015,
Thm 2.4: every eps-DP pair is a post-processing of it), so its RDP and PLD are valid
bounds for any pure release. The Gaussian mechanisms carry a GDP ``mu`` for the
rounded query (``docs/privacy/gaussian.md``), recorded as ``sigma = 1/mu``.

Privacy
-------
Events add no noise. Unit and relation: an event describes one release under the
ledger's unit and relation; :meth:`PrivacyEvent.grouped` restates it for a group of
``k`` units (the documented conversions of ``docs/privacy/budget.md``).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from privot._validation import check_delta, check_epsilon, check_int, check_positive
from privot.errors import InvalidParameterError
from privot.privacy.accounting import (
    _quiet_absl,
    _relation,
    gdp_to_epsilon,
    subsampled_gaussian_dp_event,
    subsampled_gaussian_step_pld,
)
from privot.privacy.types import PLD_DISCRETIZATION, PrivacyEvent

__all__ = ["ApproxEvent", "ComposedEvent", "EVENT_KINDS", "GaussianEvent", "PrivacyEvent",
           "PureEvent", "SubsampledGaussianEvent", "event_for_cost", "event_from_dict",
           "rr_rdp"]


def rr_rdp(epsilon: float, orders: np.ndarray) -> np.ndarray:
    r"""Renyi divergence of randomised response with parameter eps, at each order.

    With :math:`p = e^\varepsilon/(1+e^\varepsilon)`, :math:`q = 1 - p`:

    .. math:: D_\alpha = \frac{1}{\alpha-1}\log\bigl(p^\alpha q^{1-\alpha}
              + q^\alpha p^{1-\alpha}\bigr)

    the largest order-alpha Renyi divergence of any eps-DP pair (data processing over
    the post-processing of Kairouz et al.), at most :math:`\min(\varepsilon,
    \alpha\varepsilon^2/2)`. Computed in log space.

    Parameters
    ----------
    epsilon : float
        eps >= 0.
    orders : float array, shape (A,)
        Orders alpha > 1.

    Returns
    -------
    float array, shape (A,)
    """
    a = np.asarray(orders, dtype=float)
    if epsilon == 0:
        return np.zeros_like(a)
    lp = -np.logaddexp(0.0, -epsilon)  # log p
    lq = -np.logaddexp(0.0, epsilon)   # log q
    val = np.logaddexp(a * lp + (1 - a) * lq, a * lq + (1 - a) * lp) / (a - 1)
    return np.minimum(np.maximum(val, 0.0), epsilon)


def _check_fields(event: PrivacyEvent, **checks: Any) -> None:
    """Validate (and normalise to float) fields of a frozen event: ``name=checker``."""
    for name, check in checks.items():
        object.__setattr__(event, name, check(getattr(event, name), name))


@dataclass(frozen=True)
class PureEvent(PrivacyEvent):
    """A pure eps-DP release (Laplace on a grid, discrete Laplace, exponential mechanism,
    a local randomiser), bounded by randomised response with the same eps.

    Attributes
    ----------
    epsilon : float
        eps > 0.
    mechanism : str
        What ran (for reports only).
    """

    epsilon: float
    mechanism: str = "pure"
    kind = "pure"

    def __post_init__(self) -> None:
        _check_fields(self, epsilon=check_epsilon)

    def basic(self) -> tuple[float, float]:
        return self.epsilon, 0.0

    def rdp(self, orders: np.ndarray) -> np.ndarray:
        return rr_rdp(self.epsilon, orders)

    def pld(self, discretization: float = PLD_DISCRETIZATION):
        return _rr_pld(self.epsilon, discretization)

    def grouped(self, k: int) -> PrivacyEvent:
        # group privacy (Dwork and Roth 2014, Thm 2.2): k eps
        return self if k == 1 else PureEvent(k * self.epsilon, self.mechanism)


@functools.lru_cache(maxsize=256)
def _rr_pld(epsilon: float, discretization: float):
    from dp_accounting.pld import privacy_loss_distribution as pld_mod

    # two-bucket randomised response: output uniform with prob p, else the truth;
    # loss eps = log((1 - p/2) / (p/2))  <=>  p = 2 / (1 + e^eps)
    p = 2.0 / (1.0 + math.exp(epsilon))
    return pld_mod.from_randomized_response(p, 2, value_discretization_interval=discretization)


@dataclass(frozen=True)
class GaussianEvent(PrivacyEvent):
    """A Gaussian release with noise ``sigma`` times the L2 sensitivity (mu = 1/sigma GDP).

    Attributes
    ----------
    noise_multiplier : float
        sigma / sensitivity > 0.
    epsilon, delta : float
        The ``(epsilon, delta)`` it was charged (on its curve).
    """

    noise_multiplier: float
    epsilon: float
    delta: float
    kind = "gaussian"

    def __post_init__(self) -> None:
        _check_fields(self, noise_multiplier=check_positive, epsilon=check_epsilon,
                      delta=check_delta)

    def basic(self) -> tuple[float, float]:
        return self.epsilon, self.delta

    def rdp(self, orders: np.ndarray) -> np.ndarray:
        # Mironov 2017, Prop. 7
        return np.asarray(orders, dtype=float) / (2.0 * self.noise_multiplier ** 2)

    def pld(self, discretization: float = PLD_DISCRETIZATION):
        return _gaussian_pld(self.noise_multiplier, discretization)

    def grouped(self, k: int) -> PrivacyEvent:
        if k == 1:
            return self
        # the sensitivity of an additive-noise release grows at most k-fold (triangle
        # inequality through the k - 1 intermediate data sets); (eps, delta) by group
        # privacy (Dwork and Roth 2014, Thm 2.2 with delta)
        eps = k * self.epsilon
        dlt = min(k * math.exp((k - 1) * self.epsilon) * self.delta, 1.0 - 1e-15)
        return GaussianEvent(self.noise_multiplier / k, eps, dlt)


@functools.lru_cache(maxsize=256)
def _gaussian_pld(sigma: float, discretization: float):
    from dp_accounting.pld import privacy_loss_distribution as pld_mod

    return pld_mod.from_gaussian_mechanism(sigma, sensitivity=1.0,
                                           value_discretization_interval=discretization)


SAMPLINGS = ("poisson", "fixed-size")


@dataclass(frozen=True)
class SubsampledGaussianEvent(PrivacyEvent):
    """``steps`` subsampled Gaussian steps (DP-SGD).

    ``"poisson"`` is stated for add/remove, ``"fixed-size"`` (sampling without
    replacement, rate = batch / group size) for replace-one, as in
    :mod:`privot.privacy.accounting`.

    Attributes
    ----------
    noise_multiplier : float
        sigma / sensitivity.
    sampling_rate : float
        q in (0, 1].
    steps : int
        T >= 1.
    sampling : {"poisson", "fixed-size"}
    epsilon, delta : float
        What the run was charged.
    """

    noise_multiplier: float
    sampling_rate: float
    steps: int
    sampling: str
    epsilon: float
    delta: float
    kind = "subsampled-gaussian"

    def __post_init__(self) -> None:
        _check_fields(self, noise_multiplier=check_positive, sampling_rate=check_positive,
                      epsilon=check_epsilon, delta=check_delta)
        if self.sampling_rate > 1:
            raise InvalidParameterError("sampling_rate", self.sampling_rate,
                                        "a rate in (0, 1]")
        object.__setattr__(self, "steps", check_int(self.steps, "steps", minimum=1))
        if self.sampling not in SAMPLINGS:
            raise InvalidParameterError("sampling", self.sampling, f"one of {SAMPLINGS}")

    def basic(self) -> tuple[float, float]:
        return self.epsilon, self.delta

    def rdp(self, orders: np.ndarray) -> np.ndarray:
        a = tuple(float(x) for x in np.asarray(orders, dtype=float))
        return np.asarray(_subsampled_rdp(self.noise_multiplier, self.sampling_rate,
                                          self.steps, self.sampling, a))

    def pld(self, discretization: float = PLD_DISCRETIZATION):
        return subsampled_gaussian_step_pld(self.noise_multiplier, self.sampling_rate,
                                            self.sampling, discretization
                                            ).self_compose(self.steps)

    def grouped(self, k: int) -> PrivacyEvent:
        if k == 1:
            return self
        raise InvalidParameterError(
            "conversion", f"a group of {k} units for {self.kind}",
            "no conversion: subsampling does not scale like the sensitivity; "
            "charge DP-SGD to a ledger of its own relation (row, replace-one)")


@functools.lru_cache(maxsize=128)
def _subsampled_rdp(sigma: float, q: float, steps: int, sampling: str,
                    orders: tuple[float, ...]) -> tuple[float, ...]:
    import dp_accounting
    from dp_accounting.rdp import rdp_privacy_accountant

    event = subsampled_gaussian_dp_event(sigma, q, sampling)
    acct = rdp_privacy_accountant.RdpAccountant(list(orders), _relation(sampling))
    with _quiet_absl():
        acct.compose(dp_accounting.SelfComposedDpEvent(event, steps))
    return tuple(float(x) for x in acct._rdp)  # noqa: SLF001 - the curve itself


@dataclass(frozen=True)
class ApproxEvent(PrivacyEvent):
    r"""An ``(epsilon, delta)`` release known only by its pair (e.g. amplified by shuffling).

    RDP: eps at every order, after setting ``delta`` aside. For each pair of neighbours
    the output law P is within total variation delta of a law P' with
    :math:`P' \le e^\varepsilon Q` (move the hockey-stick excess, at most delta, to
    where there is room), so :math:`D_\alpha(P' \| Q) \le \varepsilon`; only this
    one-sided bound is known, hence not randomised response's curve. The ledger's
    filter adds these deltas to a reserve fixed when the ledger was created. PLD: the
    worst case of the pair (dp-accounting's ``from_privacy_parameters``).
    """

    epsilon: float
    delta: float
    mechanism: str = "approx"
    kind = "approx"

    def __post_init__(self) -> None:
        _check_fields(self, epsilon=check_epsilon, delta=check_delta)

    def basic(self) -> tuple[float, float]:
        return self.epsilon, self.delta

    def rdp(self, orders: np.ndarray) -> np.ndarray:
        return np.full(np.asarray(orders).shape, self.epsilon, dtype=float)

    def approx_delta(self) -> float:
        return self.delta

    def pld(self, discretization: float = PLD_DISCRETIZATION):
        from dp_accounting.pld import common
        from dp_accounting.pld import privacy_loss_distribution as pld_mod

        return pld_mod.from_privacy_parameters(
            common.DifferentialPrivacyParameters(self.epsilon, self.delta),
            value_discretization_interval=discretization)

    def grouped(self, k: int) -> PrivacyEvent:
        if k == 1:
            return self
        eps = k * self.epsilon
        dlt = min(k * math.exp((k - 1) * self.epsilon) * self.delta, 1.0 - 1e-15)
        return ApproxEvent(eps, dlt, self.mechanism)


@dataclass(frozen=True)
class ComposedEvent(PrivacyEvent):
    """Several events run in one release (e.g. a coreset anchor and Gaussian steps)."""

    events: tuple[PrivacyEvent, ...]
    kind = "composed"

    def __post_init__(self) -> None:
        evs = tuple(self.events)
        if not evs or not all(isinstance(e, PrivacyEvent) for e in evs):
            raise InvalidParameterError("events", self.events, "a non-empty tuple of events")
        object.__setattr__(self, "events", tuple(p for e in evs for p in e.parts()))

    def parts(self) -> tuple[PrivacyEvent, ...]:
        return self.events

    def basic(self) -> tuple[float, float]:
        pairs = [e.basic() for e in self.events]
        return math.fsum(p[0] for p in pairs), math.fsum(p[1] for p in pairs)

    def rdp(self, orders: np.ndarray) -> np.ndarray:
        return np.sum([e.rdp(orders) for e in self.events], axis=0)

    def approx_delta(self) -> float:
        return math.fsum(e.approx_delta() for e in self.events)

    def pld(self, discretization: float = PLD_DISCRETIZATION):
        out = self.events[0].pld(discretization)
        for e in self.events[1:]:
            out = out.compose(e.pld(discretization))
        return out

    def grouped(self, k: int) -> PrivacyEvent:
        return self if k == 1 else ComposedEvent(tuple(e.grouped(k) for e in self.events))

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "events": [e.to_dict() for e in self.events]}

    def describe(self) -> str:
        return " + ".join(e.describe() for e in self.events)


EVENT_KINDS = {c.kind: c for c in (PureEvent, GaussianEvent, SubsampledGaussianEvent,
                                    ApproxEvent, ComposedEvent)}


def event_from_dict(d: dict[str, Any]) -> PrivacyEvent:
    """Inverse of :meth:`PrivacyEvent.to_dict`."""
    if not isinstance(d, dict) or d.get("kind") not in EVENT_KINDS:
        raise InvalidParameterError("event", d, f"a dict with kind in {sorted(EVENT_KINDS)}")
    fields = {k: v for k, v in d.items() if k != "kind"}
    if d["kind"] == "composed":
        return ComposedEvent(tuple(event_from_dict(e) for e in fields["events"]))
    return EVENT_KINDS[d["kind"]](**fields)


def event_for_cost(cost: Any, mechanism: str | None = None) -> PrivacyEvent:
    """The event a :class:`~privot.privacy.types.PrivacyCost` describes.

    Its own ``event`` when the mechanism attached one; else a Gaussian when it carries a
    GDP ``mu`` (sigma = 1/mu), a pure event when delta = 0, and an :class:`ApproxEvent`
    otherwise. ``mechanism`` names the pure and approx events (reports only).
    """
    ev = getattr(cost, "event", None)
    if ev is not None:
        return ev
    if cost.mu is not None:
        eps = cost.epsilon if math.isfinite(cost.epsilon) else _gdp_eps(cost.mu, cost.delta)
        return GaussianEvent(1.0 / cost.mu, eps, cost.delta)
    if cost.delta == 0:
        return PureEvent(cost.epsilon, mechanism or "pure")
    return ApproxEvent(cost.epsilon, cost.delta, mechanism or "approx")


def _gdp_eps(mu: float, delta: float) -> float:
    return gdp_to_epsilon(mu, delta) if delta > 0 else math.inf
