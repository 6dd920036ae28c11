r"""The result of one private training run: the model, its guarantee, and the curator's view.

:class:`LearningResult` gathers what a run of :func:`~privot.learning.make_private`
produced, split by audience exactly as ``privot learn`` writes it
(:meth:`LearningResult.save`):

publishable (a function of the public parameters and the noisy gradients only)
    * ``model.pt`` -- the trained parameters (``state_dict``), post-processing of the
      noisy gradients from a data-independent initialisation;
    * ``release.json`` -- :meth:`LearningResult.to_dict`: the trainer's
      ``privacy_report()`` (epsilon by three accountants, delta, sigma, sensitivity, the
      public group and batch sizes), the epsilon curve, the model's architecture and the
      public settings the caller gave (feature encoding, hyperparameters);
    * ``privacy.png`` -- epsilon spent along the steps (PLD).

curator-only (computed from the private data; never publish)
    * ``curator-metrics.json`` -- fairness reports (accuracy, demographic-parity and
      equalized-odds differences, with bootstrap intervals) before and after training;
    * ``curator-scores.png`` -- score distributions per group, before and after;
    * ``curator-training.png`` -- the batch losses along the steps;
    * ``curator-report.json`` -- anything else the caller measured on the data (row
      counts, clipped values, timings, data warnings).

:func:`build_classifier` makes the architectures ``privot learn`` trains,
:func:`describe_classifier` describes one for ``release.json`` and :func:`load_model`
rebuilds one from a saved folder.

Privacy
-------
Unit: one record of one group; relation: replace one record inside one group (~k of Def.
2.1 of paper 004); **group sizes are public** (Remark 6.2), hence also the batch sizes,
the sampling rate and the sensitivity, which are functions of them and of the public
hyperparameters. The trained parameters, the privacy report and the epsilon curve are
publishable. The step history (losses on private batches, clipped fractions, timings),
the fairness metrics and the score arrays are computed from the private data without
noise: they are for the data curator only and are written only into ``curator-`` files.
Nothing here adds noise or spends budget; the guarantee is the trainer's
(:mod:`privot.learning.private`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from privot._result import (
    CURATOR_PREFIX,
    CURATOR_REPORT,
    ReleaseResult,
    write_curator_report,
    write_release,
)
from privot.errors import InvalidParameterError
from privot.privacy.types import Neighbouring, PrivacyCost

__all__ = ["CURATOR_FILES", "MODELS", "PUBLISHABLE_FILES", "LearningResult",
           "build_classifier", "count_parameters", "describe_classifier", "load_model"]

#: The architectures of :func:`build_classifier`.
MODELS = ("logistic", "mlp")
#: What :meth:`LearningResult.save` may write for the public.
PUBLISHABLE_FILES = ("model.pt", "release.json", "privacy.png")
#: What :meth:`LearningResult.save` may write for the curator only.
CURATOR_FILES = (CURATOR_PREFIX + "metrics.json", CURATOR_PREFIX + "scores.png",
                 CURATOR_PREFIX + "training.png", CURATOR_REPORT)
#: What :meth:`LearningResult.plot` draws, by ``which``, and the file it is saved as.
FIGURES = {"privacy": "privacy.png", "scores": CURATOR_PREFIX + "scores.png",
           "training": CURATOR_PREFIX + "training.png"}
_CURATOR_NOTICE = ("computed from the private data without noise: NOT differentially "
                   "private, for the data curator only; never publish this file")
_HISTORY_FIELDS = ("step", "loss", "erm", "penalty", "clipped_fraction", "nonfinite",
                   "seconds")


def build_classifier(n_features: int, *, model: str = "logistic",
                     hidden: Sequence[int] = (64, 64), seed: int | None = None):
    """A binary classifier whose output is a probability (``(B, 1)``, sigmoid).

    Parameters
    ----------
    n_features : int
        Input width.
    model : {"logistic", "mlp"}, default "logistic"
        ``Linear(n_features, 1) + Sigmoid`` (the paper's classifier), or an MLP with
        ``hidden`` ReLU layers and a sigmoid output.
    hidden : sequence of int, default (64, 64)
        Hidden widths of the MLP (ignored for ``"logistic"``).
    seed : int, optional
        Seed of the initialisation (torch's global generator is left untouched); None:
        fresh OS entropy. The initialisation never depends on the data.

    Returns
    -------
    torch.nn.Sequential
    """
    from privot.learning.torch_backend import torch

    if model not in MODELS:
        raise InvalidParameterError("model", model, f"one of {MODELS}")
    if isinstance(n_features, bool) or not isinstance(n_features, int) or n_features < 1:
        raise InvalidParameterError("n_features", n_features, "an integer >= 1")
    widths = [n_features]
    if model == "mlp":
        hidden = list(hidden)
        if not hidden or any(isinstance(h, bool) or not isinstance(h, int) or h < 1
                             for h in hidden):
            raise InvalidParameterError("hidden", hidden,
                                        "one or more integer widths >= 1")
        widths += hidden
    if seed is None:
        seed = int(np.random.SeedSequence().generate_state(1, dtype=np.uint64)[0] >> 1)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        layers: list = []
        for a, b in zip(widths[:-1], widths[1:], strict=True):
            layers += [torch.nn.Linear(a, b), torch.nn.ReLU()]
        layers += [torch.nn.Linear(widths[-1], 1), torch.nn.Sigmoid()]
        return torch.nn.Sequential(*layers)


def describe_classifier(n_features: int, *, model: str = "logistic",
                 hidden: Sequence[int] = (64, 64)) -> dict[str, Any]:
    """The public description of :func:`build_classifier`'s model (for ``release.json``)."""
    layers = [n_features, *(list(hidden) if model == "mlp" else []), 1]
    return {"model": model, "layers": layers,
            "hidden_activation": "relu" if model == "mlp" else None,
            "output": "sigmoid (probability of the positive class)",
            "builder": "privot.learning.result.build_classifier"}


def count_parameters(layers: Sequence[int]) -> int:
    r"""``P``, the trainable scalars of :func:`build_classifier`'s model of widths
    ``layers`` (``describe_classifier(...)["layers"]``): a weight matrix and a bias per
    linear layer, :math:`\sum_i (w_i + 1)\,w_{i+1}`."""
    widths = [int(w) for w in layers]
    return sum((a + 1) * b for a, b in zip(widths[:-1], widths[1:], strict=True))


def load_model(folder: str | Path):
    """The model saved by :meth:`LearningResult.save` (``release.json`` + ``model.pt``).

    Returns
    -------
    torch.nn.Sequential
        In evaluation mode; inputs are encoded as ``release.json["features"]`` says.
    """
    from privot.learning.torch_backend import torch

    folder = Path(folder)
    release = json.loads((folder / "release.json").read_text())
    arch = release["model"]
    layers = arch["layers"]
    model = build_classifier(layers[0], model=arch["model"], hidden=layers[1:-1], seed=0)
    state = torch.load(folder / "model.pt", map_location="cpu", weights_only=True)
    model.load_state_dict(state)
    return model.eval()


def _history_arrays(history: Sequence[Any]) -> dict[str, np.ndarray]:
    return {f: np.asarray([getattr(r, f) for r in history],
                          dtype=np.int64 if f in ("step", "nonfinite") else np.float64)
            for f in _HISTORY_FIELDS}


@dataclass(frozen=True, repr=False)
class LearningResult(ReleaseResult):
    """A trained model with its public guarantee and the curator's diagnostics.

    Attributes
    ----------
    model : torch.nn.Module
        The trained model (publishable).
    privacy : dict
        The trainer's ``privacy_report()`` (publishable).
    epsilon_steps, epsilon_curve : (k,) arrays
        Epsilon (PLD) spent after ``epsilon_steps[i]`` steps (publishable). (The curve
        was called ``epsilon`` before issue 25; :attr:`epsilon` is now the float the run
        states, as in every result.)
    architecture : dict
        Public description of the model (``release.json["model"]``).
    settings : dict
        Other public settings, merged into ``release.json`` (feature encoding,
        hyperparameters, notes).
    history : dict of str to (T,) arrays
        Curator-only: ``step, loss, erm, penalty, clipped_fraction, nonfinite, seconds``
        of every step (computed from the private batches).
    metrics : dict, optional
        Curator-only: ``{"before": {split: FairnessReport dict}, "after": {...}}``.
    scores : dict, optional
        Curator-only, for the score plot: ``sensitive``, ``after`` and optionally
        ``before``, ``y_true``, ``labels`` (names of the two groups), ``split``.
    curator : dict
        Curator-only extras for ``curator-report.json`` (counts, timings, warnings).
    error : ErrorStatement, optional
        What the noise does to each step (publishable: stated from the public
        parameters before the charge, :mod:`privot.learning.error`);
        ``release.json["error"]``.
    """

    model: Any
    privacy: dict[str, Any]
    epsilon_steps: np.ndarray
    epsilon_curve: np.ndarray
    architecture: dict[str, Any]
    settings: dict[str, Any] = field(default_factory=dict)
    history: dict[str, np.ndarray] = field(default_factory=dict)
    metrics: dict[str, Any] | None = None
    scores: dict[str, Any] | None = None
    curator: dict[str, Any] = field(default_factory=dict)
    error: Any = None

    @classmethod
    def from_trainer(cls, trainer, *, architecture: Mapping[str, Any],
                     settings: Mapping[str, Any] | None = None,
                     metrics: Mapping[str, Any] | None = None,
                     scores: Mapping[str, Any] | None = None,
                     curator: Mapping[str, Any] | None = None,
                     curve_points: int = 20) -> LearningResult:
        """Collect a (trained) :class:`~privot.learning.PrivateWassersteinTrainer`.

        ``curve_points`` checkpoints of the epsilon curve (each one a PLD computation of
        a fraction of a second).
        """
        steps, eps = trainer.epsilon_curve(points=curve_points)
        return cls(model=trainer.model, privacy=trainer.privacy_report(),
                   epsilon_steps=np.asarray(steps),
                   epsilon_curve=np.asarray(eps, dtype=float),
                   architecture=dict(architecture), settings=dict(settings or {}),
                   history=_history_arrays(trainer.history),
                   metrics=None if metrics is None else dict(metrics),
                   scores=None if scores is None else dict(scores),
                   curator=dict(curator or {}), error=getattr(trainer, "error", None))

    # -- public -------------------------------------------------------------------------

    @property
    def secure(self) -> bool:
        """False when a seeded generator drew batches and noise (not for publication)."""
        return bool(self.privacy.get("secure_randomness", False))

    @property
    def epsilon(self) -> float:
        """The epsilon the run states (``privacy["epsilon"]``, the PLD upper bound after
        the last step); the curve is :attr:`epsilon_curve`."""
        return float(self.privacy["epsilon"])

    @property
    def delta(self) -> float:
        """The delta of the guarantee."""
        return float(self.privacy.get("delta", 0.0))

    @property
    def cost(self) -> PrivacyCost:
        """``(epsilon, delta)`` of the whole training run."""
        return PrivacyCost(self.epsilon, self.delta)

    @property
    def relation(self) -> Neighbouring:
        """``REPLACE_ONE_IN_GROUP``: one record of one group replaced, sizes public."""
        return Neighbouring.REPLACE_ONE_IN_GROUP

    def release_dict(self) -> dict[str, Any]:
        """The publishable part (JSON-able): ``release.json`` without the file list."""
        body: dict[str, Any] = {
            "command": "learn",
            "privacy": dict(self.privacy),
            "epsilon_curve": {"steps": [int(s) for s in self.epsilon_steps],
                              "epsilon": [float(e) for e in self.epsilon_curve],
                              "accountant": "privot fixed-size PLD (upper bound)"},
            "model": dict(self.architecture),
            **self.settings,
            "secure": self.secure,
        }
        if self.error is not None:  # public: stated from the parameters before the charge
            body["error"] = self.error.to_dict()
        if not self.secure:
            body["publication"] = ("SEEDED run: batches and noise came from a seeded "
                                   "generator; reproducible and NOT fit for publication")
        return body

    def _training_summary(self) -> dict[str, Any] | None:
        h = self.history
        if not (h and len(h.get("step", ()))):
            return None
        return {"final_loss": float(h["loss"][-1]), "final_erm": float(h["erm"][-1]),
                "final_penalty": float(h["penalty"][-1]),
                "mean_clipped_fraction": float(np.mean(h["clipped_fraction"])),
                "nonfinite_examples": int(np.sum(h["nonfinite"])),
                "seconds": float(np.sum(h["seconds"]))}

    def curator_report(self) -> dict[str, Any]:
        """Computed from the private data without noise: **not private, never publish**:
        the caller's extras (counts, timings, warnings), a summary of the training steps
        and the fairness ``metrics`` when measured."""
        report: dict[str, Any] = dict(self.curator)
        training = self._training_summary()
        if training is not None:
            report["training"] = training
        if self.metrics is not None:
            report["metrics"] = dict(self.metrics)
        return report

    def __repr__(self) -> str:
        p = self.privacy
        return (f"LearningResult({self.architecture.get('model', '?')}, "
                f"{p.get('penalty')} alpha={p.get('alpha', float('nan')):g}, "
                f"steps={p.get('steps')}, eps={p.get('epsilon', float('nan')):.4g}, "
                f"delta={p.get('delta', float('nan')):.3g}, "
                f"sigma={p.get('noise_multiplier', float('nan')):.4g}"
                + ("" if self.secure else ", SEEDED") + ")")

    # -- figures ------------------------------------------------------------------------

    def _privacy_figure(self, ax: Any = None) -> Any:
        if ax is None:
            from privot._optional import require

            mfigure = require("matplotlib.figure", "plot")
            fig = mfigure.Figure(figsize=(6.0, 3.8), layout="constrained")
            ax = fig.subplots()
        else:
            fig = ax.figure
        p = self.privacy
        ax.plot(self.epsilon_steps, self.epsilon_curve, marker="o", ms=3,
                label="PLD (upper bound)")
        ax.axhline(float(p["epsilon"]), color="0.6", lw=0.8, ls="--")
        ax.set_xlabel("step")
        ax.set_ylabel("epsilon spent")
        ax.set_xlim(0, max(int(p["steps"]), 1))
        ax.set_ylim(bottom=0)
        ax.set_title(f"privacy along training: eps = {p['epsilon']:.3g}, "
                     f"delta = {p['delta']:.2g}, sigma = {p['noise_multiplier']:.3g}, "
                     f"q = {p['sampling_rate']:.3g}", fontsize=9)
        ax.legend(fontsize=8)
        return fig

    def plot(self, ax: Any = None, *, which: str = "privacy") -> Any:
        """One figure: ``which="privacy"`` (default, public: epsilon spent along the
        steps, ``privacy.png``), ``"scores"`` or ``"training"`` (**curator-only**: the
        score distributions per group and the losses on the private batches, drawn when
        the data are here). ``ax``: draw there (``"training"`` has two panels and takes
        none). Returns the matplotlib Figure; :meth:`figures` gives them all.

        Changed in issue 25: ``plot()`` returned the dict :meth:`figures` returns now.
        """
        if which not in FIGURES:
            raise InvalidParameterError("which", which, f"one of {tuple(FIGURES)}")
        if which == "privacy":
            return self._privacy_figure(ax)
        if which == "training" and ax is not None:
            raise InvalidParameterError("ax", ax, "None for which='training' (two panels)")
        figures = self._curator_figures(ax=ax, only=which)
        if not figures:
            raise InvalidParameterError(
                "which", which, "a figure this result has the data for ('scores' needs "
                "the scores, 'training' the step history)")
        return next(iter(figures.values()))

    def figures(self) -> dict[str, Any]:
        """All the figures by file name: ``privacy.png`` (public) and, when the data are
        here, ``curator-scores.png`` and ``curator-training.png`` (curator-only)."""
        return {**self._public_figures(), **self._curator_figures()}

    def _public_figures(self) -> dict[str, Any]:
        return {"privacy.png": self._privacy_figure()}

    def _curator_figures(self, *, ax: Any = None, only: str | None = None
                         ) -> dict[str, Any]:
        figures = {}
        if self.scores is not None and only in (None, "scores"):
            from privot.learning.plot import plot_score_distributions

            s = self.scores
            split = s.get("split")
            figures["curator-scores.png"] = plot_score_distributions(
                np.asarray(s["after"]), np.asarray(s["sensitive"]),
                labels=s.get("labels"),
                before=None if s.get("before") is None else np.asarray(s["before"]),
                y_true=None if s.get("y_true") is None else np.asarray(s["y_true"]),
                title="score distributions per group (curator only)"
                      + (f", {split} split" if split else ""), ax=ax)
        if self.history and len(self.history.get("step", ())) and only in (None,
                                                                            "training"):
            from privot.learning.plot import plot_training

            h = self.history
            figures["curator-training.png"] = plot_training(
                h["step"], h["loss"], erm=h["erm"], penalty=h["penalty"],
                epsilon_steps=self.epsilon_steps, epsilon=self.epsilon_curve,
                title="training loss on the private batches (curator only)")
        return figures

    # -- files --------------------------------------------------------------------------

    def save(self, folder: str | Path) -> dict[str, list[str]]:
        """Write the run into ``folder`` (created if needed), as ``privot learn`` does.

        Returns
        -------
        dict
            ``{"publishable": [...], "curator": [...]}``: the file names written.
        """
        from privot.learning.torch_backend import torch

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        public, curator = [], []
        # The publishable files first: nothing the curator's data decide (a figure of
        # odd scores, say) can then stop the release after the budget was charged.
        torch.save({k: v.detach().cpu() for k, v in self.model.state_dict().items()},
                   folder / "model.pt")
        public.append("model.pt")
        for name, fig in self._public_figures().items():
            fig.savefig(folder / name, dpi=110, format="png")
            public.append(name)
        public.append("release.json")
        write_release(folder, self.to_dict(), public)
        for name, fig in self._curator_figures().items():
            fig.savefig(folder / name, dpi=110, format="png")
            curator.append(name)
        if self.metrics is not None:
            curator.append(write_curator_report(folder, self.metrics, None,
                                                name="metrics.json",
                                                notice=_CURATOR_NOTICE))
        report = self.curator_report()
        report.pop("metrics", None)  # in curator-metrics.json
        curator.append(CURATOR_REPORT)
        write_curator_report(folder, report, curator, notice=_CURATOR_NOTICE)
        return {"publishable": sorted(public), "curator": sorted(curator)}
