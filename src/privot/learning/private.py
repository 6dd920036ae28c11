r"""DP-SGD with clipped (sliced) Wasserstein gradients: the training loop (Algorithm 1).

:func:`make_private` wraps any per-example ``nn.Module`` and a plain torch optimizer,
like Opacus's ``PrivacyEngine.make_private``, for objectives that compare whole
distributions (paper 004):

.. math:: \mathscr L_\alpha(\theta) = (1-\alpha)\frac1{N'}\sum_i\ell(o_i, y_i)
          + \alpha\sum_p w_p\,SW_2^2\big(s(o)\#P_{a_p}, s(o)\#P_{b_p}\big)

with ``o = model(x)`` and ``s = score_fn`` (default: the output itself). Each step
(:meth:`PrivateWassersteinTrainer.step`):

1. draws ``n'_j`` of the ``n_j`` records of every group without replacement from the
   secure generator (:func:`~privot.learning.sampler.fixed_size_indices`);
2. computes the clipped surrogate gradient (Eq. 3): per-example loss gradients clipped
   to ``C``, activations projected onto the ball of radius ``M``, per-example
   Jacobians clipped to spectral norm ``L`` (exactly, or per coordinate as in Remark
   A.2), all as *one* weighted vector-Jacobian product of the batch outputs;
3. adds Gaussian noise of standard deviation ``sigma * Delta`` from the secure sampler
   (:func:`privot.privacy.noise.secure_gaussian`), ``Delta`` the sensitivity the library
   computes (:func:`~privot.learning.sensitivity.objective_sensitivity`), and lets the
   optimizer step.

``sigma`` is calibrated to ``(target_epsilon, target_delta)`` over ``steps`` steps with
privot's fixed-size PLD accountant (tight upper bound); the paper's GDP central-limit
figure (Sec. 5.3) and dp-accounting's RDP bound are reported beside it.

Privacy
-------
Unit: one record of one group. Relation: :math:`\sim_k` of Def. 2.1 (replace one record
inside one group); **group sizes are public** (Remark 6.2). Sensitivity: Thm 4.1 / A.1 /
6.1, generalised to any set of pairs (``docs/privacy/learning.md``). Guarantee: the
sequence of noisy gradients -- hence the trained parameters, from a data-independent
initialisation -- is :math:`C_p(G_{1/\sigma})^{\otimes T}`-DP with
:math:`p = \max_j n'_j/n_j` over private groups, reported as (epsilon, delta) by the
fixed-size PLD accountant. The whole run is charged to the accountant before the first
step reads any data; the loss values a step returns are computed from the batch and
are for the curator only.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privot._validation import (
    check_delta,
    check_epsilon,
    check_int,
    check_positive,
    check_probability,
)
from privot.errors import InvalidDataError, InvalidParameterError
from privot.learning._torch import func, torch
from privot.learning.clipping import (
    JACOBIAN_CLIPPINGS,
    gradient_clip_factors,
    jacobian_clip_matrices,
    project_to_ball,
)
from privot.learning.groups import Groups, fairness_groups
from privot.learning.per_example import (
    METHODS,
    check_per_example_model,
    forward_with_grams,
    trainable_parameters,
    weighted_gradient,
)
from privot.learning.sampler import fixed_size_indices
from privot.learning.sensitivity import Sensitivity, objective_sensitivity
from privot.learning.wasserstein import random_directions, sliced_w2_squared
from privot.privacy.noise import check_rng, grid_exponent, resolve_rng, secure_gaussian
from privot.privacy.types import Neighbouring, PrivacyCost

__all__ = ["LOSSES", "PENALTIES", "PrivateWassersteinTrainer", "StepRecord", "make_private"]

PENALTIES = ("sp", "eo", "match", "none")
LOSSES = ("bce", "mse", "cross-entropy")
MECHANISM = "learning.dp-sgd-wasserstein"


def _bce(out, y):
    p = out[:, 0] if out.ndim == 2 else out
    return torch.nn.functional.binary_cross_entropy(p, y.reshape(p.shape).to(p.dtype),
                                                    reduction="none")


def _mse(out, y):
    return ((out - y.reshape(out.shape).to(out.dtype)) ** 2).reshape(out.shape[0], -1).sum(1)


def _cross_entropy(out, y):
    return torch.nn.functional.cross_entropy(out, y.reshape(-1).long(), reduction="none")


_LOSS_FNS = {"bce": _bce, "mse": _mse, "cross-entropy": _cross_entropy}


@dataclass(frozen=True)
class StepRecord:
    """What one step saw (curator-only: computed from the private batch).

    Attributes
    ----------
    step : int
        1-based.
    loss, erm, penalty : float
        The clipped objective on the batch and its two parts (before the noise).
    clipped_fraction : float
        Fraction of ERM gradients that were clipped.
    nonfinite : int
        Examples whose output or Jacobian was not finite (their contribution is zero).
    seconds : float
    """

    step: int
    loss: float
    erm: float
    penalty: float
    clipped_fraction: float
    nonfinite: int
    seconds: float


#: The smallest noise multiplier accepted: below it a run's epsilon is in the hundreds
#: (sigma = 0.5, p = 0.2, 300 steps: about 140) and the PLD grid no longer fits in memory.
MIN_NOISE_MULTIPLIER = 0.5
#: The largest target epsilon accepted (a larger one would call for sigma below the floor).
MAX_TARGET_EPSILON = 100.0


@dataclass
class _Calibration:
    noise_multiplier: float
    epsilon: float
    epsilon_paper: float
    calibrated: bool
    steps: int
    sampling_rate: float
    delta: float
    _epsilon_rdp: float | None = None

    @property
    def epsilon_rdp(self) -> float | None:
        """dp-accounting's RDP bound for the same event (computed once, on demand)."""
        if self._epsilon_rdp is None:
            from privot.privacy.accounting import rdp_epsilon

            try:
                self._epsilon_rdp = rdp_epsilon(
                    noise_multiplier=self.noise_multiplier, sampling_rate=self.sampling_rate,
                    steps=self.steps, delta=self.delta, sampling="fixed-size")
            except (ValueError, OverflowError):  # dp-accounting refuses extreme inputs
                return None
        return self._epsilon_rdp


@dataclass
class PrivateWassersteinTrainer:
    """The private training loop returned by :func:`make_private` (see the module docs).

    Use :meth:`step` for one DP step or :meth:`train` for the remaining ones; read the
    guarantee from :attr:`epsilon`, :meth:`privacy_report` and :meth:`epsilon_curve`.
    """

    model: Any
    optimizer: Any
    groups: Groups
    penalty: str
    alpha: float
    steps: int
    delta: float
    batch_sizes: tuple
    clip: float
    M: float
    L: float
    jacobian_clipping: str
    n_projections: int
    loss_fn: Callable | None
    loss_name: str
    score_fn: Callable | None
    sensitivity: Sensitivity
    sampling_rate: float
    calibration: _Calibration
    method: str
    grid_exponent: int
    effective_sensitivity: float
    rng: Any
    secure: bool
    direction_generator: Any
    accountant: Any
    history: list = field(default_factory=list)
    steps_taken: int = 0

    # -- the guarantee (public) ---------------------------------------------------------

    @property
    def noise_multiplier(self) -> float:
        """``sigma``: noise standard deviation over the sensitivity."""
        return self.calibration.noise_multiplier

    @property
    def noise_std(self) -> float:
        r"""``sigma * Delta'``: the standard deviation of the noise on each coordinate.

        :math:`\Delta' = \Delta + \sqrt P\,2^{-k}` is the sensitivity of the gradient
        rounded to the release grid :math:`2^{-k}\mathbb Z` (as in
        :func:`privot.privacy.mechanisms.gaussian_mechanism`).
        """
        return self.calibration.noise_multiplier * self.effective_sensitivity

    @property
    def epsilon(self) -> float:
        """Epsilon of the whole run (``steps`` steps) by the fixed-size PLD accountant."""
        return self.calibration.epsilon

    def epsilon_curve(self, points: int = 20) -> tuple[np.ndarray, np.ndarray]:
        """Epsilon spent after ``t`` steps at ``points`` checkpoints (PLD; public).

        Returns
        -------
        steps : int array
        epsilon : float array
        """
        from privot.privacy.accounting import pld_epsilon_curve

        ts = np.unique(np.linspace(1, self.steps, min(points, self.steps)).round().astype(int))
        return ts, pld_epsilon_curve(noise_multiplier=self.noise_multiplier,
                                     sampling_rate=self.sampling_rate, steps=ts.tolist(),
                                     delta=self.delta, sampling="fixed-size")

    def privacy_report(self) -> dict[str, Any]:
        """Everything public about the run's guarantee (JSON-able)."""
        cal = self.calibration
        return {
            "mechanism": MECHANISM,
            "paper": "Rodriguez-Vitores, Lalanne, Loubes: Learning with differentially "
                     "private (sliced) Wasserstein gradients (Algorithm 1, Thm 6.1)",
            "unit": "one record of one group",
            "relation": f"replace-one within a group (~k of Def. 2.1, k = "
                        f"{len(self.groups.groups)}); group sizes are public (Remark 6.2)",
            "group_sizes": self.groups.sizes,
            "private_groups": [g.name for g in self.groups.groups if g.private],
            "batch_sizes": dict(zip(self.groups.sizes, self.batch_sizes, strict=True)),
            "sampling": "fixed-size without replacement per group (secure generator)",
            "sampling_rate": self.sampling_rate,
            "steps": self.steps,
            "steps_taken": self.steps_taken,
            "penalty": self.penalty,
            "criterion": self.groups.criterion,
            "alpha": self.alpha,
            "clip": self.clip, "M": self.M, "L": self.L,
            "jacobian_clipping": self.jacobian_clipping,
            "n_projections": self.n_projections,
            "loss": self.loss_name,
            "sensitivity": self.sensitivity.value,
            "sensitivity_per_group": self.sensitivity.per_group,
            "effective_sensitivity": self.effective_sensitivity,
            "grid_exponent": self.grid_exponent,
            "noise_multiplier": cal.noise_multiplier,
            "noise_std": self.noise_std,
            "delta": self.delta,
            "epsilon": cal.epsilon,
            "epsilon_accountant": "privot fixed-size PLD (upper bound)",
            "epsilon_rdp": cal.epsilon_rdp,
            "epsilon_paper_gdp_clt": cal.epsilon_paper,
            "epsilon_paper_gap": cal.epsilon - cal.epsilon_paper,
            "paper_figure_note": "GDP central-limit approximation of Sec. 5.3 (the paper's "
                                 "number; an approximation, not a bound)",
            "secure_randomness": self.secure,
            "per_example_method": self.method,
        }

    # -- one step ---------------------------------------------------------------------

    def _device(self):
        return next(iter(trainable_parameters(self.model))).device

    def _batch(self):
        """Indices per group (the secret sample)."""
        return [fixed_size_indices(g.size, b, rng=self.rng)
                for g, b in zip(self.groups.groups, self.batch_sizes, strict=True)]

    def _scores_and_jac(self, out):
        if self.score_fn is None:
            return out, None
        s = self.score_fn(out)
        if s.ndim == 1:
            s = s[:, None]

        def one(o):
            r = self.score_fn(o[None])
            return r.reshape(-1)

        jac = func.vmap(func.jacrev(one))(out)  # (B, d_s, d_o)
        return s, jac

    def private_gradient(self, indices=None) -> tuple[list, dict]:
        """The clipped surrogate gradient of the batch (no noise) and curator statistics.

        Parameters
        ----------
        indices : list of int arrays, optional
            Rows per group (default: a fresh secure sample). Tests pass fixed batches
            to compare neighbouring datasets.

        Returns
        -------
        grads : list of Tensor
            One per trainable parameter.
        stats : dict
        """
        device = self._device()
        params = trainable_parameters(self.model)
        if indices is None:
            indices = self._batch()
        groups = self.groups.groups
        rows: dict[int, Any] = {}
        xs, offset = [], 0
        for j, (g, idx) in enumerate(zip(groups, indices, strict=True)):
            if g.through_model:
                xs.append(g.x[torch.as_tensor(idx)])
                rows[j] = torch.arange(offset, offset + len(idx), device=device)
                offset += len(idx)
        x_cat = torch.cat(xs).to(device)
        out, grams, _ = forward_with_grams(self.model, x_cat, method=self.method)
        od = out.detach()
        finite = torch.isfinite(od).all(1) & torch.isfinite(grams).reshape(len(od), -1).all(1)
        n_bad = int((~finite).sum())
        if n_bad:
            od = torch.where(finite[:, None], od, torch.zeros_like(od))
            grams = torch.where(finite[:, None, None], grams, torch.zeros_like(grams))
        weights = torch.zeros_like(od)
        erm_value, clipped = 0.0, 0.0
        use_erm = self.alpha < 1 and self.loss_fn is not None
        erm_groups = [j for j in rows if groups[j].y is not None] if use_erm else []
        if erm_groups:
            r = torch.cat([rows[j] for j in erm_groups])
            y = torch.cat([groups[j].y[torch.as_tensor(indices[j])] for j in erm_groups]
                          ).to(device)
            o = od[r].clone().requires_grad_(True)
            with torch.enable_grad():
                losses = self.loss_fn(o, y)
                (e,) = torch.autograd.grad(losses.sum(), o)
            e = torch.where(finite[r, None] & torch.isfinite(e), e, torch.zeros_like(e))
            f = gradient_clip_factors(grams[r], e, self.clip)
            clipped = float((f < 1).float().mean())
            weights[r] += ((1 - self.alpha) / len(r)) * f[:, None] * e
            erm_value = float(torch.nan_to_num(losses.detach()).mean())
        penalty_value = 0.0
        if self.alpha > 0:
            scores, jac = self._scores_and_jac(od)
            for pair in self.groups.pairs:
                sides = []
                for j in (pair.a, pair.b):
                    g = groups[j]
                    if g.through_model:
                        pts = scores[rows[j]]
                    else:
                        pts = g.x[torch.as_tensor(indices[j])].to(device, od.dtype)
                        pts = pts.reshape(len(pts), -1)
                    sides.append(project_to_ball(pts, self.M).detach().requires_grad_(True))
                dirs = random_directions(sides[0].shape[1], self.n_projections,
                                         generator=self.direction_generator, device=device,
                                         dtype=od.dtype)
                with torch.enable_grad():
                    value = sliced_w2_squared(sides[0], sides[1], directions=dirs)
                    cs = torch.autograd.grad(value, sides)
                penalty_value += pair.weight * float(value.detach())
                for j, c in zip((pair.a, pair.b), cs, strict=True):
                    if not groups[j].through_model:
                        continue
                    r = rows[j]
                    g_s = grams[r] if jac is None else jac[r] @ grams[r] @ jac[r].transpose(1, 2)
                    S = jacobian_clip_matrices(g_s, self.L, mode=self.jacobian_clipping)
                    w = (S @ c[:, :, None])[:, :, 0]
                    if jac is not None:
                        w = (jac[r].transpose(1, 2) @ w[:, :, None])[:, :, 0]
                    weights[r] += self.alpha * pair.weight * w
        weights = torch.where(finite[:, None], weights, torch.zeros_like(weights))
        if n_bad:
            # Re-run the finite examples only: a zero weight times a non-finite local
            # derivative would still be NaN in the backward pass.
            keep = torch.nonzero(finite)[:, 0]
            out = self.model(x_cat[keep])
            out = out[:, None] if out.ndim == 1 else out
            weights = weights[keep]
        grads = weighted_gradient(out, weights, params)
        loss = (1 - self.alpha) * erm_value + self.alpha * penalty_value
        return grads, {"loss": loss, "erm": erm_value, "penalty": penalty_value,
                       "clipped_fraction": clipped, "nonfinite": n_bad}

    def noisy(self, values: np.ndarray, *, rng=None) -> np.ndarray:
        r"""``values`` (any shape, last axis the flat gradient) plus the step's noise.

        The secure discrete Gaussian of standard deviation :attr:`noise_std` on the grid
        :math:`2^{-k}\mathbb Z` (:func:`privot.privacy.noise.secure_gaussian`); ``rng``
        defaults to the trainer's. Audits call it on many copies at once.
        """
        return secure_gaussian(values, self.noise_std, rng=self.rng if rng is None else rng,
                               grid_exponent=self.grid_exponent)

    def _add_noise(self, grads: list) -> list:
        flat = torch.cat([g.reshape(-1) for g in grads]).detach().to("cpu", torch.float64)
        noisy_t = torch.from_numpy(np.asarray(self.noisy(flat.numpy()), dtype=np.float64))
        out, start = [], 0
        for g in grads:
            k = g.numel()
            out.append(noisy_t[start:start + k].reshape(g.shape).to(g.device, g.dtype))
            start += k
        return out

    def step(self) -> StepRecord:
        """One private step: secure batch, clipped gradient, noise, ``optimizer.step()``.

        Returns
        -------
        StepRecord
            Curator-only statistics of the batch.
        """
        if self.steps_taken >= self.steps:
            raise InvalidParameterError(
                "steps", self.steps, f"more steps than the {self.steps} the budget was "
                "charged for: build a new trainer (and pay again) to train longer")
        start = time.perf_counter()
        self.model.train()
        grads, stats = self.private_gradient()
        noisy = self._add_noise(grads)
        for p, g in zip(trainable_parameters(self.model), noisy, strict=True):
            p.grad = g
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        self.steps_taken += 1
        rec = StepRecord(self.steps_taken, stats["loss"], stats["erm"], stats["penalty"],
                         stats["clipped_fraction"], stats["nonfinite"],
                         time.perf_counter() - start)
        self.history.append(rec)
        return rec

    def train(self, *, progress: bool | None = None,
              callback: Callable[[StepRecord], None] | None = None) -> list[StepRecord]:
        """Run the remaining steps (``steps - steps_taken``).

        Parameters
        ----------
        progress : bool, optional
            A tqdm bar of the steps on stderr (loss values in it are the curator's):
            None (default) only when stderr is a terminal, True/False force it
            (privot's one rule, :mod:`privot._progress`).
        callback : callable, optional
            Called with each :class:`StepRecord`.
        """
        from privot._progress import progress_bar, show_progress

        remaining = self.steps - self.steps_taken
        bar = progress_bar(show_progress(progress), total=remaining,
                           desc="private training", unit="step")
        out = []
        for _ in range(remaining):
            rec = self.step()
            out.append(rec)
            if callback is not None:
                callback(rec)
            bar.update()
            bar.set_postfix_str(f"loss={rec.loss:.4g}")
        bar.close()
        return out

    def __repr__(self) -> str:
        return (f"PrivateWassersteinTrainer({self.penalty}, alpha={self.alpha:g}, "
                f"steps {self.steps_taken}/{self.steps}, sigma={self.noise_multiplier:.4g}, "
                f"eps={self.epsilon:.4g}, delta={self.delta:.3g})")


# ---------------------------------------------------------------------------
# make_private
# ---------------------------------------------------------------------------


def _batch_sizes(groups: Groups, batch_fraction, batch_sizes) -> tuple:
    if batch_sizes is not None:
        if isinstance(batch_sizes, Mapping):
            missing = [g.name for g in groups.groups if g.name not in batch_sizes]
            if missing:
                raise InvalidParameterError("batch_sizes", dict(batch_sizes),
                                            f"a size for every group; missing {missing}")
            sizes = [batch_sizes[g.name] for g in groups.groups]
        else:
            sizes = list(batch_sizes)
            if len(sizes) != len(groups.groups):
                raise InvalidParameterError("batch_sizes", batch_sizes,
                                            f"{len(groups.groups)} sizes, one per group")
        sizes = [check_int(b, "batch_sizes", minimum=1) for b in sizes]
    else:
        q = check_probability(batch_fraction, "batch_fraction", open_left=True)
        sizes = [max(1, int(round(q * g.size))) for g in groups.groups]
    for g, b in zip(groups.groups, sizes, strict=True):
        if g.size < 2:
            raise InvalidDataError(f"group {g.name} has {g.size} record: a Wasserstein "
                                   "term needs at least 2 per group")
        if b > g.size:
            raise InvalidParameterError("batch_sizes", {g.name: b},
                                        f"at most the group size {g.size} (group {g.name})")
    return tuple(sizes)


@functools.lru_cache(maxsize=128)
def _calibrated_sigma(target_epsilon: float, delta: float, steps: int, q: float
                      ) -> tuple[float, float]:
    """PLD calibration, cached: sweeps of alpha at one (eps, delta, T, p) pay it once."""
    from privot.privacy.accounting import calibrate_noise_multiplier

    cal = calibrate_noise_multiplier(target_epsilon, delta, steps=steps, sampling_rate=q,
                                     accountant="pld", sampling="fixed-size")
    return cal.noise_multiplier, cal.epsilon


@functools.lru_cache(maxsize=128)
def _pld_epsilon(sigma: float, delta: float, steps: int, q: float) -> float:
    from privot.privacy.accounting import pld_epsilon

    return float(pld_epsilon(noise_multiplier=sigma, sampling_rate=q, steps=steps,
                             delta=delta, sampling="fixed-size"))


def _calibrate(target_epsilon, noise_multiplier, delta: float, steps: int, q: float
               ) -> _Calibration:
    from privot.privacy.accounting import gdp_clt_epsilon

    if noise_multiplier is None:
        if target_epsilon > MAX_TARGET_EPSILON:
            raise InvalidParameterError("target_epsilon", target_epsilon,
                                        f"at most {MAX_TARGET_EPSILON:g}")
        sigma, eps = _calibrated_sigma(float(target_epsilon), delta, steps, q)
        calibrated = True
    else:
        sigma = check_positive(noise_multiplier, "noise_multiplier")
        if sigma < MIN_NOISE_MULTIPLIER:
            raise InvalidParameterError("noise_multiplier", noise_multiplier,
                                        f"at least {MIN_NOISE_MULTIPLIER} (below it epsilon "
                                        "is in the hundreds)")
        eps = _pld_epsilon(sigma, delta, steps, q)
        calibrated = False
    eps_paper = gdp_clt_epsilon(noise_multiplier=sigma, sampling_rate=q, steps=steps,
                                delta=delta, sampling="fixed-size")
    return _Calibration(sigma, float(eps), float(eps_paper), calibrated, steps, q, delta)


def _probe_model(model, groups: Groups) -> None:
    """Refuse a model whose output on a data-independent input (zeros) is unusable."""
    g = next(g for g in groups.groups if g.through_model)
    device = next(iter(trainable_parameters(model))).device
    probe = torch.zeros((2, *g.x.shape[1:]), dtype=g.x.dtype, device=device)
    with torch.no_grad():
        try:
            out = model(probe)
        except RuntimeError as exc:
            raise InvalidParameterError("model", type(model).__name__,
                                        f"a module accepting inputs of shape "
                                        f"{tuple(g.x.shape[1:])} per row ({exc})") from exc
    if out.ndim not in (1, 2) or out.shape[0] != 2:
        raise InvalidParameterError("model", f"output of shape {tuple(out.shape)} for 2 rows",
                                    "a (batch,) or (batch, d) output")
    if not bool(torch.isfinite(out).all()):
        raise InvalidParameterError("model", "non-finite outputs on an all-zero input",
                                    "a model with finite outputs")


def make_private(model, optimizer, groups, *, penalty: str = "sp", alpha: float = 0.5,
                 target_epsilon: float | None = None, target_delta: float | None = None,
                 steps: int = 500, batch_fraction: float = 0.2,
                 batch_sizes: Sequence[int] | Mapping[str, int] | None = None,
                 clip: float = 5.0, M: float = 1.0, L: float = 1.0,
                 loss: str | Callable | None = "bce", score_fn: Callable | None = None,
                 n_projections: int = 50, jacobian_clipping: str = "spectral",
                 noise_multiplier: float | None = None, accountant=None,
                 rng: np.random.Generator | int | None = None, direction_seed: int = 0,
                 method: str = "auto", labels: tuple = (0, 1),
                 sensitive_values: tuple = (0, 1)) -> PrivateWassersteinTrainer:
    r"""Make ``model`` trainable with DP-SGD on a (sliced) Wasserstein objective.

    Parameters
    ----------
    model : torch.nn.Module
        Acts on each example alone (no batch norm or dropout in training mode); output
        ``(B,)`` or ``(B, d)``; its initialisation must not depend on the data. CPU or
        CUDA (the CUDA path has not been run on a GPU yet).
    optimizer : torch.optim.Optimizer
        Over the model's parameters; it sees only noisy gradients.
    groups : Groups or tuple
        :func:`~privot.learning.groups.fairness_groups` /
        :func:`~privot.learning.groups.matching_groups`, or ``(x, y, sensitive)`` from
        which the groups of ``penalty`` ("sp" or "eo") are built. Group sizes are public.
    penalty : {"sp", "eo", "match", "none"}, default "sp"
        Statistical parity (Eq. 5), equality of odds (Eq. 6), the free-form pair of
        :func:`matching_groups`, or none (plain DP-SGD, ``alpha`` must be 0).
    alpha : float, default 0.5
        Weight of the Wasserstein term, in [0, 1].
    target_epsilon, target_delta : float
        The guarantee of the whole run; ``sigma`` is calibrated to it. Give
        ``noise_multiplier`` instead of ``target_epsilon`` to fix ``sigma``.
    steps : int, default 500
        ``T``. The run is charged for all of them up front.
    batch_fraction : float, default 0.2
        ``n'_j / n_j`` (the paper uses about 1/5); or give ``batch_sizes``.
    batch_sizes : sequence or mapping of int, optional
    clip : float, default 5.0
        ``C``: per-example clipping of the loss gradients.
    M, L : float, default 1.0
        Activation and Jacobian clipping of the Wasserstein term.
    loss : {"bce", "mse", "cross-entropy"} or callable or None, default "bce"
        Per-example loss ``loss(outputs (B, d), targets) -> (B,)``; ``"bce"`` takes
        probabilities (the paper's sigmoid classifier). None: no ERM term.
    score_fn : callable, optional
        Maps outputs ``(B, d_o)`` to the penalised scores ``(B, d_s)`` (row-wise); default
        the outputs themselves.
    n_projections : int, default 50
        Monte-Carlo directions of the sliced distance (ignored in 1-D).
    jacobian_clipping : {"spectral", "per-coordinate"}, default "spectral"
        Exact spectral clipping, or the paper's per-coordinate clipping (Remark A.2).
    noise_multiplier : float, optional
    accountant : PrivacyAccountant, optional
        Charged ``(epsilon, delta)`` of the whole run now; refuses if it cannot pay.
        Default: a new accountant holding exactly this run (``trainer.accountant``).
    rng : numpy.random.Generator, BitSource or int, optional
        :func:`~privot.privacy.noise.check_rng` (an int seed is
        ``numpy.random.default_rng(seed)``, ``secure=False``).
        None (default): the OS CSPRNG for the batches and the noise. A seeded generator
        makes a run reproducible and is reported as not secure.
    direction_seed : int, default 0
        Seed of the public generator of the sliced directions.
    method : {"auto", "ghost", "functional"}
        How per-example Jacobian Grams are computed (:mod:`~privot.learning.per_example`).
    labels, sensitive_values : tuple
        The stated classes (for tuple ``groups``).

    Returns
    -------
    PrivateWassersteinTrainer

    Privacy
    -------
    See the module docstring: unit one record of one group, relation replace-one within
    a group (group sizes public), sensitivity computed here from the public
    hyperparameters and batch sizes, guarantee by the fixed-size PLD accountant; the run
    is charged before any data is read.
    """
    rng = check_rng(rng)  # the one rng rule: an int seed is default_rng(seed)
    if penalty not in PENALTIES:
        raise InvalidParameterError("penalty", penalty, f"one of {PENALTIES}")
    alpha = check_probability(alpha, "alpha")
    if penalty == "none" and alpha != 0:
        raise InvalidParameterError("alpha", alpha, "0 with penalty='none'")
    check_per_example_model(model)
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise InvalidParameterError("optimizer", type(optimizer).__name__,
                                    "a torch.optim.Optimizer over the model's parameters")
    if isinstance(groups, tuple) and len(groups) == 3:
        if penalty not in ("sp", "eo", "none"):
            raise InvalidParameterError("groups", "a tuple (x, y, sensitive)",
                                        "a Groups from matching_groups for penalty='match'")
        groups = fairness_groups(*groups, criterion="eo" if penalty == "eo" else "sp",
                                 labels=labels, sensitive_values=sensitive_values)
    if not isinstance(groups, Groups):
        raise InvalidParameterError("groups", type(groups).__name__,
                                    "a Groups (fairness_groups / matching_groups) or a tuple "
                                    "(x, y, sensitive)")
    expected = {"sp": ("sp",), "eo": ("eo",), "match": ("match",), "none": ("sp", "eo",
                                                                            "match")}
    if groups.criterion not in expected[penalty]:
        raise InvalidParameterError("penalty", penalty,
                                    f"one matching the groups' criterion {groups.criterion!r}")
    delta = check_delta(target_delta, "target_delta", allow_zero=False) \
        if target_delta is not None else None
    if delta is None:
        raise InvalidParameterError("target_delta", None, "a number in (0, 1)")
    if (target_epsilon is None) == (noise_multiplier is None):
        raise InvalidParameterError("target_epsilon", target_epsilon,
                                    "exactly one of target_epsilon and noise_multiplier")
    if target_epsilon is not None:
        target_epsilon = check_epsilon(target_epsilon, "target_epsilon")
    steps = check_int(steps, "steps", minimum=1)
    if isinstance(loss, str):
        if loss not in _LOSS_FNS:
            raise InvalidParameterError("loss", loss, f"one of {LOSSES}, a callable or None")
        loss_fn, loss_name = _LOSS_FNS[loss], loss
    elif loss is None or callable(loss):
        loss_fn, loss_name = loss, getattr(loss, "__name__", "none" if loss is None
                                           else "custom")
    else:
        raise InvalidParameterError("loss", loss, f"one of {LOSSES}, a callable or None")
    use_erm = alpha < 1 and loss_fn is not None
    if alpha < 1 and loss_fn is None:
        raise InvalidParameterError("loss", None, "a loss when alpha < 1")
    clip = check_positive(clip, "clip") if use_erm else float(clip or 0.0)
    if alpha > 0:
        M = check_positive(M, "M")
        L = check_positive(L, "L")
    if jacobian_clipping not in JACOBIAN_CLIPPINGS:
        raise InvalidParameterError("jacobian_clipping", jacobian_clipping,
                                    f"one of {JACOBIAN_CLIPPINGS}")
    n_projections = check_int(n_projections, "n_projections", minimum=1)
    if method not in METHODS:
        raise InvalidParameterError("method", method, f"one of {METHODS}")
    if accountant is not None and not hasattr(accountant, "spend"):
        raise InvalidParameterError("accountant", accountant,
                                    "None or an object with spend() (a PrivacyAccountant)")
    sizes = _batch_sizes(groups, batch_fraction, batch_sizes)
    private = [(g, b) for g, b in zip(groups.groups, sizes, strict=True) if g.private]
    q = max(b / g.size for g, b in private)
    sens = objective_sensitivity(groups, sizes, alpha=alpha, C=clip, M=M, L=L, erm=use_erm)
    if sens.value <= 0:
        raise InvalidParameterError("alpha", alpha, "a value giving a private group a "
                                    "non-zero gradient (check loss, alpha and groups)")
    for pair in groups.pairs:
        if pair.a == pair.b:
            raise InvalidParameterError("groups", f"pair ({pair.a}, {pair.b})",
                                        "pairs of two different groups")
    _probe_model(model, groups)
    _, secure = resolve_rng(rng)
    # The release grid 2^-k (float-attack safety) and the rounded gradient's sensitivity.
    root_p = math.sqrt(sum(p.numel() for p in trainable_parameters(model)))
    k = grid_exponent(sens.value / root_p)
    effective = math.nextafter(sens.value + math.ldexp(root_p, -k), math.inf)
    cal = _calibrate(target_epsilon, noise_multiplier, delta, steps, q)
    if accountant is None:  # every run keeps its ledger: a budget of exactly this run
        from privot.privacy.budget import PrivacyAccountant

        accountant = PrivacyAccountant(cal.epsilon, delta, name="learning-run")
    # Charge the whole run before any data is read.
    # the event says what runs (T fixed-size subsampled Gaussian steps), so that a budget
    # ledger composes the run tightly with the data set's other releases
    from privot.privacy.events import SubsampledGaussianEvent

    event = SubsampledGaussianEvent(cal.noise_multiplier, q, steps, "fixed-size",
                                    cal.epsilon, delta)
    accountant.spend(PrivacyCost(cal.epsilon, delta, event=event), mechanism=MECHANISM,
                     relation=Neighbouring.REPLACE_ONE_IN_GROUP,
                     params={"noise_multiplier": cal.noise_multiplier,
                             "sensitivity": sens.value,
                             "effective_sensitivity": effective, "steps": steps,
                             "sampling_rate": q, "sampling": "fixed-size",
                             "group_sizes": groups.sizes, "penalty": penalty,
                             "alpha": alpha})
    gen = torch.Generator(device="cpu")
    gen.manual_seed(int(direction_seed))
    return PrivateWassersteinTrainer(
        model=model, optimizer=optimizer, groups=groups, penalty=penalty, alpha=alpha,
        steps=steps, delta=delta, batch_sizes=sizes, clip=clip, M=float(M), L=float(L),
        jacobian_clipping=jacobian_clipping, n_projections=n_projections, loss_fn=loss_fn,
        loss_name=loss_name, score_fn=score_fn, sensitivity=sens, sampling_rate=q,
        calibration=cal, method=method, grid_exponent=k, effective_sensitivity=effective,
        rng=rng, secure=secure, direction_generator=gen, accountant=accountant)
