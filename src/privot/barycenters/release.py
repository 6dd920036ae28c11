r"""The steps every private-barycenter method shares.

:func:`start_release` (the curator decisions on the rows, the sample budget after
amplification, the randomness), :meth:`Release.charge` (the accountant, once, before any
noise), :meth:`Release.record` (the public parameters a release publishes),
:meth:`Release.finish` (the support back in the caller's coordinates, the result).
Each method (:mod:`~privot.barycenters.method_coreset`,
:mod:`~privot.barycenters.method_perturbation`,
:mod:`~privot.barycenters.method_subspace`) runs between the charge and the finish.

Privacy
-------
The charge comes after every check that can refuse (a refusal after it would spend the
budget and release nothing) and before any noise. The record holds public parameters
only; the rows' counts go to the result's curator-only fields.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from privot.barycenters.inputs import Groups, Rows, usable_rows_of
from privot.barycenters.params import BarycenterParams
from privot.barycenters.regions import describe_region
from privot.barycenters.result import BarycenterResult, distinct_atoms
from privot.error_bounds import ErrorStatement
from privot.errors import InvalidParameterError
from privot.privacy import accounting
from privot.privacy.events import ComposedEvent, GaussianEvent, PrivacyEvent, PureEvent
from privot.privacy.noise import check_rng
from privot.privacy.types import Neighbouring, PrivacyCost, Spender

__all__ = ["DEFAULT_ATOMS_POLISH", "Release", "RunSettings", "default_projection_dim",
           "distinct_atoms", "refuse_options", "release_event", "start_release",
           "warn_degenerate", "warn_unused"]

#: Exact polishing steps after Sinkhorn on weighted atoms (``polish=None`` with
#: ``max_atoms``): the exact fixed point run to its tolerance (it stops early), affordable
#: on a few thousand atoms. US places, k = 3, n = 109,000, m = 32, three releases: true
#: cost 212.56 / 212.38 / 212.45 with 1 step, 212.46 / 212.36 / 212.36 with 10, the same
#: with 50 (squared degrees).
DEFAULT_ATOMS_POLISH = 10


def default_projection_dim(n: int, d: int, *, p: float = 2, gamma: float = 0.5,
                           xi: float = 0.1) -> int | None:
    r"""Theorem 5.4's order :math:`d' = \lceil p^4 \gamma^{-2} \ln(n/(\gamma\xi)) \rceil`.

    The theorem gives :math:`d' = O(p^4\gamma^{-2}\log(n/(\gamma\xi)))`; privot takes the
    constant 1 with distortion :math:`\gamma = 1/2` and failure probability
    :math:`\xi = 1/10`. Returns ``None`` (no projection) when that is not below ``d``.
    """
    dp = math.ceil(p**4 / gamma**2 * math.log(n / (gamma * xi)))
    return dp if dp < d else None


def release_event(method: str, sample: PrivacyCost, anchor_epsilon: float = 0.0
                  ) -> PrivacyEvent:
    r"""What a private barycenter runs, in the form a budget ledger composes.

    ``"coreset"``: Laplace counts on the levels of the partitions, pure
    ``sample.epsilon``-DP in all (:class:`~privot.privacy.events.PureEvent`).
    ``"perturbation"``: the coreset anchor (pure ``anchor_epsilon``) and Gaussian steps
    calibrated to :math:`(\varepsilon - \varepsilon_a, \delta)`. Gaussian steps compose
    to a :math:`\mu`-GDP release (Dong, Roth and Su, Cor. 3.3) that meets that pair, so
    :math:`\mu \le \mu(\varepsilon - \varepsilon_a, \delta)`, the GDP parameter whose
    curve passes through it: a valid, public description.

    Parameters
    ----------
    method : {"coreset", "perturbation"}
    sample : PrivacyCost
        The budget the release runs with (after amplification, if any).
    anchor_epsilon : float
        The perturbation method's coreset anchor budget (0 for a public anchor).
    """
    if method == "coreset":
        return PureEvent(sample.epsilon, "laplace-coreset")
    parts: list[PrivacyEvent] = []
    if anchor_epsilon > 0:
        parts.append(PureEvent(anchor_epsilon, "laplace-coreset-anchor"))
    eps_g = sample.epsilon - anchor_epsilon
    # gdp_mu_for rounds down (the calibration's safe side); up by 1e-8 here (the
    # description's safe side) to cover that rounding
    mu = accounting.gdp_mu_for(eps_g, sample.delta) * (1.0 + 1e-8)
    parts.append(GaussianEvent(1.0 / mu, eps_g, sample.delta))
    return ComposedEvent(tuple(parts))


def sample_budget(epsilon: float, delta: float, sizes: list[int],
                  population_size: int | Sequence[int] | None) -> PrivacyCost:
    """The budget the mechanism runs with on the groups: the target itself, or with
    ``population_size`` the larger one that amplification brings back to it."""
    target = PrivacyCost(epsilon, delta)
    if population_size is None:
        return target
    pops = ([population_size] * len(sizes) if isinstance(population_size, (int, np.integer))
            else list(population_size))
    return accounting.sample_cost_for(target, sample_size=sizes, population_size=pops)


def warn_unused(names: list[str], why: str, *, stacklevel: int = 4) -> None:
    """Warn that options given with non-default values are not read by this release
    (``stacklevel`` 4: called by a method's ``run_*``, itself called by
    :func:`~privot.barycenters.private_barycenter`)."""
    if names:
        warnings.warn(f"{', '.join(names)} ignored: {why}", UserWarning,
                      stacklevel=stacklevel)


def refuse_options(options: Any, names: list[str], allowed: str) -> None:
    """Refuse the first of ``names`` (fields of ``options``), naming it and its value
    (an array by its shape)."""
    if names:
        value = getattr(options, names[0])
        raise InvalidParameterError(
            names[0], value.shape if isinstance(value, np.ndarray) else value, allowed)


@dataclass(frozen=True)
class RunSettings:
    """What a release runs with besides its parameters (never published)."""

    accountant: Spender | None
    rng: Any
    show: bool
    requested: str


@dataclass(eq=False)
class Release:
    """One release in progress: its checked inputs and what every method shares."""

    groups: Groups
    params: BarycenterParams
    rows: Rows
    method: str
    delta: float
    sample: PrivacyCost
    gen: np.random.Generator | None
    settings: RunSettings
    #: The error statement (issue 28), set by the method from public parameters before
    #: :meth:`charge`; carried into the result by :meth:`finish`.
    error: ErrorStatement | None = None

    @property
    def m(self) -> int:
        return self.params.m

    def projection_dim(self) -> int | None:
        """:math:`d'` of the JL map: ``"auto"`` (Thm 5.4's order), None, or the given
        int (None when not below ``d``)."""
        asked, d = self.params.projection_dim, self.groups.d
        if asked == "auto":
            return default_projection_dim(min(self.groups.sizes), d, p=self.params.p)
        if asked is None:
            return None
        return int(asked) if int(asked) < d else None

    def solver_kw(self) -> dict[str, Any]:
        """The keywords of :func:`privot.ot.free_support_barycenter` (post-processing)."""
        p = self.params
        out: dict[str, Any] = {"method": p.solver, "reg": p.reg, "n_outer": p.n_outer,
                               "n_inner": p.n_inner}
        if p.polish is not None:
            out["polish"] = p.polish
        elif p.coreset.max_atoms is not None and p.solver == "sinkhorn":
            out["polish"] = DEFAULT_ATOMS_POLISH
        return out

    def charge(self, event: PrivacyEvent, mu: float | None = None) -> None:
        """Charge the accountant the sample budget once, before any noise."""
        acct = self.settings.accountant
        if acct is None:
            return
        acct.spend(PrivacyCost(self.sample.epsilon, self.sample.delta, mu=mu, event=event),
                   mechanism=f"private-barycenter-{self.method}",
                   relation=Neighbouring.REPLACE_ONE_IN_GROUP,
                   params={"m": self.m, "k": self.groups.k,
                           "population_size": self.params.population_size})

    def record(self) -> dict[str, Any]:
        """The public parameters every method publishes (in this order)."""
        p, g = self.params, self.groups
        region = {} if p.coreset.region is None else {  # only then: other files keep bytes
            "region": describe_region(p.coreset.region)}
        return {"m": p.m, "k": g.k, "p": p.p, "d": g.d,
                "method_requested": self.settings.requested,
                "projection_dim": self.projection_dim() if self.method != "subspace" else None,
                "solver": p.solver, "reg": p.reg, "n_outer": p.n_outer, "n_inner": p.n_inner,
                "placement": p.coreset.placement, "max_atoms": p.coreset.max_atoms,
                "polish": self.solver_kw().get("polish"), "group_sizes": g.sizes,
                "population_size": p.population_size, "group_weights": g.beta.tolist(),
                **region}

    def finish(self, support_unit: np.ndarray, *, secure: bool, record: dict[str, Any],
               diagnostics: dict[str, Any], started: float) -> BarycenterResult:
        """The result: the support in the caller's coordinates, projected onto the bounds."""
        bounds = self.groups.bounds
        # the bounds are convex and public: projecting the atoms onto them is
        # post-processing and never moves an atom away from any point inside them
        support, _ = bounds.clip(bounds.from_unit(support_unit))
        diagnostics["seconds_total"] = time.perf_counter() - started
        warn_degenerate(support, self.m, self.method)
        return BarycenterResult(
            support=support, weights=np.full(self.m, 1.0 / self.m), method=self.method,
            cost=PrivacyCost(self.params.epsilon, self.delta), sample_cost=self.sample,
            relation=Neighbouring.REPLACE_ONE_IN_GROUP, secure=secure, bounds=bounds,
            n_clipped=tuple(self.rows.n_outside), n_unusable=tuple(self.rows.n_unusable),
            params=record, diagnostics=diagnostics, error=self.error)


def warn_degenerate(support: np.ndarray, m: int, method: str) -> None:
    """Warn (:class:`UserWarning`; the CLI routes it to stderr) when the release has
    fewer distinct atoms than ``m``: a degenerate barycenter is flagged, never reported
    as a plain success. The count is a function of the release (public)."""
    n = distinct_atoms(support)
    if n < m:
        warnings.warn(f"degenerate release: {n} distinct atom(s) of m = {m} (method "
                      f"{method!r}): the support repeats points, each copy with weight "
                      "1/m (the result's distinct_atoms and release.json's 'degenerate' "
                      "say so)", UserWarning, stacklevel=5)


def start_release(groups: Groups, params: BarycenterParams, method: str, delta: float,
                  settings: RunSettings) -> Release:
    """The curator decisions on the rows, the sample budget and the randomness (all
    before the charge)."""
    rows = usable_rows_of(groups)
    sample = sample_budget(params.epsilon, delta, groups.sizes, params.population_size)
    gen = check_rng(settings.rng, bits=False)  # the one rng rule (an int seed: default_rng)
    return Release(groups, params, rows, method, delta, sample, gen, settings)
