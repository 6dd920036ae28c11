r"""Per-example Gram matrices of the model's output Jacobians, without a batch x P matrix.

Every clipping privot does in learning is a function of the per-example Jacobian
:math:`J_i = \partial o_i/\partial\theta\in\mathbb{R}^{d\times P}` of the model output
:math:`o_i\in\mathbb{R}^d` only through its Gram :math:`G_i = J_iJ_i^\top`
(:math:`d\times d`, ``d`` small): the spectral norm of :math:`J_i` is
:math:`\sqrt{\lambda_{\max}(G_i)}`, the norm of a per-example loss gradient
:math:`J_i^\top e_i` is :math:`\sqrt{e_i^\top G_ie_i}`, and the clipped, weighted sum
:math:`\sum_i J_i^\top w_i` is *one* vector-Jacobian product of the batch outputs with
per-example weights :math:`w_i` (:func:`weighted_gradient`). Two ways to get the Grams:

* ``"ghost"`` (models whose trainable parameters all sit in ``nn.Linear`` layers, each
  called once on a ``(B, in)`` input): with the layer input :math:`a_i` and the
  back-propagated output gradient :math:`b_i^r` of output coordinate ``r``,
  :math:`\langle\partial o^r_i/\partial W, \partial o^s_i/\partial W\rangle
  = (b_i^r\cdot b_i^s)(\lVert a_i\rVert^2 + 1_{\text{bias}})` -- the ghost-norm trick
  of Goodfellow (2015) / Li et al. (2022) for ``d`` outputs: ``d`` backward passes to
  the layer outputs, no per-example parameter gradient is formed;
* ``"functional"`` (any ``nn.Module`` acting per example): ``torch.func.vmap`` of
  ``jacrev`` over chunks of the batch, each chunk's Jacobians discarded once its Grams
  are formed (memory ``chunk x d x P``).

``"auto"`` picks ghost when it applies. Both are checked against brute force in
``tests/learning/test_per_example.py``.

Privacy
-------
No release here: these are exact computations whose results feed the clipping in
:mod:`privot.learning.clipping`. The guarantee needs the model to act per example
(:func:`check_per_example_model` refuses batch-norm layers in training mode); see
``docs/privacy/learning.md``.
"""

from __future__ import annotations

from privot.errors import InvalidParameterError
from privot.learning.torch_backend import func, torch

__all__ = [
    "METHODS",
    "check_per_example_model",
    "forward_with_grams",
    "ghost_applies",
    "trainable_parameters",
    "weighted_gradient",
]

METHODS = ("auto", "ghost", "functional")

#: Bytes of per-example Jacobians the functional path holds at once.
FUNCTIONAL_CHUNK_BYTES = 256 * 2**20


def trainable_parameters(model) -> list:
    """The parameters that require grad, in ``model.parameters()`` order."""
    return [p for p in model.parameters() if p.requires_grad]


def check_per_example_model(model) -> None:
    """Refuse batch norm (couples the examples) and dropout (random) in training mode."""
    nn = torch.nn
    if not isinstance(model, nn.Module):
        raise InvalidParameterError("model", type(model).__name__, "a torch.nn.Module")
    for name, mod in model.named_modules():
        if isinstance(mod, nn.modules.batchnorm._BatchNorm) and mod.training:
            raise InvalidParameterError(
                "model", f"{type(mod).__name__} at {name or '<root>'} in training mode",
                "layers that act on each example alone (use GroupNorm/LayerNorm, or put "
                "batch norm in eval mode): batch statistics couple the examples and void "
                "the per-example sensitivity bound")
        if isinstance(mod, nn.modules.dropout._DropoutNd) and mod.training and mod.p > 0:
            raise InvalidParameterError(
                "model", f"{type(mod).__name__} at {name or '<root>'} in training mode",
                "deterministic layers (put dropout in eval mode): the Gram, the clipping "
                "and the weighted backward pass must see the same forward pass")
    if not trainable_parameters(model):
        raise InvalidParameterError("model", type(model).__name__,
                                    "a module with at least one trainable parameter")


def _as_matrix(out):
    if out.ndim == 1:
        return out[:, None]
    if out.ndim != 2:
        raise InvalidParameterError("model", f"output of shape {tuple(out.shape)}",
                                    "a (batch,) or (batch, d) output per example")
    return out


def ghost_applies(model) -> bool:
    """Whether every trainable parameter belongs to an ``nn.Linear`` layer."""
    linear_params = set()
    for mod in model.modules():
        if isinstance(mod, torch.nn.Linear):
            linear_params.update(id(p) for p in mod.parameters(recurse=False))
    return all(id(p) in linear_params for p in trainable_parameters(model))


def _ghost(model, x):
    """Ghost Grams; returns None when a layer is reused or sees a non-2-D input."""
    records: dict = {}
    handles = []

    def hook(mod, inputs, output):
        records.setdefault(mod, []).append((inputs[0].detach(), output))

    for mod in model.modules():
        if isinstance(mod, torch.nn.Linear) and any(
                p.requires_grad for p in mod.parameters(recurse=False)):
            handles.append(mod.register_forward_hook(hook))
    try:
        out = _as_matrix(model(x))
    finally:
        for h in handles:
            h.remove()
    layers = []
    for mod, calls in records.items():
        if len(calls) != 1 or calls[0][0].ndim != 2:
            return out, None
        a, z = calls[0]
        sq = torch.zeros(a.shape[0], dtype=a.dtype, device=a.device)
        if mod.weight.requires_grad:
            sq = sq + (a * a).sum(1)
        if mod.bias is not None and mod.bias.requires_grad:
            sq = sq + 1.0
        layers.append((z, sq))
    zs = [z for z, _ in layers]
    d = out.shape[1]
    backs = [torch.autograd.grad(out[:, r].sum(), zs, retain_graph=True, allow_unused=True)
             for r in range(d)]
    gram = torch.zeros((out.shape[0], d, d), dtype=out.dtype, device=out.device)
    for k, (_, sq) in enumerate(layers):
        b = torch.stack([backs[r][k] if backs[r][k] is not None
                         else torch.zeros_like(zs[k]) for r in range(d)], dim=1)  # (B, d, o)
        gram = gram + torch.einsum("bro,bso->brs", b, b) * sq[:, None, None]
    return out, gram.detach()


def _functional_grams(model, x, d: int, chunk_size: int | None):
    names = [n for n, p in model.named_parameters() if p.requires_grad]
    params = {n: p.detach() for n, p in model.named_parameters() if p.requires_grad}
    frozen = {n: p.detach() for n, p in model.named_parameters() if not p.requires_grad}
    buffers = dict(model.named_buffers())
    n_params = sum(p.numel() for p in params.values())

    def one(ps, xi):
        out = func.functional_call(model, ({**ps, **frozen, **buffers},), (xi[None],))
        return out.reshape(-1)

    jac_fn = func.vmap(func.jacrev(one), in_dims=(None, 0))
    if chunk_size is None:
        per_example = max(1, d * n_params * x.element_size())
        chunk_size = max(1, FUNCTIONAL_CHUNK_BYTES // per_example)
    grams = []
    for start in range(0, x.shape[0], chunk_size):
        jac = jac_fn(params, x[start:start + chunk_size])
        g = None
        for name in names:
            jn = jac[name].reshape(jac[name].shape[0], d, -1)
            term = jn @ jn.transpose(1, 2)
            g = term if g is None else g + term
        grams.append(g)
    return torch.cat(grams, 0).detach()


def forward_with_grams(model, x, *, method: str = "auto", chunk_size: int | None = None):
    r"""Batch outputs (with their graph) and the per-example Grams :math:`J_iJ_i^\top`.

    Parameters
    ----------
    model : torch.nn.Module
        Acts on each example alone; output ``(B,)`` or ``(B, d)``.
    x : Tensor, shape (B, ...)
    method : {"auto", "ghost", "functional"}
    chunk_size : int, optional
        Examples per ``vmap`` call of the functional path (default: as many as fit in
        :data:`FUNCTIONAL_CHUNK_BYTES`).

    Returns
    -------
    outputs : Tensor, shape (B, d)
        Differentiable in the parameters (for :func:`weighted_gradient`).
    grams : Tensor, shape (B, d, d)
        Detached.
    method : str
        The path used.
    """
    if method not in METHODS:
        raise InvalidParameterError("method", method, f"one of {METHODS}")
    if method in ("auto", "ghost") and ghost_applies(model):
        out, gram = _ghost(model, x)
        if gram is not None:
            return out, gram, "ghost"
        if method == "ghost":
            raise InvalidParameterError(
                "method", method, "'functional' or 'auto' for this model: a Linear layer "
                "is called more than once or on an input that is not (batch, features)")
    elif method == "ghost":
        raise InvalidParameterError("method", method, "'functional' or 'auto' for this "
                                    "model: it has trainable parameters outside nn.Linear")
    out = _as_matrix(model(x))
    return out, _functional_grams(model, x, out.shape[1], chunk_size), "functional"


def weighted_gradient(outputs, weights, params) -> list:
    r""":math:`\sum_i J_i^\top w_i`: one vector-Jacobian product of the batch outputs.

    Parameters
    ----------
    outputs : Tensor, shape (B, d)
        From :func:`forward_with_grams`.
    weights : Tensor, shape (B, d)
    params : list of Tensor

    Returns
    -------
    list of Tensor
        One gradient per parameter (zeros where a parameter is unused).
    """
    grads = torch.autograd.grad(outputs, params, grad_outputs=weights.to(outputs.dtype),
                                allow_unused=True)
    return [torch.zeros_like(p) if g is None else g for p, g in zip(params, grads,
                                                                      strict=True)]
