r"""Differentiable 1-D W2 and sliced W2 in torch (paper 004, Props 3.1-3.2).

For samples :math:`U\in\mathbb{R}^n`, :math:`V\in\mathbb{R}^m` with uniform weights,

.. math:: W_2^2(P_U, P_V) = \sum_{i=1}^n\sum_{j=1}^m R_{\sigma(i),\tau(j)}(U_i-V_j)^2,
          \qquad R_{i,j} = \lambda\Big(\big(\tfrac{i-1}{n},\tfrac in\big]\cap
          \big(\tfrac{j-1}{m},\tfrac jm\big]\Big)

(Prop. 3.1), with :math:`\sigma,\tau` the rank permutations (ties broken by position:
the sorts are stable, so the records two neighbouring batches share keep their relative
order, which the sensitivity proof of Thm 4.1 uses). At most ``n + m - 1``
entries of ``R`` are non-zero: they are the segments between the merged breakpoints
:math:`\{i/n\}\cup\{j/m\}`, which depend only on ``(n, m)`` and are cached. The value
is a sum over those segments of the sorted samples, so autograd through
:func:`torch.sort` returns exactly Prop. 3.2's gradient
:math:`\partial_{U_i} W_2^2 = 2\sum_j R_{\sigma(i),\tau(j)}(U_i - V_j)` in
:math:`O((n+m)\log(n+m))`. The numpy twin is :func:`privot.ot.w2_squared_1d`.

Sliced: :math:`SW_{2,K}^2 = \frac1K\sum_l W_2^2(\theta_l^\top U, \theta_l^\top V)` with
directions uniform on the sphere drawn from *public* randomness (a torch generator
the caller seeds; never the data).
"""

from __future__ import annotations

import functools

import numpy as np

from privot.errors import InvalidDataError, InvalidParameterError
from privot.learning.torch_backend import torch

__all__ = ["quantile_segments", "random_directions", "sliced_w2_squared", "w2_squared_1d"]


@functools.lru_cache(maxsize=256)
def _segments_numpy(n: int, m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    # Breakpoints on the integer scale n*m: i*m (i = 1..n) and j*n (j = 1..m).
    ends = np.union1d(np.arange(1, n + 1, dtype=np.int64) * m,
                      np.arange(1, m + 1, dtype=np.int64) * n)
    starts = np.concatenate(([0], ends[:-1]))
    # A segment (start, end] lies in rank cell i = ceil(end / m) of U and j = ceil(end / n)
    # of V (0-based: minus one).
    i = -(-ends // m) - 1
    j = -(-ends // n) - 1
    length = (ends - starts) / float(n * m)
    return i, j, length


def quantile_segments(n: int, m: int, *, device=None, dtype=None):
    r"""The non-zero entries of the rank weights ``R`` of Prop. 3.1.

    Parameters
    ----------
    n, m : int
        Sample sizes (>= 1).

    Returns
    -------
    i, j : LongTensor, shape (s,)
        0-based ranks in the sorted ``U`` and sorted ``V``; ``s <= n + m - 1``.
    length : Tensor, shape (s,)
        :math:`R_{i,j}`; rows sum to ``1/n``, columns to ``1/m`` (eq. 11).
    """
    if n < 1 or m < 1:
        raise InvalidParameterError("n, m", (n, m), "both at least 1")
    i, j, length = _segments_numpy(int(n), int(m))
    dtype = dtype or torch.get_default_dtype()
    return (torch.as_tensor(i, device=device), torch.as_tensor(j, device=device),
            torch.as_tensor(length, device=device, dtype=dtype))


def _check_samples(u, name: str, ndim: int):
    if not isinstance(u, torch.Tensor):
        raise InvalidParameterError(name, type(u).__name__, "a torch.Tensor")
    if u.ndim != ndim:
        raise InvalidDataError(f"{name} must have {ndim} dimension(s), got shape "
                               f"{tuple(u.shape)}")
    if u.shape[0] < 1:
        raise InvalidDataError(f"{name} is empty: at least one sample is needed")


def _w2_sorted_columns(us, vs):
    """W2^2 per column of column-wise sorted samples us (n, K), vs (m, K) -> (K,)."""
    i, j, length = quantile_segments(us.shape[0], vs.shape[0], device=us.device,
                                     dtype=us.dtype)
    diff = us.index_select(0, i) - vs.index_select(0, j)
    return (length[:, None] * diff * diff).sum(0)


def w2_squared_1d(u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    r"""Squared 2-Wasserstein distance between two 1-D empirical measures (Prop. 3.1).

    Parameters
    ----------
    u : Tensor, shape (n,)
    v : Tensor, shape (m,)
        Samples (uniform weights); ``n != m`` allowed. Differentiable in both.

    Returns
    -------
    Tensor, shape ()
        :math:`W_2^2(P_u, P_v)`. Its autograd gradient is Prop. 3.2's (eqs 1-2).
    """
    _check_samples(u, "u", 1)
    _check_samples(v, "v", 1)
    us = torch.sort(u, stable=True).values
    vs = torch.sort(v, stable=True).values
    return _w2_sorted_columns(us[:, None], vs[:, None])[0]


def random_directions(d: int, n_projections: int, *,
                      generator: torch.Generator | None = None,
                      device: torch.device | str | None = None,
                      dtype: torch.dtype | None = None) -> torch.Tensor:
    r"""``n_projections`` directions uniform on the unit sphere of :math:`\mathbb{R}^d`.

    Normalised standard Gaussians drawn from ``generator`` (public randomness: a
    ``torch.Generator`` the caller seeds; it never sees the data).

    Returns
    -------
    Tensor, shape (n_projections, d)
    """
    if int(d) < 1:
        raise InvalidParameterError("d", d, "an integer >= 1")
    if int(n_projections) < 1:
        raise InvalidParameterError("n_projections", n_projections, "an integer >= 1")
    dtype = dtype or torch.get_default_dtype()
    if d == 1:
        return torch.ones((1, 1), device=device, dtype=dtype)
    g = torch.randn((int(n_projections), int(d)), generator=generator, dtype=torch.float64)
    g = g / torch.linalg.vector_norm(g, dim=1, keepdim=True).clamp_min(1e-300)
    return g.to(device=device, dtype=dtype)


def sliced_w2_squared(x: torch.Tensor, y: torch.Tensor, *,
                      directions: torch.Tensor | None = None, n_projections: int = 50,
                      generator: torch.Generator | None = None) -> torch.Tensor:
    r"""Monte-Carlo sliced :math:`SW_{2,K}^2` between two empirical measures in R^d.

    .. math:: SW_{2,K}^2 = \frac1K\sum_{l=1}^K W_2^2(\theta_l^\top x, \theta_l^\top y)

    Parameters
    ----------
    x : Tensor, shape (n, d)
    y : Tensor, shape (m, d)
    directions : Tensor, shape (K, d), optional
        Unit directions; default :func:`random_directions` with ``n_projections`` and
        ``generator``. For ``d == 1`` the one direction ``+1`` (exact W2).
    n_projections : int, default 50
    generator : torch.Generator, optional
        Public randomness for the directions.

    Returns
    -------
    Tensor, shape ()
    """
    _check_samples(x, "x", 2)
    _check_samples(y, "y", 2)
    if x.shape[1] != y.shape[1]:
        raise InvalidDataError(f"x and y have different dimensions: {x.shape[1]} and "
                               f"{y.shape[1]}")
    if directions is None:
        directions = random_directions(x.shape[1], n_projections, generator=generator,
                                       device=x.device, dtype=x.dtype)
    elif directions.ndim != 2 or directions.shape[1] != x.shape[1]:
        raise InvalidParameterError("directions", tuple(directions.shape),
                                    f"a (K, {x.shape[1]}) tensor")
    px = torch.sort(x @ directions.T, dim=0, stable=True).values
    py = torch.sort(y @ directions.T, dim=0, stable=True).values
    return _w2_sorted_columns(px, py).mean()
