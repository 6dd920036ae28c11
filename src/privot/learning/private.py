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
   (:func:`privot.privacy.mechanisms.add_gaussian_noise`), ``Delta`` the sensitivity the
   library computes (:func:`~privot.learning.sensitivity.objective_sensitivity`), and
   lets the optimizer step.

The public choices of the run are one :class:`~privot.learning.params.LearningParams`
(``make_private``'s keyword options build it); ``sigma`` is calibrated to
``(target_epsilon, target_delta)`` over ``steps`` steps with privot's fixed-size PLD
accountant (tight upper bound; :mod:`privot.learning.calibration`); the paper's GDP
central-limit figure (Sec. 5.3) and dp-accounting's RDP bound are reported beside it.

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

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from privot._params import build_params
from privot.errors import InvalidParameterError
from privot.learning.calibration import Calibration, calibrate_run
from privot.learning.clipping import (
    gradient_clip_factors,
    jacobian_clip_matrices,
    project_to_ball,
)
from privot.learning.error import calibrated_error
from privot.learning.groups import Groups, fairness_groups
from privot.learning.losses import LOSS_FUNCTIONS, LOSSES, resolve_loss
from privot.learning.params import (
    MAX_TARGET_EPSILON,
    MIN_NOISE_MULTIPLIER,
    PENALTIES,
    LearningParams,
)
from privot.learning.per_example import (
    check_per_example_model,
    forward_with_grams,
    trainable_parameters,
    weighted_gradient,
)
from privot.learning.result import LearningResult
from privot.learning.sampler import fixed_size_indices
from privot.learning.torch_backend import func, torch
from privot.learning.wasserstein import random_directions, sliced_w2_squared
from privot.privacy.mechanisms import add_gaussian_noise
from privot.privacy.noise import check_rng, resolve_rng
from privot.privacy.types import Neighbouring, PrivacyCost, Spender, check_spender

__all__ = [
    "LOSSES",
    "MAX_TARGET_EPSILON",
    "MIN_NOISE_MULTIPLIER",
    "PENALTIES",
    "LearningParams",
    "PrivateWassersteinTrainer",
    "StepRecord",
    "make_private",
    "private_learning",
]

MECHANISM = "learning.dp-sgd-wasserstein"
# the old private spelling of the named losses (benchmarks read it)
_LOSS_FNS = LOSS_FUNCTIONS


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


@dataclass(repr=False)
class PrivateWassersteinTrainer:
    """The private training loop returned by :func:`make_private` (see the module docs).

    Use :meth:`step` for one DP step or :meth:`train` for the remaining ones; read the
    guarantee from :attr:`epsilon`, :meth:`privacy_report` and :meth:`epsilon_curve`,
    and collect a trained run with :meth:`result`.

    Attributes
    ----------
    model, optimizer
        As given to :func:`make_private`.
    groups : Groups
        The data (group sizes are public).
    params : LearningParams
        The public choices of the run; each field is also readable here
        (``trainer.alpha``, ``trainer.clip``, ...).
    calibration : Calibration
        The public numbers computed from them and the group sizes (batch sizes,
        sampling rate, sensitivity, release grid, sigma, epsilon), also readable here
        (``trainer.batch_sizes``, ``trainer.sensitivity``, ...).
    score_fn : callable or None
        Maps outputs to the penalised scores (None: the outputs).
    rng, secure
        The generator of the batches and the noise, and whether it is the OS CSPRNG.
    direction_generator : torch.Generator
        The public generator of the sliced directions.
    accountant
        Charged for the whole run by :func:`make_private`.
    history : list of StepRecord
        Curator-only.
    steps_taken : int
    """

    model: Any
    optimizer: Any
    groups: Groups
    params: LearningParams
    calibration: Calibration
    score_fn: Callable | None
    rng: Any
    secure: bool
    direction_generator: Any
    accountant: Any
    history: list = field(default_factory=list)
    steps_taken: int = 0
    #: What the noise does to each step (:func:`privot.learning.error.calibrated_error`),
    #: stated from the public parameters at ``make_private`` time, before the charge.
    error: Any = None

    # -- the public choices and numbers, read through -----------------------------------

    penalty = property(lambda self: self.params.penalty, doc="The fairness penalty.")
    alpha = property(lambda self: self.params.alpha, doc="Weight of the Wasserstein term.")
    steps = property(lambda self: self.params.steps, doc="``T``, the steps charged for.")
    delta = property(lambda self: self.params.target_delta, doc="Delta of the whole run.")
    clip = property(lambda self: self.params.clip, doc="``C``, the ERM gradient clip.")
    M = property(lambda self: self.params.M, doc="``M``, the activation clip.")
    L = property(lambda self: self.params.L, doc="``L``, the Jacobian clip.")
    jacobian_clipping = property(lambda self: self.params.jacobian_clipping,
                                 doc="Spectral or per-coordinate Jacobian clipping.")
    n_projections = property(lambda self: self.params.n_projections,
                             doc="Directions of the sliced distance.")
    method = property(lambda self: self.params.method,
                      doc="How per-example Jacobian Grams are computed.")
    loss_fn = property(lambda self: resolve_loss(self.params.loss)[0],
                       doc="The per-example loss (None: no ERM term).")
    loss_name = property(lambda self: resolve_loss(self.params.loss)[1],
                         doc="The name the run records for its loss.")
    batch_sizes = property(lambda self: self.calibration.batch_sizes,
                           doc="``n'_j`` per group, in group order.")
    sampling_rate = property(lambda self: self.calibration.sampling_rate,
                             doc="``p``, the largest ``n'_j / n_j`` over private groups.")
    sensitivity = property(lambda self: self.calibration.sensitivity,
                           doc="``Delta`` of the clipped gradient.")
    grid_exponent = property(lambda self: self.calibration.grid_exponent,
                             doc="``k`` of the release grid ``2^-k Z``.")
    effective_sensitivity = property(lambda self: self.calibration.effective_sensitivity,
                                     doc="``Delta'`` of the gradient rounded to the grid.")

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
            "penalty_to_loss": self.sensitivity.penalty_to_loss,
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

    def private_gradient(self, indices: Sequence[np.ndarray] | None = None
                         ) -> tuple[list, dict]:
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

    def noisy(self, values: np.ndarray, *, rng: np.random.Generator | None = None
              ) -> np.ndarray:
        r"""``values`` (any shape, last axis the flat gradient) plus the step's noise.

        The secure discrete Gaussian of standard deviation :attr:`noise_std` on the grid
        :math:`2^{-k}\mathbb Z` (:func:`privot.privacy.mechanisms.add_gaussian_noise`:
        the whole run is calibrated and charged by :func:`make_private`); ``rng``
        defaults to the trainer's. Audits call it on many copies at once.
        """
        return add_gaussian_noise(values, sigma=self.noise_std,
                                  rng=self.rng if rng is None else rng,
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

    def result(self, *, architecture: Mapping[str, Any],
               settings: Mapping[str, Any] | None = None, **curator: Any) -> LearningResult:
        """The run as a :class:`~privot.learning.result.LearningResult` (save it with
        ``.save(folder)``).

        Parameters
        ----------
        architecture : mapping
            Describes the model for ``release.json`` (e.g.
            :func:`~privot.learning.result.describe_classifier`).
        settings : mapping, optional
            Public settings to record beside the guarantee (encoding, hyperparameters).
        **curator
            ``metrics``, ``scores``, ``curator`` (curator-only) and ``curve_points``, as
            :meth:`LearningResult.from_trainer <privot.learning.result.LearningResult.from_trainer>`
            takes them.

        Returns
        -------
        LearningResult
        """
        return LearningResult.from_trainer(self, architecture=architecture,
                                           settings=settings, **curator)

    def __repr__(self) -> str:
        return (f"PrivateWassersteinTrainer({self.penalty}, alpha={self.alpha:g}, "
                f"steps {self.steps_taken}/{self.steps}, sigma={self.noise_multiplier:.4g}, "
                f"eps={self.epsilon:.4g}, delta={self.delta:.3g})")


# ---------------------------------------------------------------------------
# make_private
# ---------------------------------------------------------------------------


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


#: The groups' criteria each penalty accepts.
_CRITERIA_OF_PENALTY = {"sp": ("sp",), "eo": ("eo",), "match": ("match",),
                        "none": ("sp", "eo", "match")}


def _resolve_groups(groups, penalty: str, labels: tuple, sensitive_values: tuple) -> Groups:
    """``groups`` as a :class:`Groups` matching ``penalty`` (a tuple ``(x, y, sensitive)``
    builds the fairness groups of the penalty)."""
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
    if groups.criterion not in _CRITERIA_OF_PENALTY[penalty]:
        raise InvalidParameterError("penalty", penalty,
                                    f"one matching the groups' criterion {groups.criterion!r}")
    return groups


def _warn_if_penalty_dominates(cal: Calibration, params: LearningParams) -> None:
    """Warn (public quantities only, before the charge) when the penalty's share of the
    sensitivity is above :data:`~privot.learning.sensitivity.PENALTY_DOMINATES` times the
    loss's: its noise is then likely to drown its signal (a small minority batch)."""
    import warnings

    from privot.learning.sensitivity import PENALTY_DOMINATES

    ratio = cal.sensitivity.penalty_to_loss
    if ratio is not None and params.alpha < 1 and ratio > PENALTY_DOMINATES:
        warnings.warn(
            f"the fairness penalty's term of the sensitivity is {ratio:.1f} times the "
            f"loss's (group {cal.sensitivity.worst_group!r}, its batch is small): its noise "
            f"may cost accuracy without lowering the parity gap (measured: ISLR Wage, "
            f"ratio 5.8, 14 points lost at epsilon 1). Consider a smaller alpha, a larger "
            f"epsilon, or alpha 0 and a private repair of the scores (privot repair)",
            UserWarning, stacklevel=3)


def _charge(accountant, groups: Groups, params: LearningParams, cal: Calibration):
    """Charge the whole run (its event: ``T`` fixed-size subsampled Gaussian steps, so a
    budget ledger composes it tightly with the data set's other releases) before any
    data is read; without an accountant, one holding exactly this run."""
    from privot.privacy.events import SubsampledGaussianEvent

    if accountant is None:  # every run keeps its ledger: a budget of exactly this run
        from privot.privacy.budget import PrivacyAccountant

        accountant = PrivacyAccountant(cal.epsilon, cal.delta, name="learning-run")
    event = SubsampledGaussianEvent(cal.noise_multiplier, cal.sampling_rate, cal.steps,
                                    "fixed-size", cal.epsilon, cal.delta)
    accountant.spend(PrivacyCost(cal.epsilon, cal.delta, event=event), mechanism=MECHANISM,
                     relation=Neighbouring.REPLACE_ONE_IN_GROUP,
                     params={"noise_multiplier": cal.noise_multiplier,
                             "sensitivity": cal.sensitivity.value,
                             "effective_sensitivity": cal.effective_sensitivity,
                             "steps": cal.steps, "sampling_rate": cal.sampling_rate,
                             "sampling": "fixed-size", "group_sizes": groups.sizes,
                             "penalty": params.penalty, "alpha": params.alpha})
    return accountant


def make_private(model: torch.nn.Module, optimizer: torch.optim.Optimizer, groups: Groups,
                 params: LearningParams | None = None, *,
                 accountant: Spender | None = None,
                 rng: np.random.Generator | int | None = None,
                 score_fn: Callable | None = None, labels: tuple = (0, 1),
                 sensitive_values: tuple = (0, 1), **options: Any
                 ) -> PrivateWassersteinTrainer:
    r"""Make ``model`` trainable with DP-SGD on a (sliced) Wasserstein objective.

    Parameters
    ----------
    model : torch.nn.Module
        Acts on each example alone (no batch norm or dropout in training mode); output
        ``(B,)`` or ``(B, d)``; its initialisation must not depend on the data. CPU or
        CUDA (checked on an H200: the same seeded run as on the CPU to 1.3e-6,
        ``benchmarks/gpu_check_learning.py``).
    optimizer : torch.optim.Optimizer
        Over the model's parameters; it sees only noisy gradients.
    groups : Groups or tuple
        :func:`~privot.learning.groups.fairness_groups` /
        :func:`~privot.learning.groups.matching_groups`, or ``(x, y, sensitive)`` from
        which the groups of ``penalty`` ("sp" or "eo") are built. Group sizes are public.
    params : LearningParams, optional
        The public choices of the run (:class:`~privot.learning.params.LearningParams`:
        ``penalty``, ``alpha``, ``target_epsilon``, ``target_delta`` (required),
        ``noise_multiplier``, ``steps``, ``batch_fraction``, ``batch_sizes``, ``clip``,
        ``M``, ``L``, ``loss``, ``n_projections``, ``jacobian_clipping``,
        ``direction_seed``, ``method``). Keyword ``options`` of the same names build it
        or replace its fields: ``make_private(model, opt, groups, target_epsilon=1.0,
        target_delta=1e-5, steps=300)``.
    accountant : PrivacyAccountant, optional
        Charged ``(epsilon, delta)`` of the whole run now; refuses if it cannot pay.
        Default: a new accountant holding exactly this run (``trainer.accountant``).
    rng : numpy.random.Generator, BitSource or int, optional
        :func:`~privot.privacy.noise.check_rng` (an int seed is
        ``numpy.random.default_rng(seed)``, ``secure=False``).
        None (default): the OS CSPRNG for the batches and the noise. A seeded generator
        makes a run reproducible and is reported as not secure.
    score_fn : callable, optional
        Maps outputs ``(B, d_o)`` to the penalised scores ``(B, d_s)`` (row-wise); default
        the outputs themselves.
    labels, sensitive_values : tuple
        The stated classes (for tuple ``groups``).
    **options
        Fields of :class:`~privot.learning.params.LearningParams`.

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
    params = build_params(LearningParams, params, options)
    check_per_example_model(model)
    if not isinstance(optimizer, torch.optim.Optimizer):
        raise InvalidParameterError("optimizer", type(optimizer).__name__,
                                    "a torch.optim.Optimizer over the model's parameters")
    groups = _resolve_groups(groups, params.penalty, labels, sensitive_values)
    check_spender(accountant)
    _probe_model(model, groups)
    _, secure = resolve_rng(rng)
    n_parameters = sum(p.numel() for p in trainable_parameters(model))
    cal = calibrate_run(groups, params, n_parameters=n_parameters)
    _warn_if_penalty_dominates(cal, params)
    # the error statement: public numbers only, stated before anything is spent
    error = calibrated_error(cal, groups, params, n_parameters)
    accountant = _charge(accountant, groups, params, cal)
    gen = torch.Generator(device="cpu")
    gen.manual_seed(params.direction_seed)
    return PrivateWassersteinTrainer(
        model=model, optimizer=optimizer, groups=groups, params=params, calibration=cal,
        score_fn=score_fn, rng=rng, secure=secure, direction_generator=gen,
        accountant=accountant, error=error)


def private_learning(model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                     groups: Groups, params: LearningParams | None = None, *,
                     accountant: Spender | None = None,
                 rng: np.random.Generator | int | None = None,
                     progress: bool | None = None,
                     architecture: Mapping[str, Any] | None = None,
                     settings: Mapping[str, Any] | None = None,
                     **options: Any) -> LearningResult:
    r"""Train ``model`` privately and return the release: the one-call entry point.

    The same shape as the other capabilities' entry points (``private_heatmap``,
    ``private_barycenter``, ``sample_population``): data, a frozen parameter object
    (:class:`~privot.learning.params.LearningParams`, or keyword ``options`` building
    it), then ``accountant``, ``rng``, ``progress``; a
    :class:`~privot.learning.result.LearningResult` back. It is
    :func:`make_private`, :meth:`PrivateWassersteinTrainer.train` and
    :meth:`PrivateWassersteinTrainer.result` in one call; use those three for a
    callback per step or to stop early.

    Parameters
    ----------
    model, optimizer, groups, params, accountant, rng, **options
        As :func:`make_private`.
    progress : bool, optional
        A bar of the steps on stderr (privot's progress rule).
    architecture : mapping, optional
        Public description of the model for ``release.json``; default its class name and
        number of trainable parameters (the architecture is the caller's public choice).
    settings : mapping, optional
        Other public settings to record.

    Returns
    -------
    LearningResult

    Privacy
    -------
    As :func:`make_private`: the whole run is charged before any data is read.
    """
    trainer = make_private(model, optimizer, groups, params, accountant=accountant, rng=rng,
                           **options)
    trainer.train(progress=progress)
    if architecture is None:
        architecture = {"model": type(model).__name__,
                        "trainable_parameters": int(sum(
                            p.numel() for p in trainable_parameters(model)))}
    return trainer.result(architecture=architecture, settings=settings)
