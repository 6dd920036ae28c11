r"""Population use of the local-DP sampling mechanisms (paper 003 at scale).

A whole table of users goes in, one :math:`\varepsilon`-LDP output index per user comes
out (:func:`sample_population`, its public choices a
:class:`~privot.sampling.params.SampleParams`, its result a
:class:`~privot.sampling.result.PopulationSample`), and the server estimates the
population distribution from the released samples alone
(:mod:`privot.sampling.estimators`: :func:`estimate_linear`, :func:`estimate_direct`;
the k-RR frequency estimate is :func:`~privot.sampling.baselines.krr_estimate`). The
input is the engine step's :class:`~privot.sampling.engine_step.UserCellCounts`: user
``u`` holds :math:`\mu_u(c) = k_{u,c} / n_u` over the ``k`` public cells.

Two variants, one guarantee:

* ``"direct"`` -- the paper's use: the device computes :math:`\nu_u = M[\mu_u]` (WPM,
  KPM, ...) and releases one sample of it (:func:`~privot.sampling.device.private_sample`:
  snapped into the certified integer polytope, drawn exactly). The best per-user utility;
  but :math:`\mu \mapsto M[\mu]` is not linear for WPM or KPM, so the histogram of the
  samples estimates :math:`\frac1n\sum_u M[\mu_u]`, not a known transform of the
  population :math:`\bar\mu = \frac1n \sum_u \mu_u` (:func:`estimate_direct`).
* ``"linear"`` -- the device draws one of its **own** cells :math:`i \sim \mu_u` exactly
  (a uniform integer in :math:`[0, n_u)` mapped through the integer cumulative counts),
  then releases a sample of the channel row :math:`M[\delta_i]` (snapped once into the
  certified integer polytope). The user's output law is :math:`\sum_i \mu_u(i) W_i`,
  linear in :math:`\mu_u`, so the server sees samples of :math:`\bar\mu W` with a
  **public** channel ``W`` and inverts it by iterative Bayesian update
  (:func:`estimate_linear`). For k-RR the two variants coincide.

Who reports
-----------
The **user list** is every distinct user id of the table: ``counts.user_ids`` (users with
at least one usable point inside the public bounds) and ``counts.empty_user_ids`` (the
others). It is **public**, as in every local-model deployment (the server receives one
report per user), and **every listed user reports exactly once**: a user with no usable
point inside the bounds reports through the same mechanism, at the same epsilon, from
the public default input :data:`DEFAULT_INPUT`, the uniform distribution over the ``k``
input points (direct: a sample of :math:`M[\mathbf 1/k]`; linear: a uniform cell ``i``,
then a sample of :math:`M[\delta_i]`, whose law is :math:`(\mathbf 1/k) W`). So the
number of reports is the length of the user list, a public number, and *whether* a user
has a usable point is protected like the rest of their data: the default's output law
lies in the same polytope :math:`Q_{m,\varepsilon}` as every other input's, so "no
usable point" and "these points" are two inputs of the same eps-LDP randomiser. (Such
users used to be left out while the number of reports was published: one user's only
point moving outside the bounds changed it deterministically, an infinite epsilon under
replace-one; issue 23.) The uniform input is the natural public default: it favours no
cell, it is a function of ``k`` only, and for the linear variant it keeps the reports
samples of :math:`\bar\mu W` for a population in which those users are spread evenly
(the server's EM estimate sees them as such). How many users had no usable point is
curator-only (:meth:`PopulationSample.curator_report`).

What each relation makes public (``docs/privacy/sampling.md``, ``docs/privacy/budget.md``):

* **local** (the guarantee stated here): any change of one user's data, including
  having no usable point, changes one report's law by at most a factor
  :math:`e^\varepsilon`; the user list is public.
* **replace-one of a user** (a ledger of that relation records the release at
  ``epsilon``, a group of 1): the user list is fixed and public; one user's data changes.
* **replace-one of a row**: not covered, a ledger of that relation refuses the release.
  A replaced row may move from one listed user to another (two reports change) but also
  take a user id not in the table, which adds a report (issue 24: it was recorded as a
  group of 2; ``tests/privacy/test_ledger_relations.py``).
* **add/remove of a user**: not protected (adding a user adds a report: participation is
  public in the local model); a ledger of that relation refuses the release.

Privacy
-------
Unit: one user's whole distribution :math:`\mu_u`. Relation: local (any two inputs of one
user, a user without a usable point included;
:attr:`~privot.privacy.types.Neighbouring.LOCAL`). Guarantee: pure
:math:`\varepsilon`-LDP per user, one report per user of the public user list (*Who
reports*); the accountant is charged
``epsilon`` **once** before anything is drawn (every user releases one sample of their
own data: parallel composition over users).

* Direct: :func:`~privot.sampling.device.private_sample` (certified integer bounds
  ``L <= w <= U``, :math:`U_j / L_j \le e^\varepsilon`).
* Linear: every snapped channel row :math:`W_i` lies in the certified box
  ``[L, U] / 2^b``; the user's exact output law :math:`\sum_i \mu_u(i) W_{ij}` is a convex
  combination of them and lies in the same box, so for any two inputs and every output
  ``j`` the ratio of probabilities is at most :math:`U_j / L_j \le e^\varepsilon`. Both
  draws are exact (integer comparisons on uniform bits), so the law *is* that mixture.

The estimators are post-processing of the released histogram and the public channel:
no extra budget. ``docs/privacy/sampling.md``, ``docs/privacy/sampling_device.md``.


Modules
-------
This module is the sampler; it re-exports, under their historical import paths, the
result (:mod:`privot.sampling.result`: :class:`PopulationSample`,
:class:`PopulationDiagnostics`, :data:`DEFAULT_INPUT`, :data:`PUBLISHABLE_FILES`,
:data:`CURATOR_FILES`), the parameters (:mod:`privot.sampling.params`:
:class:`SampleParams`, :data:`VARIANTS`) and the server's estimators
(:mod:`privot.sampling.estimators`).
"""

from __future__ import annotations

import time
from typing import Any, cast

import numpy as np

from privot._progress import progress_bar, show_progress
from privot.errors import InvalidDataError, InvalidParameterError
from privot.privacy.noise import BitSource, check_rng, resolve_rng
from privot.privacy.types import Neighbouring, PrivacyCost, Spender, check_spender
from privot.sampling.device import draw_index, grid_polytope, private_sample, snap_to_polytope
from privot.sampling.engine_step import UserCellCounts, dense_distributions
from privot.sampling.error import population_error
from privot.sampling.estimators import (
    estimate_direct,
    estimate_linear,
    estimate_population,
    linear_law,
)
from privot.sampling.mechanism import SamplingMechanism
from privot.sampling.params import VARIANTS, SampleParams, sample_params
from privot.sampling.result import (
    CURATOR_FILES,
    DEFAULT_INPUT,
    PUBLISHABLE_FILES,
    PopulationDiagnostics,
    PopulationSample,
)

__all__ = [
    "CURATOR_FILES",
    "DEFAULT_INPUT",
    "PUBLISHABLE_FILES",
    "VARIANTS",
    "PopulationDiagnostics",
    "PopulationSample",
    "SampleParams",
    "estimate_direct",
    "estimate_linear",
    "estimate_population",
    "linear_law",
    "sample_population",
]

#: Default batch: users per batch so that a dense ``(batch, max(k, k_v))`` float array
#: stays at about 32 MB.
_BATCH_ELEMENTS = 1 << 22
#: Bound on the total number of points (the uniform sampler's range, int64 sums).
_MAX_SIZE = 1 << 62

# ---------------------------------------------------------------------------------------
# Inputs
# ---------------------------------------------------------------------------------------


def _int_array(values: object, name: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1 or not (arr.size == 0 or np.issubdtype(arr.dtype, np.integer)):
        raise InvalidParameterError(f"counts.{name}", f"<array dtype {arr.dtype} shape "
                                    f"{arr.shape}>", "a 1-D integer array")
    return arr.astype(np.int64, copy=False)


def _check_counts(counts: object, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                    np.ndarray, np.ndarray, np.ndarray]:
    """``(user_ids, indptr, cells, counts, sizes, empty_user_ids)`` after checking the CSR
    structure; ``empty_user_ids`` (none when ``counts`` has no such attribute) are the
    listed users without a distribution."""
    needed = ("user_ids", "indptr", "cells", "counts")
    if not all(hasattr(counts, a) for a in needed):
        raise InvalidParameterError("counts", type(counts).__name__,
                                    "a UserCellCounts (user_ids, indptr, cells, counts)")
    grid = getattr(counts, "grid", None)
    n_cells = getattr(grid, "n_cells", None)
    if n_cells is not None and int(n_cells) != k:
        raise InvalidParameterError(
            "counts", f"<counts over {n_cells} cells>",
            f"counts over the mechanism's k = {k} input points (one per grid cell)")
    indptr = _int_array(counts.indptr, "indptr")
    cells = _int_array(counts.cells, "cells")
    cnt = _int_array(counts.counts, "counts")
    user_ids = np.asarray(counts.user_ids)
    if indptr.size < 2:
        raise InvalidDataError("counts has no user with a point inside the bounds; nothing "
                               "to release (refused before any budget is charged)")
    if (indptr[0] != 0 or indptr[-1] != cells.size or cells.size != cnt.size
            or user_ids.shape != (indptr.size - 1,) or np.any(np.diff(indptr) < 1)):
        raise InvalidParameterError(
            "counts", "<inconsistent compressed rows>",
            "indptr from 0 to len(cells), increasing by >= 1 per user, len(counts) == "
            "len(cells), one user id per user")
    if np.any(cnt < 1):
        raise InvalidParameterError("counts.counts", int(cnt.min()), "integers >= 1")
    if np.any((cells < 0) | (cells >= k)):
        bad = int(cells[(cells < 0) | (cells >= k)][0])
        raise InvalidParameterError("counts.cells", bad,
                                    f"cell indices in [0, k) with k = {k}")
    if int(cnt.max()) * cnt.size >= _MAX_SIZE:  # keeps every (cumulative) sum in int64
        raise InvalidParameterError("counts.counts", "<too many points>",
                                    "fewer than 2**62 points in all")
    sizes = np.add.reduceat(cnt, indptr[:-1])
    empty = getattr(counts, "empty_user_ids", None)
    empty = user_ids[:0] if empty is None else np.asarray(empty)
    if empty.ndim != 1 or (empty.size and np.intersect1d(empty, user_ids).size):
        raise InvalidParameterError(
            "counts.empty_user_ids", "<array>",
            "a 1-D array of the user ids with no point inside, none of them in user_ids")
    return user_ids, indptr, cells, cnt, sizes, empty


# ---------------------------------------------------------------------------------------
# The release
# ---------------------------------------------------------------------------------------


def _draw_own_cells(src: BitSource, indptr: np.ndarray, cells: np.ndarray, cnt: np.ndarray,
                    sizes: np.ndarray, row: np.ndarray, k: int) -> np.ndarray:
    r"""One cell per listed user: with probability exactly :math:`k_{u,c} / n_u` for a
    user with a distribution, uniform over the ``k`` cells for the others.

    ``row[i]`` is list user ``i``'s row in the compressed counts, ``-1`` for a user
    without a distribution (the public default input, uniform over the cells). A uniform
    integer ``t`` in ``[0, n_u)`` (``[0, k)`` for a default user; exact rejection
    sampling), then the entry ``p`` of the user with ``C_{p-1} <= s_u + t < C_p``, ``C``
    the integer cumulative counts and ``s_u`` the user's offset: entry ``p`` is hit by
    exactly ``k_p`` values; a default user's cell is ``t`` itself.
    """
    has = row >= 0
    t = src.uniform_below(np.where(has, sizes[np.maximum(row, 0)], k))
    cum = np.cumsum(cnt)  # total points < 2**63
    before = np.concatenate(([0], cum))[indptr[:-1]]
    pos = np.searchsorted(cum, before[row[has]] + t[has], side="right")
    out = t.astype(np.int64)
    out[has] = cells[pos]
    return out


def _list_order(user_ids: np.ndarray, empty: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The user list (``user_ids`` and ``empty``, sorted by id: the order of the public
    list, so that which batch a user is solved in never depends on who has data) and
    ``row``: each listed user's row in the compressed counts, ``-1`` for the users of
    ``empty``."""
    if not empty.size:  # the common case, already sorted by the engine step
        return user_ids, np.arange(user_ids.size, dtype=np.int64)
    ids = np.concatenate([user_ids, empty])
    row = np.concatenate([np.arange(user_ids.size, dtype=np.int64),
                          np.full(empty.size, -1, dtype=np.int64)])
    order = np.argsort(ids, kind="stable")  # one column's ids: they sort together
    return ids[order], row[order]


def _dense_rows(indptr: np.ndarray, cells: np.ndarray, cnt: np.ndarray, sizes: np.ndarray,
                row: np.ndarray, k: int) -> np.ndarray:
    r"""``(len(row), k)`` inputs of a batch of listed users: :math:`\mu_u` for a user with a
    distribution, the public default (uniform over the ``k`` points) for the others."""
    has = row >= 0
    out = np.full((row.size, k), 1.0 / k)
    if not np.any(has):
        return out
    r = row[has]
    a, b = int(r[0]), int(r[-1]) + 1
    if b - a == r.size and np.all(np.diff(r) == 1):  # the list keeps the counts' order
        out[has] = dense_distributions(indptr, cells, cnt, sizes, a, b, k)
        return out
    for i, j in zip(np.flatnonzero(has).tolist(), r.tolist(), strict=True):
        out[i] = dense_distributions(indptr, cells, cnt, sizes, j, j + 1, k)[0]
    return out



def _draw_linear(src: BitSource, weights: np.ndarray, bits: int, own: np.ndarray,
                 batch: int, bar: Any) -> np.ndarray:
    """``(n,)``: each listed user's report, a draw of the snapped channel row of its own
    cell ``own[u]`` (:func:`~privot.sampling.device.draw_index`), in batches."""
    n = int(own.size)
    out = np.empty(n, dtype=np.int64)
    for start in range(0, n, batch):
        stop = min(n, start + batch)
        out[start:stop] = draw_index(weights[own[start:stop]], bits, rng=src)
        bar.update(stop - start)
    return out


def _draw_direct(src: BitSource, mechanism: SamplingMechanism, bits: int,
                 rows: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray],
                 batch: int, bar: Any) -> tuple[np.ndarray, float, float]:
    """``(reports, max_shift, privatize_seconds)``: each listed user's :math:`M[\\mu_u]`
    (the public default input for a user without a distribution), snapped, verified and
    drawn exactly (:func:`~privot.sampling.device.private_sample`), in batches.

    ``rows``: ``(indptr, cells, counts, sizes, row)`` of the compressed counts and the
    list order (:func:`_list_order`).
    """
    indptr, cells, cnt, sizes, row = rows
    k, eps = int(mechanism.k), float(mechanism.epsilon)
    n = int(row.size)
    out = np.empty(n, dtype=np.int64)
    shift = privatize = 0.0
    for start in range(0, n, batch):
        stop = min(n, start + batch)
        ta = time.perf_counter()
        nu = mechanism.privatize(_dense_rows(indptr, cells, cnt, sizes, row[start:stop], k))
        privatize += time.perf_counter() - ta
        got = private_sample(nu, base_measure=mechanism.base_measure, epsilon=eps,
                             rng=src, bits=bits)
        out[start:stop] = got.indices
        shift = max(shift, got.max_shift)
        bar.update(stop - start)
    return out, shift, privatize


def _diagnostics(counts: Any, n: int, n_default: int, shift: float,
                 seconds: dict[str, float]) -> PopulationDiagnostics:
    """The curator-only diagnostics: the engine step's counts when ``counts`` has them."""

    def _opt(name: str) -> int | None:
        v = getattr(counts, name, None)
        return None if v is None else int(v)

    return PopulationDiagnostics(n_users=n, n_points=_opt("n_points"),
                                 n_outside=_opt("n_outside"),
                                 n_users_empty=_opt("n_users_empty"), max_shift=shift,
                                 seconds=seconds, n_users_default=n_default)


def sample_population(counts: UserCellCounts,
                      params: SampleParams | SamplingMechanism | None = None,
                      *, accountant: Spender | None = None,
                      rng: np.random.Generator | BitSource | int | None = None,
                      progress: bool | None = None, **options: Any) -> PopulationSample:
    r"""One :math:`\varepsilon`-LDP report per user of a whole table.

    Every user of the user list reports exactly once: the users with a distribution
    (``counts.user_ids``) and those without a usable point inside the bounds
    (``counts.empty_user_ids``), who report through the same mechanism, at the same
    epsilon, from the public default input: the uniform distribution over the ``k``
    input points (module docstring, *Who reports*). The number of reports is the length
    of the user list, public.

    Parameters
    ----------
    counts : UserCellCounts
        Each user's cell counts (:func:`~privot.sampling.engine_step.user_cell_counts`,
        any engine): ``user_ids``, ``indptr``, ``cells``, ``counts`` and, when present,
        ``empty_user_ids`` (the listed users without a distribution; an object without
        that attribute lists ``user_ids`` only); the cells index the mechanism's ``k``
        input points (when ``counts.grid`` is given, ``grid.n_cells`` must equal ``k``).
    params : SampleParams or SamplingMechanism, optional
        The public choices (:class:`~privot.sampling.params.SampleParams`: ``mechanism``,
        ``variant``, ``batch_size``, ``channel``, ``bits``). A
        :class:`SamplingMechanism` here is the ``mechanism`` option: the historical call
        ``sample_population(counts, mechanism, variant=...)`` is the same release.
    accountant : PrivacyAccountant, optional
        Charged ``epsilon`` once (relation ``local``) after every check and before
        anything is drawn.
    rng : numpy.random.Generator, BitSource, int or None
        The :func:`~privot.privacy.noise.check_rng` rule (an int seed is
        ``numpy.random.default_rng(seed)``, ``secure=False``).
        None (default): the OS CSPRNG, the only choice fit for publication. A seeded
        generator gives a reproducible sample marked ``secure=False``.
    progress : bool, optional
        A progress bar of the users on stderr: None (default) only when stderr is a
        terminal, True/False force it (privot's one rule, :mod:`privot._progress`). It
        counts the public user list only and draws nothing.
    **options
        Fields of :class:`~privot.sampling.params.SampleParams` (``mechanism=``,
        ``variant="direct"`` or ``"linear"``, ``batch_size=``, ``channel=``,
        ``bits=61``), replacing those of ``params``.

    Returns
    -------
    PopulationSample

    Raises
    ------
    InvalidParameterError
        An unknown ``variant``, a ``mechanism`` that is not a
        :class:`SamplingMechanism`, ``counts`` whose cells do not index its ``k`` points,
        a ``channel`` of the wrong shape, ``batch_size < 1``, an accountant without
        ``spend``; naming the parameter.
    InvalidDataError
        No user in ``counts`` with a point inside the bounds (a curator refusal, before
        anything is charged).
    BudgetExceededError
        The accountant cannot afford ``epsilon`` (nothing is drawn).

    Notes
    -----
    The work per user depends on the data only through its size ``n_u`` (linear: the
    exact uniform draw; direct: the mechanism's :meth:`privatize`, total by design, with
    a fixed iteration count for the entropic solver; the exact LP's running time varies,
    which only the device itself sees in the local model). Users are processed in the
    order of the user list, in batches of a public size, so which batch a user is in
    never depends on another user's data.

    Privacy
    -------
    Unit: one user's whole distribution. Relation: local. Pure
    :math:`\varepsilon`-LDP per user, one report each, charged once; the user list and
    the number of reports are public (module docstring; ``docs/privacy/sampling.md``).
    """
    rng = check_rng(rng)  # the one rng rule: an int seed is default_rng(seed)
    t0 = time.perf_counter()
    p = sample_params(params, options)
    mechanism = cast(SamplingMechanism, p.mechanism)  # SampleParams refuses None
    variant, b = p.variant, p.bits
    show = show_progress(progress)
    check_spender(accountant)
    k, k_v, eps = int(mechanism.k), int(mechanism.k_v), float(mechanism.epsilon)
    data_ids, indptr, cells, cnt, sizes, empty = _check_counts(counts, k)
    user_ids, row = _list_order(data_ids, empty)  # the public user list, one report each
    n = int(row.size)
    batch = max(1, _BATCH_ELEMENTS // max(k, k_v)) if p.batch_size is None else p.batch_size
    src, secure = resolve_rng(rng)
    poly = grid_polytope(mechanism.base_measure, epsilon=eps, bits=b)
    seconds: dict[str, float] = {}
    ch = None
    if variant == "linear":
        t1 = time.perf_counter()
        ch = mechanism.channel() if p.channel is None else p.channel
        weights = snap_to_polytope(ch, polytope=poly)  # public: the channel only
        shift = float(np.abs(weights * 2.0 ** -b - ch).sum(axis=1).max())
        seconds["channel"] = time.perf_counter() - t1
    # the error statement: public parameters only, before the charge (issue 28)
    error = population_error(p, getattr(counts, "grid", None), n, channel=ch)
    description = mechanism.release_dict()
    cost = PrivacyCost(eps)
    if accountant is not None:  # once, before anything is drawn
        accountant.spend(cost, mechanism=f"ldp-population-sample ({variant})",
                         relation=Neighbouring.LOCAL,
                         params={"variant": variant, "mechanism": mechanism.name,
                                 "k": k, "k_v": k_v, "bits": b, "users": n,
                                 "default_input": DEFAULT_INPUT})
    bar = progress_bar(show, total=n, desc=f"LDP samples ({variant})", unit="user")
    t2 = time.perf_counter()
    if variant == "linear":
        own = _draw_own_cells(src, indptr, cells, cnt, sizes, row, k)
        out = _draw_linear(src, weights, b, own, batch, bar)
        seconds["draw"] = time.perf_counter() - t2
    else:
        out, shift, privatize = _draw_direct(src, mechanism, b,
                                             (indptr, cells, cnt, sizes, row), batch, bar)
        seconds["privatize"] = privatize
        seconds["draw"] = time.perf_counter() - t2 - privatize
    bar.close()
    seconds["total"] = time.perf_counter() - t0
    grid = getattr(counts, "grid", None)
    if int(getattr(grid, "n_cells", -1)) != k:
        grid = None
    return PopulationSample(indices=out, user_ids=user_ids, variant=variant,
                            mechanism=description, epsilon=eps, k=k, k_v=k_v, cost=cost,
                            relation=Neighbouring.LOCAL, secure=secure, bits=b,
                            curator_only=_diagnostics(counts, n, int(empty.size), shift,
                                                      seconds),
                            grid=grid,
                            base_measure=np.array(mechanism.base_measure, dtype=np.float64),
                            channel=ch, error=error)
