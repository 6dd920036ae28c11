r"""Noise shares for the shuffle protocol: :func:`polya`, :func:`polya_laplace_shares`.

Each of ``n`` parties adds :math:`P_j - P'_j`, two independent
:math:`\mathrm{Polya}(1/n, e^{-1/b})`; the shares sum to a discrete Laplace of scale
``b`` exactly in distribution (Ghazi et al., *Differentially Private Heatmaps*, App. F).
Used by :mod:`privot.heatmaps.shuffle`, where each user adds a share of the central
noise.

Privacy
-------
**Not** exact like the other samplers: the Polya draws are a Gamma-Poisson mixture
with numpy's floating-point samplers, and with ``rng=None`` the generator is a
PCG64DXSM seeded from 256 bits of OS entropy per call (CSPRNG-seeded, not a CSPRNG
stream). Use them where each share is summed with many others before any release; a
single-share release must use :func:`~privot.privacy.noise.discrete_laplace`. See
``docs/privacy/discrete.md``, section 9.
"""

from __future__ import annotations

import math
import os

import numpy as np

from privot._validation import check_int, check_positive
from privot.errors import InvalidParameterError
from privot.privacy.noise._scales import _shape_out, _size

__all__ = ["polya", "polya_laplace_shares"]


def polya(r: float, p: float, size: int | tuple[int, ...] | None = None, *,
          rng: np.random.Generator | None = None) -> np.ndarray | int:
    r"""Polya (negative binomial with real shape ``r``) integers.

    .. math:: P[X = x] = \frac{\Gamma(x + r)}{x!\,\Gamma(r)}\,(1-p)^r p^x,
              \qquad x = 0, 1, \dots

    The sum of ``n`` independent ``Polya(1/n, p)`` is ``Geometric`` with ratio ``p``
    (negative binomial with shape 1), so the per-user differences
    ``Polya(1/n, e^{-1/b}) - Polya(1/n, e^{-1/b})`` sum to a discrete Laplace with scale
    ``b``: the distributed noise of shuffle-model protocols (Ghazi et al., App. F).

    **Exactness**: sampled as a Gamma-Poisson mixture
    (:math:`\lambda\sim\Gamma(r, p/(1-p))`, :math:`X\sim\mathrm{Poisson}(\lambda)`) with
    numpy's floating-point samplers; with ``rng=None`` the generator is a PCG64DXSM
    seeded from 256 bits of OS entropy per call (CSPRNG-seeded, not a CSPRNG stream).
    Use it where each share is one of many summed before release; a single-share
    release must use :func:`discrete_laplace`.

    Parameters
    ----------
    r : float
        Shape, ``> 0``.
    p : float
        Ratio, in ``(0, 1)``.
    size : int or tuple, optional
    rng : numpy.random.Generator, optional
    """
    r = check_positive(r, "r")
    p = check_positive(p, "p")
    if p >= 1:
        raise InvalidParameterError("p", p, "a number in (0, 1)")
    shape, n = _size(size)
    if rng is None:
        gen = np.random.Generator(np.random.PCG64DXSM(int.from_bytes(os.urandom(32), "little")))
    elif isinstance(rng, np.random.Generator):
        gen = rng
    else:
        raise InvalidParameterError("rng", rng, "None or a numpy.random.Generator")
    lam = gen.gamma(r, p / (1.0 - p), size=n)
    x = gen.poisson(lam).astype(np.int64)
    return _shape_out(x, shape)


def polya_laplace_shares(n_parties: int, scale: float, size: int | tuple[int, ...] | None = None,
                         *, rng: np.random.Generator | None = None) -> np.ndarray:
    r"""Per-party integer noise shares whose sum is a discrete Laplace of scale ``b``.

    Party ``j`` draws :math:`Z_j = P_j - P'_j` with
    :math:`P_j, P'_j \sim \mathrm{Polya}(1/n, e^{-1/b})` independent. A sum of ``n``
    independent :math:`\mathrm{Polya}(1/n, p)` is :math:`\mathrm{NB}(1, p)`, the
    geometric with ratio ``p``; the difference of two independent geometrics with ratio
    :math:`e^{-1/b}` is :math:`\mathcal{L}_\mathbb{Z}(b)`. So
    :math:`\sum_j Z_j \sim \mathcal{L}_\mathbb{Z}(b)` exactly in distribution
    (Ghazi et al., Differentially Private Heatmaps, App. F; Balle et al. 2020). Used by
    shuffle-model protocols where each user adds a share of the central noise.

    Parameters
    ----------
    n_parties : int
        Number of parties ``n >= 1``.
    scale : float
        ``b > 0``, the scale of the *summed* discrete Laplace.
    size : int or tuple, optional
        Shape of each party's share (one draw per coordinate).
    rng : numpy.random.Generator, optional
        See :func:`polya` for the randomness (CSPRNG-seeded, floating-point).

    Returns
    -------
    int64 array of shape ``(n_parties, *size)``
    """
    n = check_int(n_parties, "n_parties", minimum=1)
    b = check_positive(scale, "scale")
    shape, _ = _size(size)
    p = math.exp(-1.0 / b)
    full = (n, *shape)
    return (polya(1.0 / n, p, size=full, rng=rng)
            - polya(1.0 / n, p, size=full, rng=rng)).astype(np.int64)
