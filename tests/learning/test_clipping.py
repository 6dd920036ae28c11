"""Activation, Jacobian (exact spectral, per-coordinate) and DP-SGD clipping."""

import math

import pytest
import torch

from privot.errors import InvalidParameterError
from privot.learning.clipping import (
    gradient_clip_factors,
    jacobian_clip_matrices,
    project_to_ball,
)


def _jacobians(b=50, d=3, p=20, seed=0):
    g = torch.Generator().manual_seed(seed)
    scale = torch.exp(2 * torch.randn(b, 1, 1, generator=g, dtype=torch.float64))
    return scale * torch.randn(b, d, p, generator=g, dtype=torch.float64)


def test_projection_onto_the_ball():
    u = torch.tensor([[3.0, 4.0], [0.3, 0.4], [0.0, 0.0]], dtype=torch.float64)
    got = project_to_ball(u, 1.0)
    torch.testing.assert_close(got, torch.tensor([[0.6, 0.8], [0.3, 0.4], [0.0, 0.0]],
                                                 dtype=torch.float64))


def test_spectral_clipping_is_exact():
    jac = _jacobians()
    bound = 1.5
    s = jacobian_clip_matrices(jac @ jac.transpose(1, 2), bound)
    clipped = s @ jac
    before = torch.linalg.matrix_norm(jac, ord=2)
    after = torch.linalg.matrix_norm(clipped, ord=2)
    assert bool((after <= bound * (1 + 1e-9)).all())
    # Jacobians within the bound are untouched; the others end exactly at the bound,
    # with singular values min(s, L) and the same singular vectors.
    inside = before <= bound
    assert inside.any() and (~inside).any()
    torch.testing.assert_close(clipped[inside], jac[inside])
    torch.testing.assert_close(after[~inside], torch.full_like(after[~inside], bound))
    sv = torch.linalg.svdvals(jac)
    torch.testing.assert_close(torch.linalg.svdvals(clipped), sv.clamp(max=bound))


def test_per_coordinate_clipping_of_remark_a2():
    jac = _jacobians(d=4)
    bound = 2.0
    s = jacobian_clip_matrices(jac @ jac.transpose(1, 2), bound, mode="per-coordinate")
    clipped = s @ jac
    rows = torch.linalg.vector_norm(clipped, dim=2)
    assert bool((rows <= bound / math.sqrt(4) * (1 + 1e-9)).all())
    assert bool((torch.linalg.matrix_norm(clipped, ord=2) <= bound * (1 + 1e-9)).all())
    small = torch.linalg.vector_norm(jac, dim=2) <= bound / 2
    torch.testing.assert_close(rows[small], torch.linalg.vector_norm(jac, dim=2)[small])


def test_spectral_clipping_keeps_more_than_per_coordinate():
    jac = _jacobians(d=3, seed=2)
    gram = jac @ jac.transpose(1, 2)
    exact = jacobian_clip_matrices(gram, 1.0) @ jac
    naive = jacobian_clip_matrices(gram, 1.0, mode="per-coordinate") @ jac
    # Frobenius norm of what survives: the exact clipping never keeps less.
    assert bool((torch.linalg.matrix_norm(exact) >=
                 torch.linalg.matrix_norm(naive) * (1 - 1e-9)).all())


def test_zero_jacobian_is_left_alone():
    s = jacobian_clip_matrices(torch.zeros(2, 3, 3, dtype=torch.float64), 1.0)
    torch.testing.assert_close(s, torch.eye(3, dtype=torch.float64).expand(2, 3, 3))


def test_gradient_clip_factors_match_explicit_norms():
    jac = _jacobians(d=2, seed=3)
    e = torch.randn(50, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    f = gradient_clip_factors(jac @ jac.transpose(1, 2), e, 3.0)
    norms = torch.linalg.vector_norm(torch.einsum("bdp,bd->bp", jac, e), dim=1)
    torch.testing.assert_close(f, torch.clamp(3.0 / norms, max=1.0))


def test_unknown_mode_is_refused():
    with pytest.raises(InvalidParameterError, match="jacobian_clipping"):
        jacobian_clip_matrices(torch.zeros(1, 2, 2), 1.0, mode="frobenius")
