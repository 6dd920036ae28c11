r"""The Gaussian-filtered heatmap of paper 002, Sec. 2.3.

For :math:`\mathbf{p}` on the grid,

.. math:: H^\sigma_{\mathbf{p}}(a) = \sum_{a'\in G_\Delta} \frac{1}{Z(a')}\,
          e^{-\|a-a'\|_2^2/(2\sigma^2)}\, p(a'), \qquad
          Z(a') = \sum_{a\in G_\Delta} e^{-\|a-a'\|_2^2/(2\sigma^2)} :

each source cell :math:`a'` spreads its mass with a Gaussian kernel normalised to sum 1
*over the grid* (so mass near the border is not lost and :math:`\sum H = \sum p`). With
:math:`K` the symmetric kernel matrix, :math:`Z = K\mathbf 1` and
:math:`H = K(\mathbf{p}/Z)`. :math:`K` is separable, and both products are computed with
:func:`scipy.ndimage.gaussian_filter` (``mode="constant"``: zero outside the grid);
the filter's own normalisation constant cancels between :math:`K(\cdot)` and :math:`Z`.

``sigma`` is in cells (the paper's :math:`\sigma` on :math:`[0,1)^2` times
:math:`\Delta`). The kernel is truncated at ``min(Delta - 1, ceil(9 sigma))`` cells, where
:math:`e^{-81/2} < 3\cdot10^{-18}`: below double precision relative to the centre.

Rendering is post-processing of a released distribution: no privacy cost.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import ndimage

from privot._validation import check_finite_array, check_nonnegative
from privot.errors import InvalidDataError

__all__ = ["gaussian_heatmap"]

#: Kernel radius in standard deviations (beyond it the weights are below 3e-18).
TRUNCATE_SIGMAS = 9.0


def gaussian_heatmap(p: np.ndarray, *, sigma: float) -> np.ndarray:
    r""":math:`H^\sigma_{\mathbf p}` of paper 002, Sec. 2.3, per-source normalised.

    Parameters
    ----------
    p : (Delta, Delta) array
        A non-negative grid vector (a distribution, or unnormalised sums); finite.
    sigma : float
        Standard deviation of the Gaussian filter in cells, >= 0 (0 returns ``p``).

    Returns
    -------
    (Delta, Delta) float array
        :math:`H`, with ``H.sum() == p.sum()`` up to rounding.

    Privacy
    -------
    Post-processing (reads only its input): a heatmap of a DP release is as private as
    the release. ``docs/privacy/heatmaps.md``.
    """
    arr = check_finite_array(p, "p", ndim=2)
    sig = check_nonnegative(sigma, "sigma")
    if arr.shape[0] != arr.shape[1]:
        raise InvalidDataError(f"p must be a square (Delta, Delta) array, got {arr.shape}")
    if sig == 0.0:
        return arr.copy()
    d = arr.shape[0]
    radius = int(min(d - 1, math.ceil(TRUNCATE_SIGMAS * sig)))
    if radius == 0:
        return arr.copy()
    z = ndimage.gaussian_filter(np.ones(d), sig, mode="constant", radius=radius)  # K 1 (1-D)
    norm = np.outer(z, z)  # Z(a') = z(row) z(col): the kernel is separable
    return ndimage.gaussian_filter(arr / norm, sig, mode="constant", radius=radius)
