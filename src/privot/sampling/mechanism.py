r"""One API for every local-DP sampling mechanism of paper 003 and its baselines.

A mechanism maps a user's distribution :math:`\mu` over ``k`` public input points to a
distribution :math:`\nu = M[\mu]` over ``k_v`` public output points inside the LDP
polytope :math:`Q_{m,\varepsilon}` of a public base measure ``m`` (Def. 2.2); the user
releases one index drawn from :math:`\nu`:

>>> mech = WassersteinProjection.from_points(grid_points, epsilon=2.0)  # doctest: +SKIP
>>> nu = mech.privatize(mu)            # (n, k_v), each row in Q_{m, eps}
>>> out = mech.sample(mu)              # DeviceSample: one index per user, exact

* :meth:`SamplingMechanism.privatize` computes :math:`\nu` (floats; no randomness);
* :meth:`SamplingMechanism.sample` snaps :math:`\nu` into the certified integer
  polytope, verifies it on the integers and draws with the secure sampler
  (:func:`~privot.sampling.device.private_sample`): that is where privacy is enforced,
  whatever the floats did;
* :meth:`SamplingMechanism.sample_cells` is :meth:`sample` for users given by their
  input point (Dirac inputs, e.g. k-RR of each user's cell): each draws from its row of
  the snapped channel, built once, without an ``(n, k)`` input;
* :meth:`SamplingMechanism.channel` is the row :math:`M[\delta_i]` of every Dirac input
  (the worst case, Prop. B.2), for audits and for the linear population variant.

Mechanisms: :class:`WassersteinProjection` (WPM, exact or entropic; uniform, optimal or
given base measure), :class:`KLProjection` (KPM, Sec. 2.2), :class:`GenreKLProjection`
(KPM per group of points, Sec. 5.2), :class:`ExponentialMechanism` (utility = minus the
expected cost to :math:`\mu`, or minus the cost to its mean) and
:class:`RandomizedResponse` (k-RR). :func:`make_mechanism` builds one by name (the CLI).

Totality
--------
:meth:`privatize` always answers with a data-independent amount of work on the release
path: the entropic solver runs a fixed number of iterations (``n_iter``, no
data-dependent stopping), and a failure of a solver on one user (iteration cap,
numerical trouble) gives **that user** :math:`m / \sum_j m_j`, which lies in
:math:`Q_{m,\varepsilon}` exactly when the polytope is non-empty. Either way the output
is in the polytope, so the guarantee never depends on a solver.

The fallback is per user, never per batch: one user's data must not change another
user's output law (else that user's report would also leak the other's data). The exact
solver runs one LP per user (users with the same input share one: it is deterministic).
The entropic solver batches users, but its rows are
independent (:mod:`privot.sampling.wpm_entropic`, *Users are independent*: no shared
constant, maximum, early exit or domain choice) and it confines a numerical failure to
the failing user's row (``on_failure="flag"``): that user gets the fallback, the others
their own result, bit for bit. Should it still raise for a batch (an error it does not
attribute to a user, such as a bad public parameter), every user of the batch is solved
again alone, each with its own fallback (:meth:`WassersteinProjection._entropic_rows`).

Privacy
-------
Unit: one user's whole distribution. Relation: local (any two inputs of one user).
Every :math:`\nu` a mechanism can output lies in :math:`Q_{m,\varepsilon}`, so one sample
is :math:`\varepsilon`-LDP (Prop. 3.2); the cost matrix and base measure are public
(computed from public points only, or from a charged DP step). ``docs/privacy/sampling.md``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from privot._validation import check_int
from privot.errors import ConvergenceError, InvalidParameterError
from privot.sampling._checks import (
    check_base_measure,
    check_cost,
    check_distributions,
    check_epsilon,
    check_order,
    check_regularization,
)
from privot.sampling.base_measure import (
    BaseMeasureResult,
    WorstCaseCost,
    best_uniform_base_measure,
    optimal_base_measure,
    uniform_base_measure,
)
from privot.sampling.baselines import (
    exponential_expected_cost,
    exponential_mean_cost,
    kpm,
    kpm_base_measure,
    kpm_genre,
    krr,
)
from privot.sampling.cost import cost_matrix
from privot.sampling.device import (
    DeviceSample,
    TableSampler,
    grid_polytope,
    private_sample,
    private_sample_cells,
)
from privot.sampling.wpm_entropic import wpm_entropic
from privot.sampling.wpm_exact import wpm_exact

__all__ = [
    "BASE_MEASURES",
    "MECHANISMS",
    "ExponentialMechanism",
    "GenreKLProjection",
    "KLProjection",
    "RandomizedResponse",
    "SamplingMechanism",
    "WassersteinProjection",
    "make_mechanism",
]

#: Names accepted by :class:`WassersteinProjection` for its base measure.
BASE_MEASURES = ("uniform", "best-uniform", "optimal")
#: Names accepted by :func:`make_mechanism` (and ``privot sample --mechanism``).
MECHANISMS = ("wpm", "wpm-entropic", "kpm", "exp", "krr")


class SamplingMechanism:
    """Base class: a public channel from ``k`` input to ``k_v`` output points.

    Subclasses set :attr:`name`, :attr:`epsilon`, :attr:`base_measure` (``(k_v,)``),
    :attr:`k`, :attr:`k_v` and implement :meth:`_privatize_rows` on validated
    ``(n, k)`` rows.
    """

    name: str = "mechanism"
    epsilon: float
    base_measure: np.ndarray
    k: int
    k_v: int

    def privatize(self, mu: object) -> np.ndarray:
        r""":math:`\nu = M[\mu]` for one ``(k,)`` or many ``(n, k)`` distributions.

        Returns ``(k_v,)`` or ``(n, k_v)``; every row in :math:`Q_{m,\varepsilon}` up to
        float rounding (removed by :meth:`sample`'s snapping).
        """
        rows, single = check_distributions(mu, k=self.k)
        nu = self._privatize_rows(rows)
        return nu[0] if single else nu

    def _privatize_rows(self, rows: np.ndarray) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def sample(self, mu: object, *, rng: Any = None, accountant: Any = None
               ) -> DeviceSample:
        """One eps-LDP output index per user: :meth:`privatize`, then the exact device
        step (:func:`~privot.sampling.device.private_sample`; charged ``epsilon`` once,
        relation local, before anything is drawn)."""
        return private_sample(self.privatize(mu), base_measure=self.base_measure,
                              epsilon=self.epsilon, rng=rng, accountant=accountant)

    def sample_cells(self, cells: object, *, rng: Any = None, accountant: Any = None
                     ) -> DeviceSample:
        r"""One eps-LDP output index per user whose input is one public point (the Dirac
        :math:`\delta_i`), given by its index: :meth:`sample` of the one-hot rows,
        without building the ``(n, k)`` rows.

        The snapped channel (:meth:`channel`, public) is built once per mechanism and
        each user draws from its own row with the secure sampler
        (:func:`~privot.sampling.device.private_sample_cells`): for a mechanism that
        treats rows independently (k-RR, KPM, the exact WPM, the exponential mechanism)
        the same certified weights as :meth:`sample` on ``np.eye(k)[cells]``, drawn
        exactly: the same law. A channel of the k-RR form (one entry per row off a
        common value) reads 16 bits per user first and the rest only where they matter
        (other indices from the same bit source, the same law); other channels read one
        word per user, as :meth:`sample` (the same indices;
        ``tests/sampling/test_sample_cells.py``).

        Parameters
        ----------
        cells : (n,) int array
            Each user's input point, in ``[0, k)`` (validated).
        rng, accountant
            As in :meth:`sample` (charged ``epsilon`` once, before anything is drawn).

        Returns
        -------
        DeviceSample
        """
        return private_sample_cells(self._cell_sampler(), cells, rng=rng,
                                    accountant=accountant)

    def _cell_sampler(self) -> TableSampler:
        """The snapped channel, cached for the public ``(epsilon, base_measure)``."""
        key = (float(self.epsilon), np.asarray(self.base_measure, dtype=np.float64).tobytes())
        cached = getattr(self, "_cells_cache", None)
        if cached is None or cached[0] != key:
            poly = grid_polytope(self.base_measure, epsilon=self.epsilon)
            cached = (key, TableSampler(self.channel(), poly))
            self._cells_cache = cached
        return cached[1]

    def channel(self) -> np.ndarray:
        r"""``(k, k_v)``: row ``i`` is :math:`M[\delta_i]` (the Dirac inputs)."""
        return self._privatize_rows(np.eye(self.k))

    def __repr__(self) -> str:
        """One line: class, name, epsilon and the input/output sizes (public)."""
        extra = ""
        if getattr(self, "base_measure_name", None):
            extra = f", base_measure={self.base_measure_name}"
        return (f"{type(self).__name__}({self.name}, epsilon={self.epsilon:g}, k={self.k}, "
                f"k_v={self.k_v}{extra})")

    def release_dict(self) -> dict[str, Any]:
        """Public description of the mechanism (parameters only, no data)."""
        return {"mechanism": self.name, "epsilon": self.epsilon, "k": self.k,
                "k_v": self.k_v, "guarantee": "pure epsilon-LDP per user (one sample)",
                "unit": "one user's whole distribution",
                "relation": "local (any two inputs of one user)"}


#: What a solver may raise on valid, checked inputs (iteration caps, numerical trouble):
#: the release path answers with the fallback instead.
_SOLVER_FAILURES = (ConvergenceError, ValueError, RuntimeError, FloatingPointError)


def _first_dirac(k: int) -> np.ndarray:
    """``(1, k)``: the Dirac at input 0, to read a baseline's base measure (it does not
    depend on the input)."""
    row = np.zeros((1, k))
    row[0, 0] = 1.0
    return row


def _fallback(base_measure: np.ndarray) -> np.ndarray:
    """``m / sum(m)``: in :math:`Q_{m,\\varepsilon}` whenever it is non-empty."""
    return base_measure / base_measure.sum()


class WassersteinProjection(SamplingMechanism):
    r"""The Wasserstein Projection Mechanism (Def. 3.1): :math:`\nu \in
    \arg\min_{\nu \in Q_{m,\varepsilon}} W_p(\nu, \mu)`.

    Parameters
    ----------
    cost : (k, k_v) array_like
        :math:`C_{ij} = d(x_i, v_j)^p`, public (see :meth:`from_points`).
    epsilon : float
        > 0.
    base_measure : {"uniform", "best-uniform", "optimal"} or (k_v,) array, \
default "best-uniform"
        ``"best-uniform"``: the multiple of the uniform measure with the smallest worst
        case (what the paper's experiments use); ``"optimal"``: the minimax
        :math:`m^\star` of Thm 3.4 (cutting planes with a certified gap,
        :func:`~privot.sampling.base_measure.optimal_base_measure`, kept in
        :attr:`base_measure_result`); ``"uniform"``: :math:`1/k_v`. The default is not
        ``"optimal"`` because :math:`m^\star` minimises the *worst* case (a user at one
        point) and is sparse: on spread-out real distributions its average cost is
        higher (Gowalla NYC, 20 x 20, eps = 2: 16.9 km against 10.2 km per user;
        ``benchmarks/README.md``).
    solver : {"exact", "entropic"}, default "exact"
        The LP by network simplex (App. I) or Algorithm 1 (entropic).
    lam : float, optional
        Entropic regularisation, in cost units (default ``0.01 * max(C)``).
    n_iter : int, default 40
        Algorithm 1 iterations, fixed (no data-dependent stopping: see the module's
        *Totality*). 40 is the paper's setting; at ``lam = 0.01 max(C)`` on a 20 x 20
        grid the excess W_p over the exact LP is 0.1-0.7% on average
        (``benchmarks/bench_sampling_speed.py``).
    p : float, default 1
        The order of :math:`W_p` (the cost is already :math:`d^p`; ``p`` serves the
        reported distances and Prop. 4.1's bound).
    """

    name = "wpm"

    def __init__(self, cost: object, *, epsilon: float, base_measure: object = "best-uniform",
                 solver: str = "exact", lam: float | None = None, n_iter: int = 40,
                 p: float = 1.0) -> None:
        self.cost = check_cost(cost)
        self.k, self.k_v = self.cost.shape
        self.epsilon = check_epsilon(epsilon)
        self.p = check_order(p)
        if solver not in ("exact", "entropic"):
            raise InvalidParameterError("solver", solver, "'exact' or 'entropic'")
        self.solver = solver
        self.lam = (check_regularization(lam) if lam is not None
                    else 0.01 * float(self.cost.max()) or 1.0)
        self.n_iter = check_int(n_iter, "n_iter", minimum=1)
        self.base_measure_result: BaseMeasureResult | None = None
        if isinstance(base_measure, str):
            if base_measure not in BASE_MEASURES:
                raise InvalidParameterError("base_measure", base_measure,
                                            f"one of {BASE_MEASURES} or a (k_v,) array")
            if base_measure == "optimal":
                self.base_measure_result = optimal_base_measure(self.cost, self.epsilon)
                m = self.base_measure_result.base_measure
            elif base_measure == "uniform":
                m = uniform_base_measure(self.k_v, self.epsilon)
            else:
                m = best_uniform_base_measure(self.cost, self.epsilon)
            self.base_measure_name = base_measure
        else:
            m = base_measure
            self.base_measure_name = "given"
        self.base_measure = check_base_measure(m, self.epsilon, k_v=self.k_v)
        if solver == "entropic":
            self.name = "wpm-entropic"

    @classmethod
    def from_points(cls, input_points: object, output_points: object | None = None, *,
                    metric: str = "euclidean", p: float = 1.0, **kwargs: Any
                    ) -> WassersteinProjection:
        """WPM with :math:`C = d(x_i, v_j)^p` from public points (outputs default to the
        inputs); ``kwargs`` as in the class."""
        out = input_points if output_points is None else output_points
        return cls(cost_matrix(input_points, out, metric=metric, p=p), p=p, **kwargs)

    def _privatize_rows(self, rows: np.ndarray) -> np.ndarray:
        if self.solver == "entropic":
            return self._entropic_rows(rows)
        # one LP per distinct row: the solver is deterministic, so users with the same
        # input (the same Dirac, or the public default input of a population) share it
        uniq, inverse = np.unique(rows, axis=0, return_inverse=True)
        out = np.empty((uniq.shape[0], self.k_v))
        for i, row in enumerate(uniq):
            try:
                out[i] = wpm_exact(row, self.cost, self.base_measure, self.epsilon).nu
            except _SOLVER_FAILURES:  # total: see the module docstring
                out[i] = _fallback(self.base_measure)
        return out[inverse.reshape(-1)]

    def _entropic_rows(self, rows: np.ndarray) -> np.ndarray:
        """Algorithm 1 for a batch, the fallback per user (module docstring, *Totality*).

        The solver treats the rows independently and confines a row's numerical failure
        to that row (``on_failure="flag"``): such a user gets the fallback, the others
        their own result. What it still raises for a whole batch is not attributed to a
        user (a bad public parameter; by design no user's data makes the batch raise);
        then every user is solved again alone, each with its own fallback, so that even
        then no user's fallback is decided by another user's data.
        """
        try:
            res = wpm_entropic(rows, self.cost, self.base_measure, self.epsilon,
                               lam=self.lam, p=self.p, max_iter=self.n_iter, tol=0.0,
                               on_nonconvergence="ignore", on_failure="flag")
        except _SOLVER_FAILURES:  # total: see the module docstring
            if rows.shape[0] == 1:
                return _fallback(self.base_measure)[None, :].copy()
            return np.concatenate([self._entropic_rows(rows[i:i + 1])
                                   for i in range(rows.shape[0])])
        nu = np.array(np.atleast_2d(res.nu), dtype=np.float64)
        failed = np.atleast_1d(res.failed)
        if np.any(failed):
            nu[failed] = _fallback(self.base_measure)
        return nu

    def worst_case_cost(self) -> float:
        r"""Thm 3.5: :math:`\sup_\mu W_p(M[\mu], \mu) = f(m)^{1/p}` (exact solver)."""
        return float(WorstCaseCost(self.cost, self.epsilon).value(self.base_measure)
                     ) ** (1.0 / self.p)

    def release_dict(self) -> dict[str, Any]:
        out = super().release_dict()
        lo, hi = math.exp(-self.epsilon / 2), math.exp(self.epsilon / 2)
        out.update({"solver": self.solver, "p": self.p,
                    "base_measure": self.base_measure_name,
                    "base_measure_total": float(np.sum(self.base_measure)),
                    "base_measure_note": (
                        "m is a measure, not a probability: the output law nu of every "
                        "input satisfies e^(-eps/2) m <= nu <= e^(eps/2) m (paper 003, "
                        "Def. 2.2), so any total mass in [e^(-eps/2), e^(eps/2)] = "
                        f"[{lo:.4g}, {hi:.4g}] is allowed; 'best-uniform' takes the "
                        "uniform m of the total with the smallest worst case"),
                    "worst_case_w_p": self.worst_case_cost()})
        if self.solver == "entropic":
            out.update({"lam": self.lam, "n_iter": self.n_iter,
                        "prop_4_1_bound_w_p": (self.lam * math.log(self.k * self.k_v))
                        ** (1.0 / self.p)})
        if self.base_measure_result is not None:
            r = self.base_measure_result
            out.update({"optimal_worst_case_w_p": r.worst_case_distance(self.p),
                        "ldp_lower_bound_w_p": r.distance_lower_bound(self.p),
                        "base_measure_gap": r.gap})
        return out


class KLProjection(SamplingMechanism):
    """KPM (Sec. 2.2): the KL projection onto the polytope of the uniform-type base
    measure :math:`e^{\\varepsilon/2}/(e^\\varepsilon + k - 1)`; outputs = inputs."""

    name = "kpm"

    def __init__(self, k: int, *, epsilon: float) -> None:
        self.k = self.k_v = check_int(k, "k", minimum=1)
        self.epsilon = check_epsilon(epsilon)
        self.base_measure = kpm_base_measure(self.k, epsilon=self.epsilon)

    def _privatize_rows(self, rows: np.ndarray) -> np.ndarray:
        return np.atleast_2d(kpm(rows, epsilon=self.epsilon).nu)


class GenreKLProjection(SamplingMechanism):
    """KPM on groups of points (Sec. 5.2): KPM on the group distribution, then a
    uniform output point of the drawn group (post-processing)."""

    name = "kpm-genre"

    def __init__(self, input_groups: object, output_groups: object, *, epsilon: float,
                 n_groups: int | None = None) -> None:
        self.epsilon = check_epsilon(epsilon)
        self.input_groups, self.output_groups, self.n_groups = (
            input_groups, output_groups, n_groups)
        probe = kpm_genre(_first_dirac(np.shape(input_groups)[0]),
                          input_groups=input_groups, output_groups=output_groups,
                          epsilon=self.epsilon, n_groups=n_groups)
        self.base_measure = np.asarray(probe.base_measure, dtype=np.float64)
        self.k = int(np.shape(input_groups)[0])
        self.k_v = int(self.base_measure.shape[0])

    def _privatize_rows(self, rows: np.ndarray) -> np.ndarray:
        return np.atleast_2d(kpm_genre(rows, input_groups=self.input_groups,
                                       output_groups=self.output_groups,
                                       epsilon=self.epsilon, n_groups=self.n_groups).nu)


class ExponentialMechanism(SamplingMechanism):
    r"""The exponential mechanism over output points: utility :math:`-\sum_i \mu_i
    C_{ij}` (``utility="expected-cost"``) or :math:`-d(\bar x_\mu, v_j)^p`
    (``"mean-cost"``, needs the points), sensitivity from the public cost."""

    name = "exp"

    def __init__(self, cost: object | None = None, *, epsilon: float,
                 utility: str = "expected-cost", input_points: object | None = None,
                 output_points: object | None = None, p: float = 2.0) -> None:
        self.epsilon = check_epsilon(epsilon)
        if utility not in ("expected-cost", "mean-cost"):
            raise InvalidParameterError("utility", utility, "'expected-cost' or 'mean-cost'")
        self.utility = utility
        if utility == "mean-cost":
            if input_points is None or output_points is None:
                raise InvalidParameterError("input_points", input_points,
                                            "the input and output points for 'mean-cost'")
            self.points = np.asarray(input_points, dtype=np.float64)
            self.output_points = np.asarray(output_points, dtype=np.float64)
            self.p = check_order(p)
            self.k, self.k_v = self.points.shape[0], self.output_points.shape[0]
        else:
            self.cost = check_cost(cost)
            self.k, self.k_v = self.cost.shape
        self.base_measure = np.asarray(self._run(_first_dirac(self.k)).base_measure)

    def _run(self, rows: np.ndarray) -> Any:
        if self.utility == "mean-cost":
            return exponential_mean_cost(rows, self.points, self.output_points,
                                         epsilon=self.epsilon, p=self.p)
        return exponential_expected_cost(rows, self.cost, epsilon=self.epsilon)

    def _privatize_rows(self, rows: np.ndarray) -> np.ndarray:
        return np.atleast_2d(self._run(rows).nu)


class RandomizedResponse(SamplingMechanism):
    """Generalised randomized response (k-RR) of one point drawn from :math:`\\mu`:
    :math:`\\nu = q + (p - q)\\mu`, ``p/q = e^eps``; outputs = inputs."""

    name = "krr"

    def __init__(self, k: int, *, epsilon: float) -> None:
        self.k = self.k_v = check_int(k, "k", minimum=1)
        self.epsilon = check_epsilon(epsilon)
        self.base_measure = kpm_base_measure(self.k, epsilon=self.epsilon)

    def _privatize_rows(self, rows: np.ndarray) -> np.ndarray:
        return np.atleast_2d(krr(rows, epsilon=self.epsilon).nu)


def make_mechanism(name: str, *, points: object, epsilon: float, metric: str = "euclidean",
                   p: float = 1.0, base_measure: object = "best-uniform",
                   lam: float | None = None,
                   n_iter: int = 40) -> SamplingMechanism:
    """A mechanism by name over the same public points as inputs and outputs.

    ``name`` in :data:`MECHANISMS`: ``"wpm"`` (exact), ``"wpm-entropic"``, ``"kpm"``,
    ``"exp"`` (expected-cost utility) or ``"krr"``.
    """
    if name not in MECHANISMS:
        raise InvalidParameterError("mechanism", name, f"one of {MECHANISMS}")
    pts = np.asarray(points, dtype=np.float64)
    k = int(pts.shape[0])
    if name in ("wpm", "wpm-entropic"):
        return WassersteinProjection.from_points(
            pts, metric=metric, p=p, epsilon=epsilon, base_measure=base_measure,
            solver="exact" if name == "wpm" else "entropic", lam=lam, n_iter=n_iter)
    if name == "kpm":
        return KLProjection(k, epsilon=epsilon)
    if name == "krr":
        return RandomizedResponse(k, epsilon=epsilon)
    return ExponentialMechanism(cost_matrix(pts, pts, metric=metric, p=p), epsilon=epsilon)
