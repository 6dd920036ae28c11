r"""The error statement of a population sample, from its public parameters (issue 28).

What is bounded
---------------
Each user ``u`` holds :math:`\mu_u` over the ``k`` input points and releases one draw of
a law :math:`\rho_u` over the ``k_v`` output points (direct: the snapped
:math:`M[\mu_u]`; linear: :math:`\sum_i \mu_u(i) W_i`, ``W`` the snapped channel). The
statement bounds the **mechanism's distortion** :math:`W_1(\mu_u, \rho_u)` for *every*
user (confidence 1, a worst case over inputs), in the units of the ground distance
:math:`d` (the grid's coordinates for ``privot sample``). It is not the distance from
:math:`\mu_u` to the one released point (that is :math:`\sum_i \mu_u(i) d(x_i, y)`, a
random variable whose mean is at least :math:`W_1(\mu_u, \rho_u)`).

The bound, by path (derivations in ``docs/errors/sampling.md``):

* **linear variant, or k-RR** (the output law is linear in :math:`\mu`): by joint
  convexity of :math:`W_1`, :math:`W_1(\mu, \mu W) \le \sum_i \mu(i) W_1(\delta_i, W_i)
  \le \max_i \sum_j W_{ij} d(x_i, v_j)`, attained at the Dirac of the maximiser (exact);
* **direct WPM, exact solver**: Thm 3.5 with Prop. B.2, :math:`\sup_\mu W_p(M[\mu], \mu)
  = f(m)^{1/p}` (:class:`~privot.sampling.base_measure.WorstCaseCost`), and
  :math:`W_1 \le W_p`; plus a stated tolerance for the LP solver and the snapping
  (``details["tolerance"]``). Attained at a Dirac for ``p = 1``;
* **direct, any other mechanism** (KPM, exponential, entropic WPM): every release law
  lies in the certified box ``[L, U] / 2**b`` with total mass 1, so :math:`W_1(\mu,
  \rho) \le \max_i \max_{\rho \in \text{box}} \sum_j \rho_j d(x_i, v_j)` (a fractional
  knapsack per input point). Certified but not attained in general.

The server's population estimate (``details["population"]``): for the direct variant's
report histogram :math:`\hat p` (not k-RR), with :math:`\bar\mu` the average input,
:math:`W_1(\bar\mu, \hat p) \le B + \tfrac{D}{2}\big(\sqrt{k_v/n} +
\sqrt{2\ln(1/\delta)/n}\big)` with probability :math:`1 - \delta` (``B`` the per-user
bound, ``D`` the output diameter, ``n`` the public number of reports). The linear
variant's EM estimate and the k-RR debiased estimate are not covered (their error
depends on the population); ``estimate_uncertainty.json`` gives a data-dependent
bootstrap radius.

Privacy
-------
No release here: every figure is a function of the public mechanism (its cost, base
measure, epsilon, channel), the grid exponent and the public number of reports -- the
same for any two inputs with the same public parameters, computed before the charge.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from privot._validation import check_int
from privot.error_bounds import ErrorStatement
from privot.errors import InvalidParameterError
from privot.sampling.base_measure import WorstCaseCost
from privot.sampling.cost import cost_matrix
from privot.sampling.device import DEFAULT_BITS, grid_polytope, snap_to_polytope
from privot.sampling.mechanism import SamplingMechanism
from privot.sampling.params import VARIANTS, SampleParams

__all__ = ["DERIVATION", "GRID_UNITS", "POPULATION_CONFIDENCE", "dirac_w1", "population_error",
           "sample_error"]

#: Where the derivations are written out.
DERIVATION = "docs/errors/sampling.md"
#: Default confidence of the population-estimate figure (``details["population"]``).
POPULATION_CONFIDENCE = 0.999
#: Relative tolerance granted to the exact WPM's LP solution (HiGHS / network simplex
#: feasibility is ~1e-9 in L1) on top of the snapping's ``2 (k_v + 1) 2**-b``.
_LP_TOLERANCE = 1e-8
#: The units of a grid's ground distance (``privot sample``: Euclidean between cell centres).
GRID_UNITS = "grid coordinates (Euclidean distance between cell centres)"
_METRIC = "W1(user's distribution, law of the user's released sample), every user"


def _resolve(mechanism_or_params: object, variant: str | None, channel: object,
             bits: int | None) -> tuple[SamplingMechanism, str, Any, int]:
    """``(mechanism, variant, channel, bits)`` from a SampleParams or a mechanism."""
    if isinstance(mechanism_or_params, SampleParams):
        p = mechanism_or_params
        return (p.mechanism, variant or p.variant,  # type: ignore[return-value]
                p.channel if channel is None else channel, p.bits if bits is None else bits)
    if not isinstance(mechanism_or_params, SamplingMechanism):
        raise InvalidParameterError("mechanism_or_params", type(mechanism_or_params).__name__,
                                    "a SamplingMechanism or a SampleParams")
    variant = variant or "direct"
    if variant not in VARIANTS:
        raise InvalidParameterError("variant", variant, f"one of {VARIANTS}")
    return (mechanism_or_params, variant, channel,
            DEFAULT_BITS if bits is None else check_int(bits, "bits", minimum=1))


def _distances(mech: SamplingMechanism, points: object, distance: object
               ) -> tuple[np.ndarray, str, bool]:
    """``(D, units, same_points)``: the ``(k, k_v)`` ground distance the bound is in.

    Priority: ``distance`` given; else the mechanism's own cost ``d**p`` (WPM,
    exponential); else the Euclidean distance between ``points`` (inputs = outputs).
    ``same_points``: the output points are the input points (``D`` is then also the
    distance between outputs).
    """
    k, k_v = int(mech.k), int(mech.k_v)
    if distance is not None:
        d = np.asarray(distance, dtype=np.float64)
        units = "units of the given distance"
    elif getattr(mech, "cost", None) is not None:
        d = np.asarray(mech.cost, dtype=np.float64) ** (1.0 / float(getattr(mech, "p", 1.0)))
        units = "units of the mechanism's ground distance d (its cost is d**p)"
    elif points is not None:
        d = cost_matrix(points, points)
        units = "units of the points' coordinates (Euclidean)"
    else:
        raise InvalidParameterError(
            "points", None, f"the public points (or a distance matrix) of a "
            f"{mech.name} mechanism, which carries no cost")
    if d.shape != (k, k_v) or not np.all(np.isfinite(d)) or np.any(d < 0):
        raise InvalidParameterError("distance", f"<array shape {d.shape}>",
                                    f"a finite non-negative ({k}, {k_v}) distance matrix")
    same = k == k_v and bool(np.all(np.diag(d) == 0) and np.allclose(d, d.T))
    return d, units, same


def dirac_w1(mechanism_or_params: object, *, channel: object = None, bits: int | None = None,
             points: object = None, distance: object = None) -> np.ndarray:
    r"""``(k,)``: :math:`W_1(\delta_i, \rho_i)` for every Dirac input, :math:`\rho_i` the
    snapped law the device draws from (:math:`\sum_j \rho_{ij} d(x_i, v_j)`).

    ``channel`` (``(k, k_v)``, public; default :meth:`SamplingMechanism.channel`, ``k``
    projections) is snapped into the certified polytope as the release does. Public:
    no data, no release.
    """
    mech, _, ch, b = _resolve(mechanism_or_params, "linear", channel, bits)
    d = _distances(mech, points, distance)[0]
    ch = mech.channel() if ch is None else np.asarray(ch, dtype=np.float64)
    poly = grid_polytope(mech.base_measure, epsilon=float(mech.epsilon), bits=b)
    law = snap_to_polytope(ch, polytope=poly).astype(np.float64) * 2.0 ** -b
    return (law * d).sum(axis=1)


def _box_worst(d: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """``(k,)``: :math:`\\max \\{\\sum_j \\rho_j d_{ij} : L_j \\le \\rho_j \\le U_j,
    \\sum_j \\rho_j = 1\\}` per row (greedy: the rest of the mass, above ``L``, goes to
    the farthest outputs first, up to ``U``)."""
    order = np.argsort(-d, axis=1, kind="stable")
    far = np.take_along_axis(d, order, axis=1)
    cap = (upper - lower)[order]
    rest = 1.0 - float(lower.sum())
    before = np.cumsum(cap, axis=1) - cap
    fill = np.clip(rest - before, 0.0, cap)
    return d @ lower + (far * fill).sum(axis=1)


def _per_user(mech: SamplingMechanism, variant: str, ch: Any, b: int, d: np.ndarray
              ) -> tuple[float, dict[str, Any]]:
    """``(bound, details)`` of the per-user statement (module docstring, by path)."""
    eps = float(mech.epsilon)
    if variant == "linear" or mech.name == "krr":
        w1 = dirac_w1(mech, channel=ch, bits=b, distance=d)
        i = int(np.argmax(w1))
        return float(w1[i]), {"path": "linear in the input: max over Dirac inputs of "
                                      "W1(delta_i, snapped channel row i)",
                              "attained": True, "worst_input": i}
    if mech.name == "wpm":
        p = float(getattr(mech, "p", 1.0))
        phi = WorstCaseCost(mech.cost, eps).phis(mech.base_measure)  # type: ignore[attr-defined]
        i = int(np.argmax(phi))
        wp = float(phi[i]) ** (1.0 / p)
        tol = float(d.max()) * (2.0 * (mech.k_v + 1) * 2.0 ** -b + _LP_TOLERANCE)
        return wp + tol, {"path": "Thm 3.5 + Prop. B.2: worst-case W_p of the exact WPM "
                                  "(W1 <= W_p), plus the solver/snapping tolerance",
                          "worst_case_w_p": wp, "tolerance": tol, "p": p,
                          "attained": p == 1.0, "worst_input": i}
    poly = grid_polytope(mech.base_measure, epsilon=eps, bits=b)
    scale = 2.0 ** -b
    worst = _box_worst(d, poly.lower.astype(np.float64) * scale,
                       poly.upper.astype(np.float64) * scale)
    i = int(np.argmax(worst))
    return float(worst[i]), {"path": "every release law lies in the certified box "
                                     "[L, U] / 2**b: the farthest such law from a Dirac",
                             "attained": False, "worst_input": i}


def _population(bound: float, variant: str, name: str, d: np.ndarray, same: bool,
                n_reports: int | None, confidence: float) -> dict[str, Any]:
    """``details["population"]``: the direct report histogram's W1 to the average input."""
    if n_reports is None or variant == "linear" or name == "krr":
        why = ("n_reports not given" if n_reports is None else
               "the linear variant's EM estimate" if variant == "linear" else
               "the k-RR debiased estimate")
        return {"bound": None, "covered": False,
                "why": f"{why}: its error depends on the population (see the data-dependent "
                       "bootstrap W1 radius in estimate_uncertainty.json)"}
    n = check_int(n_reports, "n_reports", minimum=1)
    diam = float(d.max()) * (1.0 if same else 2.0)  # d(v, v') <= d(x, v) + d(x, v')
    k_v = d.shape[1]
    l1 = math.sqrt(k_v / n) + math.sqrt(2.0 * math.log(1.0 / (1.0 - confidence)) / n)
    # a coupling never moves mass farther than the largest input-output distance
    return {"bound": min(bound + 0.5 * diam * min(2.0, l1), float(d.max())), "covered": True,
            "confidence": confidence, "n_reports": n,
            "metric": "W1(average input of the users, report histogram)",
            "terms": {"mechanism": bound, "sampling": 0.5 * diam * min(2.0, l1)}}


def sample_error(mechanism_or_params: object, *, variant: str | None = None,
                 points: object = None, distance: object = None, channel: object = None,
                 bits: int | None = None, n_reports: int | None = None,
                 population_confidence: float = POPULATION_CONFIDENCE,
                 units: str | None = None) -> ErrorStatement:
    """The error statement of a population sample, from public parameters only.

    Parameters
    ----------
    mechanism_or_params : SamplingMechanism or SampleParams
        The public mechanism (with a ``SampleParams``: its variant, channel and bits).
    variant : {"direct", "linear"}, optional
        Overrides the params' variant (default ``"direct"`` for a bare mechanism).
    points : (k, dim) array, optional
        The public points (inputs = outputs), for a mechanism without a cost (KPM,
        k-RR); the distance is Euclidean between them.
    distance : (k, k_v) array, optional
        The ground distance ``d(x_i, v_j)`` (overrides the mechanism's cost).
    channel : (k, k_v) array, optional
        Linear variant or k-RR: the public channel (default: computed, ``k``
        projections).
    bits : int, optional
        Grid exponent of the integer laws (default the params' or 61).
    n_reports : int, optional
        The public number of reports, for the population-estimate figure.
    population_confidence : float, default 0.999
    units : str, optional
        The name of the distance's units (e.g. ``"grid coordinates"``, ``"km"``).

    Returns
    -------
    ErrorStatement
        ``bound`` on the per-user :math:`W_1` (confidence 1); ``details`` holds the
        path, whether the bound is attained, the worst input and ``"population"``.
    """
    if not 0 < population_confidence < 1:
        raise InvalidParameterError("population_confidence", population_confidence,
                                    "a number in (0, 1)")
    mech, var, ch, b = _resolve(mechanism_or_params, variant, channel, bits)
    d, default_units, same = _distances(mech, points, distance)
    bound, details = _per_user(mech, var, ch, b, d)
    bound = min(bound, float(d.max()))  # no law is farther than the largest distance
    details["population"] = _population(bound, var, mech.name, d, same, n_reports,
                                        population_confidence)
    covered = details["population"]["covered"]
    return ErrorStatement(
        metric=_METRIC, bound=bound, confidence=1.0, units=units or default_units,
        covers=f"the {mech.name} mechanism ({var} variant) at epsilon = {mech.epsilon:g}, "
               "every input, the device's snapping included; the population estimate's "
               "error in details['population']",
        not_covered="" if covered else "the population estimate's error: "
                    + details["population"]["why"],
        derivation=DERIVATION, details=details)


def population_error(params: SampleParams, grid: Any, n_reports: int, *,
                     channel: object = None) -> ErrorStatement | None:
    """The statement :func:`~privot.sampling.population.sample_population` records,
    before the charge: :func:`sample_error` with the grid's cell centres as the points
    (units :data:`GRID_UNITS` when the mechanism's distance is the grid's Euclidean one)
    and the public number of reports. None when no ground distance is known (a
    mechanism without a cost and no grid of ``k`` cells). Public parameters only."""
    mech = params.mechanism
    k = int(mech.k)  # type: ignore[union-attr]
    points = None
    if grid is not None and int(getattr(grid, "n_cells", -1)) == k:
        points = grid.cell_centre_points()
    cost = getattr(mech, "cost", None)
    if points is None and cost is None:
        return None
    units = None
    if points is not None and int(mech.k_v) == k:  # type: ignore[union-attr]
        euclid = cost_matrix(points, points)
        own = None if cost is None else np.asarray(cost) ** (1.0 / float(getattr(mech, "p", 1)))
        if own is None or (own.shape == euclid.shape and np.allclose(own, euclid)):
            units = GRID_UNITS
    return sample_error(params, points=points, channel=channel, n_reports=n_reports,
                        units=units)
