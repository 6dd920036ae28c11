r"""Public entry point of papers 000 and 001: :func:`private_barycenter`.

It validates the public choices (:class:`~privot.barycenters.params.BarycenterParams`),
reads the groups' public shape (:mod:`privot.barycenters.inputs`), resolves
``method="auto"`` and dispatches to one method:

* ``"coreset"`` (paper 000 Alg. 2), epsilon-DP: :mod:`privot.barycenters.method_coreset`;
* ``"perturbation"`` (paper 000 Alg. 1, paper 001 Thm 5 + Prop. 6), (eps, delta)-DP,
  with the ``"lloyd"`` or ``"anchored"`` step: :mod:`privot.barycenters.method_perturbation`;
* ``"subspace"`` (high dimension), eps-DP or (eps, delta)-DP:
  :mod:`privot.barycenters.method_subspace`.

With ``population_size`` the groups are a uniform sample (without replacement) of a
larger population and the budget is stated on the population: the mechanism runs at
the larger sample budget that amplification by subsampling (Balle, Barthe and
Gaboardi 2018) brings back to it (paper 000 Remark 1 and Sec. 6).
Everything after the noisy statistics (consistency, placement, the merge into weighted
atoms, the solver, its progress bars) reads only the released values, public parameters
and public randomness: post-processing. Derivations: ``docs/privacy/barycenters.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from privot._params import build_params
from privot._progress import show_progress
from privot.barycenters.inputs import Groups, read_groups
from privot.barycenters.method_coreset import DEFAULT_MAX_CORESET, run_coreset
from privot.barycenters.method_perturbation import (
    DEFAULT_ANCHOR_FRACTION,
    DEFAULT_LLOYD_ANCHOR_FRACTION,
    NOISE_WARNING_SHARE,
    run_perturbation,
)
from privot.barycenters.method_subspace import run_subspace
from privot.barycenters.params import (  # AUTO_CORESET_MAX_DIM, choose_method: re-exported
    AUTO_CORESET_MAX_DIM,
    DEFAULT_ITERATIONS,
    DEFAULT_MAX_ATOMS,
    DEFAULT_MAX_PLACED,
    METHODS,
    PERTURBATION_STEPS,
    BarycenterParams,
    choose_method,
)
from privot.barycenters.release import (
    DEFAULT_ATOMS_POLISH,
    RunSettings,
    default_projection_dim,
    release_event,
)
from privot.barycenters.result import BarycenterResult
from privot.privacy.types import Spender, check_spender

# the methods' constants are re-exported: importable from here as before
__all__ = ["AUTO_CORESET_MAX_DIM", "DEFAULT_ANCHOR_FRACTION", "DEFAULT_ATOMS_POLISH",
           "DEFAULT_ITERATIONS", "DEFAULT_LLOYD_ANCHOR_FRACTION", "DEFAULT_MAX_ATOMS",
           "DEFAULT_MAX_CORESET", "DEFAULT_MAX_PLACED", "METHODS", "NOISE_WARNING_SHARE",
           "PERTURBATION_STEPS", "BarycenterParams", "choose_method", "default_projection_dim",
           "private_barycenter", "release_event"]

#: One function per method: ``run(groups, params, settings) -> BarycenterResult``.
RUNNERS: dict[str, Callable[[Groups, BarycenterParams, RunSettings], BarycenterResult]] = {
    "coreset": run_coreset, "perturbation": run_perturbation, "subspace": run_subspace}


def private_barycenter(groups: Sequence[np.ndarray] | np.ndarray | Any,
                       params: BarycenterParams | None = None, *,
                       accountant: Spender | None = None,
                       rng: np.random.Generator | int | None = None,
                       progress: bool | None = None, **options: Any) -> BarycenterResult:
    r"""A differentially private Wasserstein barycenter of ``k`` sensitive groups.

    Finds :math:`m` equally weighted points :math:`\nu` minimising
    :math:`\sum_i \beta_i W_p^p(\mu_i, \nu)` (paper 000 Def. 3, Assumption 2).

    The public choices are a :class:`~privot.barycenters.BarycenterParams` (``params``)
    or the same names as keyword options (``**options``; both: the options replace the
    object's fields). A keyword names a field of ``BarycenterParams`` or of one of its
    option objects (:class:`~privot.barycenters.CoresetOptions`,
    :class:`~privot.barycenters.PerturbationOptions`,
    :class:`~privot.barycenters.SubspaceOptions`). An option of another method, set
    to something other than its default, is refused when the method would misread it
    (a subspace option with the coreset, ``splits`` with ``step="lloyd"``) and warned
    about (:class:`UserWarning`) when it is simply not read (``step`` with the coreset,
    the coreset's options with a public anchor).

    Parameters
    ----------
    groups : sequence of (n_i, d) arrays, one (n, d) array for ``k = 1``, or CoresetLeafCounts
        The sensitive points; one person contributes one point to one group. A group may
        also be a table whose columns are the ``d`` coordinates, in order (a pandas or
        polars DataFrame, a polars LazyFrame, a pyarrow Table: the same release, bit for
        bit, as its array; :mod:`privot.barycenters.inputs`). For rows of one table
        (or file) split by a group column, and for data too large for memory, the exact
        leaf counts computed by an engine (:func:`privot.barycenters.coreset_leaf_counts`
        with its ``group_column``, on DuckDB or Spark; counted at a
        depth at least the one wanted, e.g. ``MAX_DEPTH``) with ``method="coreset"``.
    params : BarycenterParams, optional
        The public choices as one object (the keyword options below build it).
    bounds : PublicBounds
        Public box or ball holding the data (never derived from the data); points
        outside are clipped and counted. Taken from the leaf counts when those are given.
    m : int
        Support size, ``1 <= m <= min_i n_i``.
    epsilon : float
        The privacy budget (on the population when ``population_size`` is given).
    delta : float, optional
        Required in (0, 1) by ``method="perturbation"``; must be omitted or 0 for the
        pure-DP ``"coreset"`` method. ``"subspace"``: omitted or 0 for pure epsilon-DP
        (Laplace noise), in (0, 1) for (epsilon, delta)-DP (Gaussian noise, GDP
        composition). ``"auto"`` choosing the coreset runs it pure and charges no delta.
    method : {"auto", "coreset", "perturbation", "subspace"}
        ``"auto"`` (default): :func:`choose_method` of the public dimension ``d`` (the
        coreset for ``d <= 2``, the subspace method above); the result's ``method``
        says which ran and ``params["method_requested"]`` what was asked.
        ``"subspace"``: private projection, DP Lloyd in the subspace, the barycenter
        of the private summaries, the lift (:mod:`privot.barycenters.subspace`).
    p : float
        Order of the Wasserstein cost, ``>= 1``.
    group_weights : sequence of float, optional
        :math:`\beta_i` (normalised to sum to one), default ``1/k``.
    population_size : int or sequence of int, optional
        Size of the population each group was sampled from uniformly without
        replacement (public). The budget is then met on the population by amplification.
    projection_dim : int, "auto" or None
        :math:`d'` of the JL map (paper 000 Alg. 2 / 001 Thm 5). ``"auto"``:
        :func:`default_projection_dim` (Thm 5.4's order); ``None``: no projection.
    splits : int, optional
        ``k'`` for ``"perturbation"``: parts per group (paper 001 Prop. 6). Default:
        :func:`~privot.barycenters.perturbation.recommended_splits` (Thm 8's
        :math:`k'_*`).
    iterations : int
        Noisy steps of ``"perturbation"`` (Lloyd steps, each after its balancing
        rounds, or anchored steps), 1 to 100 with ``step="lloyd"``.
    anchor : (m, d) array, optional
        Public anchor atoms for ``"perturbation"`` (caller coordinates). Default: a
        private-coreset barycenter bought with ``anchor_fraction`` of the sample epsilon.
    anchor_fraction : float, optional
        In (0, 1); default :data:`DEFAULT_LLOYD_ANCHOR_FRACTION` for ``step="lloyd"``,
        :data:`DEFAULT_ANCHOR_FRACTION` for ``step="anchored"`` (both measured).
    step : {"lloyd", "anchored"}
        ``"perturbation"``'s released statistic. ``"lloyd"`` (default): noisy Lloyd
        steps on each group's power cells, balanced on the private coreset
        (:mod:`privot.barycenters.lloyd_perturbation`); ``"anchored"``: the anchored
        barycentric step over ``splits`` parts (:mod:`privot.barycenters.perturbation`).
    balancing_rounds : int
        ``step="lloyd"``: private balancing rounds of the cell counts before each step
        (0 to 10; default :data:`~privot.barycenters.lloyd_perturbation.DEFAULT_BALANCING_ROUNDS`).
    proxy_size : int
        ``step="lloyd"``: at most this many of each group's placed anchor-coreset points
        (a public subsample) stand for the group in the power-weight OT solves, 100 to
        :data:`DEFAULT_MAX_PLACED` (default
        :data:`~privot.barycenters.lloyd_perturbation.DEFAULT_PROXY_SIZE`). Larger is
        more faithful and slower (an OT solve of ``proxy_size`` x ``m``).
    shrinkage : bool
        ``step="lloyd"``: shrink each step's moves toward the previous atoms by
        empirical Bayes, from the step's known noise
        (:func:`~privot.barycenters.lloyd_perturbation.shrunk_step`; post-processing).
        Default True; False releases the raw noisy step.
    calibration : {"analytic", "classic"}
        Gaussian calibration of ``"perturbation"`` (``"classic"`` is the paper's
        :math:`\sigma^2 = 2m\ln(1.25/\delta)/(\varepsilon k)^2`).
    reg, solver, n_outer, n_inner, polish :
        The non-private free-support barycenter (post-processing):
        :func:`privot.ot.free_support_barycenter` (``polish``: exact steps after
        Sinkhorn; when None, :data:`DEFAULT_ATOMS_POLISH` with ``max_atoms`` and the
        solver's default without).
    placement : {"scaled", "uniform", "centre"}
        Where coreset points go in their leaf cell (paper 000 App. F.2).
    region : Region, optional
        Public region the coreset points are restricted to (e.g.
        :func:`~privot.barycenters.regions.continental_us`).
    coreset_size : int, optional
        Subsample each coreset to this many points (post-processing). Default: the
        group size, at most :data:`DEFAULT_MAX_CORESET` when ``max_atoms`` is None and
        at most :data:`DEFAULT_MAX_PLACED` otherwise.
    depth : int, optional
        Depth of the coreset partition (default about :math:`\log_2(\varepsilon n)`).
    max_atoms : int or None
        The solver sees each group's coreset as at most this many weighted atoms: its
        points merged by the cells of its own public partition, at the deepest level
        with at most ``max_atoms`` non-empty cells, each atom at the mean of its cell's
        points with their number as weight
        (:func:`~privot.barycenters.coresets.cell_atoms`). Default
        :data:`DEFAULT_MAX_ATOMS`. None: one solver atom per coreset point, subsampled
        to ``coreset_size`` (the behaviour before; much slower for large groups).
        Post-processing either way: reads only the released counts, the public
        partition and public parameters.
    basis : None, "dct" or (d, d0) array
        ``"subspace"``: a public orthonormal basis the data is expressed in first
        (None: the identity). ``"dct"``: the 2-D DCT of images of ``image_shape``, its
        ``basis_dim`` lowest frequencies
        (:func:`~privot.barycenters.subspace.dct_basis`). An array must have
        orthonormal columns (checked).
    image_shape : (height, width), optional
        With ``basis="dct"``: the images' shape, ``height * width = d`` (row-major).
    basis_dim : int, optional
        With ``basis="dct"``: ``d0``, default
        :data:`~privot.barycenters.subspace.DEFAULT_BASIS_DIM` (at most ``d``).
    subspace_dim, cells, rounds : int, optional
        ``"subspace"``: ``d'`` (the DP second moment's top eigenvectors, when
        ``d0 > d'``), Lloyd centres per group and Lloyd rounds. Defaults, from public
        quantities only (the smallest group size, epsilon, delta, ``m``, ``d0``):
        :func:`~privot.barycenters.subspace.default_subspace_dim`,
        :func:`~privot.barycenters.subspace.default_cells` (each cell should hold six
        deviations of its noisy count) and one round (none with one cell).
    projection_share : float, optional
        ``"subspace"``: the share of the budget (of :math:`\mu^2` with Gaussian noise,
        of epsilon with Laplace noise) spent on the DP second moment, in (0, 1); default
        :data:`~privot.barycenters.subspace.DEFAULT_PROJECTION_SHARE` of the noise.
    complement_mean : bool, optional
        ``"subspace"`` with a DP second moment: the moment round releases each group's
        sum in the whole basis, and the atoms' component outside the subspace is the
        groups' weighted DP mean (True), or only in the subspace, that component being
        the public centre (False). Default
        :data:`~privot.barycenters.subspace.DEFAULT_COMPLEMENT_MEAN` (measured: False
        with Gaussian noise, True with Laplace noise).
    covariance : bool, optional
        ``"subspace"``: the moment round releases each group's whole second moment in
        the subspace (its DP Gaussian has a full covariance; correlated columns keep
        their correlation) rather than its diagonal. Default
        :func:`~privot.barycenters.subspace.default_covariance`: full with one cell, no
        ``delta`` and ``eps n >= 1500`` (ISLR Wage, eps 4: 1.77x -> 1.38x the
        non-private cost).
    rng : Generator or int, optional
        Seeded randomness for experiments (``secure=False``); default OS CSPRNG noise.
        The :func:`~privot.privacy.noise.check_rng` rule (an int seed is
        ``numpy.random.default_rng(seed)``); a BitSource is refused here, as the public
        randomness (projections, subsampling) is drawn from a numpy generator.
    accountant : Spender, optional
        Charged the sample budget once, before anything is released.
    progress : bool, optional
        Progress bars on stderr (``tqdm.auto``): one over the groups' coresets, one over
        the solver's outer iterations. None (default): only when stderr is a terminal;
        True / False force them on / off. Nothing is printed when off. The bars show
        public quantities and iteration counts only (iterations to convergence depend on
        the released coresets, like the support itself).

    **options
        The parameters above by name (fields of :class:`BarycenterParams` and its option
        objects); an unknown name is refused.

    Returns
    -------
    BarycenterResult

    Privacy
    -------
    Unit: one point of one group; relation: replace one point (paper 000 Def. 4),
    group sizes public. ``"coreset"``: epsilon-DP (each group's coreset is epsilon-DP,
    the groups are disjoint). ``"perturbation"``: (epsilon, delta)-DP (basic
    composition of the pure-DP anchor and the Gaussian steps). ``"subspace"``: pure
    epsilon-DP (Laplace, basic composition of its steps) or (epsilon, delta)-DP
    (Gaussian steps composed as GDP, Dong, Roth and Su Cor. 3.3); the basis, ``d'``,
    the cells and rounds are public. Derivations: ``docs/privacy/barycenters.md``.
    """
    params = build_params(BarycenterParams, params, options)
    check_spender(accountant)
    data = read_groups(groups, params)
    requested = params.method
    if requested != "auto":
        method = requested
    elif data.counts is not None:  # engine leaf counts: the coreset is the only method
        method = "coreset"
    else:
        method = choose_method(data.d)
    settings = RunSettings(accountant=accountant, rng=rng, show=show_progress(progress),
                           requested=requested)
    return RUNNERS[method](data, params, settings)
