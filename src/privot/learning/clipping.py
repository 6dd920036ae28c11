r"""The clipping of paper 004's surrogate gradient (Eq. 3, Sec. 5.1, Remark A.2).

* Activations: :math:`U_i = \mathrm{Proj}_M(g_\theta(x_i))`, the projection onto the
  L2 ball of radius ``M`` (Assumption 1 of Thm 4.1 / A.1).
* Jacobians, exact spectral clipping (``"spectral"``, the default): from the Gram
  :math:`G_i = J_iJ_i^\top = E\,\mathrm{diag}(s^2)E^\top`,
  :math:`S_i = E\,\mathrm{diag}(\min(1, L/s))E^\top`, so
  :math:`S_iJ_i = E\,\mathrm{diag}(\min(s, L))V^\top` has spectral norm
  :math:`\min(s_{\max}, L)\le L` (Assumption 2) and leaves Jacobians already within
  ``L`` untouched.
* Jacobians, the paper's per-coordinate clipping (``"per-coordinate"``, Remark A.2):
  each row :math:`\nabla_\theta g^r_\theta` clipped to ``L / sqrt(d)`` in L2, i.e.
  :math:`S_i = \mathrm{diag}(\min(1, L/(\sqrt d\,\sqrt{G_{i,rr}})))`: Frobenius, hence
  spectral, norm at most ``L``.
* Per-example loss gradients (DP-SGD): :math:`\min(1, C/\lVert J_i^\top e_i\rVert)` with
  :math:`\lVert J_i^\top e_i\rVert^2 = e_i^\top G_ie_i`.

Privacy
-------
No release here; these maps make the per-example quantities satisfy the bounds the
sensitivity of :mod:`privot.learning.sensitivity` assumes (``docs/privacy/learning.md``).
"""

from __future__ import annotations

import math

from privot.errors import InvalidParameterError
from privot.learning.torch_backend import torch

__all__ = ["JACOBIAN_CLIPPINGS", "gradient_clip_factors", "jacobian_clip_matrices",
           "project_to_ball"]

JACOBIAN_CLIPPINGS = ("spectral", "per-coordinate")


def project_to_ball(u, radius: float):
    r"""Rows of ``u`` (shape (n, d)) projected onto the L2 ball of radius ``radius``."""
    norms = torch.linalg.vector_norm(u, dim=1, keepdim=True)
    return u * torch.clamp(radius / norms.clamp_min(1e-300), max=1.0)


def jacobian_clip_matrices(grams, bound: float, *, mode: str = "spectral"):
    r"""Per-example matrices :math:`S_i` with :math:`\lVert S_iJ_i\rVert_2\le` ``bound``.

    Parameters
    ----------
    grams : Tensor, shape (B, d, d)
        :math:`J_iJ_i^\top` (symmetric positive semi-definite).
    bound : float
        ``L`` >= 0.
    mode : {"spectral", "per-coordinate"}

    Returns
    -------
    Tensor, shape (B, d, d)
        Symmetric; the identity where no clipping is needed.
    """
    if mode not in JACOBIAN_CLIPPINGS:
        raise InvalidParameterError("jacobian_clipping", mode, f"one of {JACOBIAN_CLIPPINGS}")
    g = grams.to(torch.float64)
    d = g.shape[-1]
    if mode == "per-coordinate":
        row = torch.sqrt(torch.diagonal(g, dim1=1, dim2=2).clamp_min(0.0))
        f = torch.clamp((bound / math.sqrt(d)) / row.clamp_min(1e-300), max=1.0)
        return torch.diag_embed(f).to(grams.dtype)
    g = 0.5 * (g + g.transpose(1, 2))
    evals, evecs = torch.linalg.eigh(g)
    s = torch.sqrt(evals.clamp_min(0.0))
    f = torch.clamp(bound / s.clamp_min(1e-300), max=1.0)
    return ((evecs * f[:, None, :]) @ evecs.transpose(1, 2)).to(grams.dtype)


def gradient_clip_factors(grams, directions, bound: float):
    r"""DP-SGD factors :math:`\min(1, C/\lVert J_i^\top e_i\rVert)` from the Grams.

    Parameters
    ----------
    grams : Tensor, shape (B, d, d)
    directions : Tensor, shape (B, d)
        :math:`e_i = \partial\ell_i/\partial o_i`.
    bound : float
        ``C`` > 0.

    Returns
    -------
    Tensor, shape (B,)
    """
    e = directions.to(torch.float64)
    sq = torch.einsum("br,brs,bs->b", e, grams.to(torch.float64), e).clamp_min(0.0)
    return torch.clamp(bound / torch.sqrt(sq).clamp_min(1e-300), max=1.0).to(
        directions.dtype)
