r"""The public choices of :func:`~privot.barycenters.private_barycenter`, as frozen objects.

One :class:`BarycenterParams` holds the choices every method reads (the bounds, ``m``,
the budget, the method, the cost's order, the weights of the groups, the population,
the JL dimension and the non-private solver) and one option object per method:

* :class:`CoresetOptions` -- the private coreset (paper 000 Alg. 2), also the
  perturbation method's anchor: placement, region, size, depth, weighted atoms;
* :class:`PerturbationOptions` -- output perturbation (paper 000 Alg. 1, paper 001
  Thm 5): the released step (``"lloyd"`` or ``"anchored"``) and its parameters;
* :class:`SubspaceOptions` -- the subspace method (high dimension): basis, ``d'``,
  cells, rounds, budget share.

Every field is validated when the object is built (an
:class:`~privot.errors.InvalidParameterError` naming it); checks that need the data's
public shape (``m`` at most the smallest group, an anchor of shape ``(m, d)``, a basis
of ``d`` rows) run in :func:`~privot.barycenters.private_barycenter`, before anything
is charged. Keyword options build the same objects: a keyword that names a field of an
option object goes there (``private_barycenter(groups, step="anchored", ...)`` is
``perturbation=PerturbationOptions(step="anchored")``).

Privacy
-------
Public by construction: the caller's choices, never read from the data.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privot._jsonable import json_ready
from privot._params import ReleaseParams
from privot._validation import (
    check_delta,
    check_epsilon,
    check_int,
    check_points,
    check_positive,
)
from privot.barycenters._repr import brief
from privot.barycenters.coresets import MAX_DEPTH, PLACEMENTS
from privot.barycenters.geometry import PublicBounds
from privot.barycenters.lloyd_perturbation import DEFAULT_BALANCING_ROUNDS, DEFAULT_PROXY_SIZE
from privot.barycenters.perturbation import CALIBRATIONS
from privot.errors import InvalidParameterError
from privot.ot import BARYCENTER_METHODS

__all__ = ["AUTO_CORESET_MAX_DIM", "DEFAULT_ITERATIONS", "DEFAULT_MAX_ATOMS",
           "DEFAULT_MAX_PLACED", "METHODS", "PERTURBATION_STEPS", "BarycenterParams",
           "CoresetOptions", "PerturbationOptions", "SubspaceOptions", "changed_fields",
           "choose_method"]

METHODS = ("auto", "coreset", "perturbation", "subspace")
#: The released statistics of ``method="perturbation"``.
PERTURBATION_STEPS = ("lloyd", "anchored")
#: Noisy steps of the perturbation method (Lloyd or anchored).
DEFAULT_ITERATIONS = 1
#: Default cap on the weighted atoms each group's coreset is given to the solver as
#: (``max_atoms``; :func:`~privot.barycenters.coresets.cell_atoms`). Measured on US
#: places (benchmarks/bench_barycenter_scale.py, k = 3, n = 109,000 per group, m = 32,
#: eps = 1): see ``benchmarks/README.md``, section "Barycenters at scale".
DEFAULT_MAX_ATOMS = 4096
#: With ``max_atoms``, at most this many coreset points per group are placed before they
#: are merged into atoms (placement is cheap; the cap only bounds memory at 10^7 rows).
DEFAULT_MAX_PLACED = 1_000_000
#: The most noisy Lloyd steps (``step="lloyd"``).
MAX_LLOYD_STEPS = 100


def _is_default(value: object, default: object) -> bool:
    """Whether ``value`` is the field's default (arrays never are: their defaults are None)."""
    if value is default:
        return True
    if default is None or isinstance(value, np.ndarray):
        return False
    try:
        return bool(value == default)
    except (TypeError, ValueError):
        return False


def _default_of(f: dataclasses.Field) -> object:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


def changed_fields(options: Any) -> list[str]:
    """The fields of an option object set to something other than their defaults, in
    declaration order (a nested option object counts when any of its fields does)."""
    out = []
    for f in dataclasses.fields(options):
        value = getattr(options, f.name)
        if dataclasses.is_dataclass(value):
            if changed_fields(value):
                out.append(f.name)
        elif not _is_default(value, _default_of(f)):
            out.append(f.name)
    return out


def _brief(value: object) -> str:
    """One short token for a field value in a repr (arrays by shape, option objects by
    their own one-line repr)."""
    return repr(value) if isinstance(value, ReleaseParams) else brief(value)


def _one_line_repr(obj: Any) -> str:
    """``Name(field=value, ...)`` of the fields that differ from their defaults (and the
    required ones): one line, arrays given by their shape."""
    parts = [f"{name}={_brief(getattr(obj, name))}" for name in changed_fields(obj)]
    return f"{type(obj).__name__}({', '.join(parts)})"


def _unit_interval(value: object, name: str) -> None:
    if not (isinstance(value, (int, float, np.floating)) and not isinstance(value, bool)
            and 0 < value < 1):
        raise InvalidParameterError(name, value, "a number in (0, 1)")


#: ``method="auto"`` runs the coreset in at most this many dimensions and the subspace
#: method above (public: ``d``). Measured: the coreset keeps 1.03x the non-private cost on
#: the US maps (d = 2) and carries little signal from d = 3 on (benchmarks/README.md,
#: "Barycenters in high dimension").
AUTO_CORESET_MAX_DIM = 2


def choose_method(d: int) -> str:
    """What ``method="auto"`` runs for data in ``d`` dimensions (a public rule).

    ``"coreset"`` (paper 000 Alg. 2) for ``d <= AUTO_CORESET_MAX_DIM``, ``"subspace"``
    above it (measured again in issue 26 on public tables of 7 and 8 columns, where the
    subspace method beat the coreset in every setting; docs/barycenters_defaults.md).
    """
    return "coreset" if d <= AUTO_CORESET_MAX_DIM else "subspace"


@dataclass(frozen=True, repr=False)
class CoresetOptions(ReleaseParams):
    r"""The private coreset's public choices (``method="coreset"``, and the perturbation
    method's anchor).

    Attributes
    ----------
    placement : {"scaled", "uniform", "centre"}
        Where coreset points go in their leaf cell (paper 000 App. F.2).
    region : Region, optional
        Public region the coreset points are restricted to (e.g.
        :func:`~privot.barycenters.regions.continental_us`).
    coreset_size : int, optional
        Subsample each coreset to this many points (post-processing). Default: the group
        size, at most ``DEFAULT_MAX_CORESET`` when ``max_atoms`` is None and at most
        :data:`DEFAULT_MAX_PLACED` otherwise.
    depth : int, optional
        Depth of the partition, 1 to ``MAX_DEPTH`` (default about
        :math:`\log_2(\varepsilon n)`).
    max_atoms : int or None
        The solver sees each coreset as at most this many weighted atoms (its points
        merged by the cells of its public partition); None: one atom per point.
    """

    placement: str = "scaled"
    region: Any = None
    coreset_size: int | None = None
    depth: int | None = None
    max_atoms: int | None = DEFAULT_MAX_ATOMS

    def __post_init__(self) -> None:
        if self.placement not in PLACEMENTS:
            raise InvalidParameterError("placement", self.placement, f"one of {PLACEMENTS}")
        if self.region is not None and not callable(getattr(self.region, "contains", None)):
            raise InvalidParameterError("region", self.region,
                                        "None or a Region (an object with contains(points))")
        if self.coreset_size is not None:
            check_int(self.coreset_size, "coreset_size", minimum=1)
        if self.depth is not None:
            check_int(self.depth, "depth", minimum=1, maximum=MAX_DEPTH)
        if self.max_atoms is not None:
            check_int(self.max_atoms, "max_atoms", minimum=1)

    __repr__ = _one_line_repr


@dataclass(frozen=True, repr=False)
class PerturbationOptions(ReleaseParams):
    r"""Output perturbation's public choices (``method="perturbation"``).

    Attributes
    ----------
    step : {"lloyd", "anchored"}
        The released statistic. ``"lloyd"``: noisy Lloyd steps on each group's power
        cells, balanced on the private coreset
        (:mod:`privot.barycenters.lloyd_perturbation`); ``"anchored"``: the anchored
        barycentric step over ``splits`` parts (:mod:`privot.barycenters.perturbation`).
    anchor : (m, d) array, optional
        Public anchor atoms (caller coordinates); default: a private-coreset barycenter
        bought with ``anchor_fraction`` of the sample epsilon.
    anchor_fraction : float, optional
        In (0, 1); default ``DEFAULT_LLOYD_ANCHOR_FRACTION`` for ``"lloyd"``,
        ``DEFAULT_ANCHOR_FRACTION`` for ``"anchored"``.
    iterations : int
        Noisy steps, >= 1 (at most 100 with ``"lloyd"``).
    splits : int, optional
        ``k'``, parts per group (``"anchored"`` only); default paper 001 Thm 8's
        :math:`k'_*` (:func:`~privot.barycenters.perturbation.recommended_splits`).
    calibration : {"analytic", "classic"}
        Gaussian calibration; ``"classic"`` (the paper's
        :math:`\sigma^2 = 2m\ln(1.25/\delta)/(\varepsilon k)^2`) with ``"anchored"`` only.
    balancing_rounds : int
        ``"lloyd"``: private balancing rounds of the cell counts before each step, 0
        to 10.
    proxy_size : int
        ``"lloyd"``: placed anchor-coreset points per group in the power-weight solves,
        100 to :data:`DEFAULT_MAX_PLACED`.
    shrinkage : bool
        ``"lloyd"``: empirical-Bayes shrinkage of each step toward the previous atoms
        (post-processing).
    """

    step: str = "lloyd"
    anchor: np.ndarray | None = None
    anchor_fraction: float | None = None
    iterations: int = DEFAULT_ITERATIONS
    splits: int | None = None
    calibration: str = "analytic"
    balancing_rounds: int = DEFAULT_BALANCING_ROUNDS
    proxy_size: int = DEFAULT_PROXY_SIZE
    shrinkage: bool = True

    def __post_init__(self) -> None:
        if self.calibration not in CALIBRATIONS:
            raise InvalidParameterError("calibration", self.calibration,
                                        f"one of {CALIBRATIONS}")
        if self.step not in PERTURBATION_STEPS:
            raise InvalidParameterError("step", self.step, f"one of {PERTURBATION_STEPS}")
        if self.anchor_fraction is not None:
            _unit_interval(self.anchor_fraction, "anchor_fraction")
        check_int(self.balancing_rounds, "balancing_rounds", minimum=0, maximum=10)
        check_int(self.proxy_size, "proxy_size", minimum=100, maximum=DEFAULT_MAX_PLACED)
        if not isinstance(self.shrinkage, (bool, np.bool_)):
            raise InvalidParameterError("shrinkage", self.shrinkage, "True or False")
        if self.anchor is not None:
            anchor = np.array(check_points(self.anchor, "anchor"), dtype=np.float64)
            anchor.setflags(write=False)
            object.__setattr__(self, "anchor", anchor)
        if self.step == "lloyd":  # the anchored step's parameters have no meaning here
            if self.splits is not None:
                raise InvalidParameterError("splits", self.splits, "omitted with step='lloyd' "
                                            "(it belongs to step='anchored')")
            if self.calibration != "analytic":
                raise InvalidParameterError("calibration", self.calibration,
                                            "'analytic' with step='lloyd' (GDP calibration)")
            check_int(self.iterations, "iterations", minimum=1, maximum=MAX_LLOYD_STEPS)
        else:
            check_int(self.iterations, "iterations", minimum=1)
            if self.splits is not None:
                check_int(self.splits, "splits", minimum=1)

    __repr__ = _one_line_repr


@dataclass(frozen=True, repr=False)
class SubspaceOptions(ReleaseParams):
    r"""The subspace method's public choices (``method="subspace"``;
    :mod:`privot.barycenters.subspace`). None: the library's default, from public
    quantities only.

    Attributes
    ----------
    basis : None, "dct" or (d, d0) array
        A public orthonormal basis the data is expressed in first (None: the identity);
        ``"dct"``: the 2-D DCT of images of ``image_shape``, its ``basis_dim`` lowest
        frequencies; an array must have orthonormal columns (checked against ``d``).
    image_shape : (height, width), optional
        With ``basis="dct"`` (required there): ``height * width = d`` (row-major).
    basis_dim : int, optional
        With ``basis="dct"``: ``d0`` (at most ``d``).
    subspace_dim : int, optional
        ``d'``, 0 to ``d0`` (0: each group's DP mean only).
    cells : int, optional
        Lloyd centres per group, >= 1.
    rounds : int, optional
        Lloyd rounds, 0 to 100 (>= 1 with more than one cell).
    projection_share : float, optional
        Share of the budget spent on the DP second moment, in (0, 1).
    complement_mean : bool, optional
        Release each group's mean outside the subspace (True) or take the public
        centre there (False).
    covariance : bool, optional
        Release each group's whole second moment in the subspace (a DP Gaussian with a
        full covariance: correlated columns keep their correlation) rather than its
        diagonal.
    """

    basis: Any = None
    image_shape: tuple[int, int] | None = None
    basis_dim: int | None = None
    subspace_dim: int | None = None
    cells: int | None = None
    rounds: int | None = None
    projection_share: float | None = None
    complement_mean: bool | None = None
    covariance: bool | None = None

    def __post_init__(self) -> None:
        if isinstance(self.basis, str) and self.basis != "dct":
            raise InvalidParameterError("basis", self.basis, "None, 'dct' or a (d, d0) array")
        dct = isinstance(self.basis, str)
        if self.basis_dim is not None and not dct:
            raise InvalidParameterError("basis_dim", self.basis_dim,
                                        "omitted unless basis='dct'")
        if self.image_shape is not None and not dct:
            raise InvalidParameterError("image_shape", self.image_shape,
                                        "omitted unless basis='dct'")
        if dct and self.image_shape is None:
            raise InvalidParameterError("image_shape", None, "(height, width) with height "
                                        "* width = d for basis='dct'")
        if self.basis_dim is not None:
            check_int(self.basis_dim, "basis_dim", minimum=1)
        if self.subspace_dim is not None:
            check_int(self.subspace_dim, "subspace_dim", minimum=0)
        if self.cells is not None:
            check_int(self.cells, "cells", minimum=1)
        if self.rounds is not None:
            check_int(self.rounds, "rounds", minimum=0, maximum=100)
        if self.projection_share is not None:
            _unit_interval(self.projection_share, "projection_share")
        if self.complement_mean is not None and not isinstance(self.complement_mean,
                                                               (bool, np.bool_)):
            raise InvalidParameterError("complement_mean", self.complement_mean,
                                        "None, True or False")
        if self.covariance is not None and not isinstance(self.covariance,
                                                          (bool, np.bool_)):
            raise InvalidParameterError("covariance", self.covariance, "None, True or False")

    __repr__ = _one_line_repr


#: The option objects of :class:`BarycenterParams`: its field name and class.
OPTION_GROUPS: dict[str, type[ReleaseParams]] = {
    "coreset": CoresetOptions, "perturbation": PerturbationOptions,
    "subspace": SubspaceOptions}


@dataclass(frozen=True, repr=False)
class BarycenterParams(ReleaseParams):
    r"""The public choices of a private barycenter, validated when built.

    Keyword options name either a field here or a field of one of the option objects
    (:meth:`from_options`, :meth:`replace` route them), so
    ``BarycenterParams.from_options({"m": 8, "epsilon": 1.0, "step": "anchored"})``
    equals ``BarycenterParams(m=8, epsilon=1.0,
    perturbation=PerturbationOptions(step="anchored"))``.

    Attributes
    ----------
    m : int
        Support size, >= 1 (at most the smallest group, checked on the data).
    epsilon : float
        The privacy budget (on the population when ``population_size`` is given).
    bounds : PublicBounds, optional
        Public box or ball holding the data; required with point groups, taken from
        engine leaf counts otherwise.
    delta : float, optional
        In [0, 1): required in (0, 1) by ``"perturbation"``, omitted or 0 for
        ``"coreset"``; ``"subspace"``: omitted or 0 for Laplace noise (pure DP), in
        (0, 1) for Gaussian noise.
    method : {"auto", "coreset", "perturbation", "subspace"}
        ``"auto"``: the coreset for ``d <= 2``, the subspace method above.
    p : float
        Order of the Wasserstein cost, >= 1.
    group_weights : sequence of float, optional
        :math:`\beta_i` (normalised to sum to one), default ``1/k``.
    population_size : int or sequence of int, optional
        Size of the population each group was sampled from uniformly without
        replacement: the budget is met on the population (amplification).
    projection_dim : int, "auto" or None
        :math:`d'` of the JL map of the coreset and perturbation methods.
    reg, solver, n_outer, n_inner, polish :
        The non-private free-support barycenter (post-processing):
        :func:`privot.ot.free_support_barycenter`.
    coreset, perturbation, subspace :
        The option objects of the methods.
    """

    m: int
    epsilon: float
    bounds: PublicBounds | None = None
    delta: float | None = None
    method: str = "auto"
    p: float = 2
    group_weights: Any = None
    population_size: Any = None
    projection_dim: int | str | None = "auto"
    reg: float = 1e-3
    solver: str = "sinkhorn"
    n_outer: int = 50
    n_inner: int = 100
    polish: int | None = None
    coreset: CoresetOptions = field(default_factory=CoresetOptions)
    perturbation: PerturbationOptions = field(default_factory=PerturbationOptions)
    subspace: SubspaceOptions = field(default_factory=SubspaceOptions)

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise InvalidParameterError("method", self.method, f"one of {METHODS}")
        object.__setattr__(self, "m", check_int(self.m, "m", minimum=1))
        object.__setattr__(self, "epsilon", check_epsilon(self.epsilon))
        if self.delta is not None:
            check_delta(self.delta)
        if self.bounds is not None and not isinstance(self.bounds, PublicBounds):
            raise InvalidParameterError("bounds", self.bounds,
                                        "a privot.barycenters.PublicBounds")
        if not (isinstance(self.p, (int, float)) and not isinstance(self.p, bool)
                and self.p >= 1):
            raise InvalidParameterError("p", self.p, "a number >= 1")
        if not (self.projection_dim is None or self.projection_dim == "auto"):
            check_int(self.projection_dim, "projection_dim", minimum=1)
        self._check_solver()
        for name, cls in OPTION_GROUPS.items():
            if not isinstance(getattr(self, name), cls):
                raise InvalidParameterError(name, getattr(self, name), f"a {cls.__name__}")

    def _check_solver(self) -> None:
        """The solver's parameters, as the solver checks them, before the charge (a
        refusal after it would spend the budget and release nothing)."""
        if not isinstance(self.solver, str) or self.solver not in BARYCENTER_METHODS:
            raise InvalidParameterError("solver", self.solver,
                                        f"one of {BARYCENTER_METHODS}")
        check_positive(self.reg, "reg")
        check_int(self.n_outer, "n_outer", minimum=1)
        check_int(self.n_inner, "n_inner", minimum=1)
        if self.polish is not None:
            check_int(self.polish, "polish", minimum=0)

    # -- keyword options: a field here or a field of one of the option objects ----------

    @classmethod
    def _route(cls, options: Mapping[str, Any]
               ) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        """Split keyword options into this object's fields and each option object's."""
        own = set(cls.field_names())
        top: dict[str, Any] = {}
        nested: dict[str, dict[str, Any]] = {}
        for name, value in options.items():
            group = next((g for g, c in OPTION_GROUPS.items() if name in c.field_names()),
                         None)
            if name in own:
                top[name] = value
            elif group is not None:
                nested.setdefault(group, {})[name] = value
            else:
                allowed = [*own, *(n for c in OPTION_GROUPS.values() for n in c.field_names())]
                raise InvalidParameterError(
                    name, value, f"a parameter of BarycenterParams: one of {', '.join(allowed)}")
        return top, nested

    @classmethod
    def from_options(cls, options: Mapping[str, Any]) -> BarycenterParams:
        """Build from keyword options (fields here or of the option objects)."""
        top, nested = cls._route(options)
        for group, kw in nested.items():
            given = top.get(group)
            top[group] = (OPTION_GROUPS[group].from_options(kw) if given is None
                          else _as_options(group, given).replace(**kw))
        return cls(**top)

    def replace(self, **changes: Any) -> BarycenterParams:
        """A copy with ``changes`` (fields here or of the option objects) applied."""
        top, nested = self._route(changes)
        for group, kw in nested.items():
            top[group] = _as_options(group, top.get(group, getattr(self, group))).replace(**kw)
        return dataclasses.replace(self, **top)

    def to_dict(self) -> dict[str, Any]:
        """The fields as a JSON-ready dictionary, the option objects nested."""
        out = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, ReleaseParams):
                out[f.name] = value.to_dict()
                continue
            try:
                out[f.name] = json_ready(value)
            except (TypeError, ValueError):
                out[f.name] = repr(value)
        return out

    def __repr__(self) -> str:
        parts = [f"m={self.m!r}", f"epsilon={self.epsilon!r}"]
        parts += [f"{name}={_brief(getattr(self, name))}" for name in changed_fields(self)
                  if name not in ("m", "epsilon")]
        return f"BarycenterParams({', '.join(parts)})"


def _as_options(group: str, value: object) -> ReleaseParams:
    cls = OPTION_GROUPS[group]
    if not isinstance(value, cls):
        raise InvalidParameterError(group, value, f"a {cls.__name__}")
    return value

