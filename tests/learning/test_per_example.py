"""Per-example Grams (ghost and torch.func paths) and the weighted backward pass against
brute force: one autograd Jacobian per example."""

import pytest
import torch

from privot.errors import InvalidParameterError
from privot.learning.per_example import (
    check_per_example_model,
    forward_with_grams,
    ghost_applies,
    trainable_parameters,
    weighted_gradient,
)


def _mlp(d_in, d_out, seed, *, bias=True):
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(d_in, 7, bias=bias), torch.nn.Tanh(),
                               torch.nn.Linear(7, 5), torch.nn.Sigmoid(),
                               torch.nn.Linear(5, d_out)).double()


class _Conv(torch.nn.Module):
    """Not ghost-eligible: a convolution and a shared (reused) linear layer."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(3)
        self.conv = torch.nn.Conv1d(1, 2, 3)
        self.lin = torch.nn.Linear(16, 2)

    def forward(self, x):
        h = torch.tanh(self.conv(x[:, None, :])).reshape(len(x), -1)
        return self.lin(h) + 0.1 * self.lin(h) ** 2


def _brute(model, x):
    """Per-example Jacobians (B, d, P) by autograd, one example at a time."""
    params = trainable_parameters(model)
    rows = []
    for i in range(len(x)):
        out = model(x[i:i + 1]).reshape(-1)
        jac = [torch.cat([g.reshape(-1) for g in torch.autograd.grad(out[r], params,
                                                                      retain_graph=True)])
               for r in range(out.numel())]
        rows.append(torch.stack(jac))
    return torch.stack(rows)


@pytest.mark.parametrize("d_out", [1, 2, 3])
@pytest.mark.parametrize("method", ["ghost", "functional"])
def test_grams_match_brute_force(d_out, method):
    model = _mlp(4, d_out, seed=d_out)
    x = torch.randn(11, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    out, grams, used = forward_with_grams(model, x, method=method, chunk_size=4)
    assert used == method
    jac = _brute(model, x)
    torch.testing.assert_close(grams, jac @ jac.transpose(1, 2), rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(out.detach(), model(x).reshape(11, -1))


def test_frozen_layers_and_no_bias_are_left_out_of_the_gram():
    model = _mlp(4, 2, seed=9, bias=False)
    model[2].weight.requires_grad_(False)
    x = torch.randn(6, 4, dtype=torch.float64)
    _, ghost, used = forward_with_grams(model, x, method="auto")
    assert used == "ghost"
    jac = _brute(model, x)
    torch.testing.assert_close(ghost, jac @ jac.transpose(1, 2), rtol=1e-10, atol=1e-12)


def test_functional_path_serves_any_per_example_module():
    model = _Conv().double()
    assert not ghost_applies(model)
    x = torch.randn(5, 10, dtype=torch.float64)
    _, grams, used = forward_with_grams(model, x)
    assert used == "functional"
    jac = _brute(model, x)
    torch.testing.assert_close(grams, jac @ jac.transpose(1, 2), rtol=1e-10, atol=1e-12)
    with pytest.raises(InvalidParameterError, match="method"):
        forward_with_grams(model, x, method="ghost")


def test_reused_linear_layer_falls_back_to_functional():
    class Twice(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(3, 3)

        def forward(self, x):
            return self.lin(torch.tanh(self.lin(x)))

    model = Twice().double()
    x = torch.randn(4, 3, dtype=torch.float64)
    _, grams, used = forward_with_grams(model, x)
    assert used == "functional"
    jac = _brute(model, x)
    torch.testing.assert_close(grams, jac @ jac.transpose(1, 2), rtol=1e-10, atol=1e-12)


def test_weighted_gradient_is_the_sum_of_weighted_jacobians():
    model = _mlp(4, 3, seed=5)
    x = torch.randn(9, 4, dtype=torch.float64)
    w = torch.randn(9, 3, dtype=torch.float64)
    out, _, _ = forward_with_grams(model, x)
    got = torch.cat([g.reshape(-1) for g in weighted_gradient(out, w, trainable_parameters(
        model))])
    jac = _brute(model, x)
    torch.testing.assert_close(got, torch.einsum("bdp,bd->p", jac, w), rtol=1e-10,
                               atol=1e-12)


def test_batch_norm_in_training_mode_is_refused():
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4))
    with pytest.raises(InvalidParameterError, match="BatchNorm1d"):
        check_per_example_model(model)
    model.eval()
    check_per_example_model(model)
    with pytest.raises(InvalidParameterError, match="model"):
        check_per_example_model(lambda x: x)


def test_dropout_in_training_mode_is_refused():
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Dropout(0.2))
    with pytest.raises(InvalidParameterError, match="Dropout"):
        check_per_example_model(model)
    model.eval()
    check_per_example_model(model)
