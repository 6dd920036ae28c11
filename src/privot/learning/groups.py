r"""The private data of a run, split into groups of *public* sizes, and the pairs compared.

Paper 004 works on partitioned datasets :math:`\mathcal D_1^{n_1}\times\dots\times
\mathcal D_k^{n_k}` with the relation :math:`\sim_k` of Def. 2.1 (replace one record
inside one group; the sizes never change). The sizes :math:`n_j` are therefore public
(Remark 6.2): privot says so in every report.

* :func:`fairness_groups` -- statistical parity (Eq. 5: the two groups of the sensitive
  attribute, one pair) or equality of odds (Eq. 6: the ``2R`` groups (attribute,
  label), ``R`` pairs of weight ``1/R``);
* :func:`matching_groups` -- the free-form case (data generation, representation
  learning, domain adaptation): a private sample through the model against a reference
  that is public or private, through the model or not.

Privacy
-------
Unit: one record (row) of one group. Relation: :math:`\sim_k` (replace-one within a
group, group sizes public). No release here; the sensitivity of the whole objective is
computed from these groups in :mod:`privot.learning.sensitivity`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from privot.errors import InvalidDataError, InvalidParameterError
from privot.learning.torch_backend import torch

__all__ = ["CRITERIA", "Group", "Groups", "Pair", "fairness_groups", "matching_groups"]

CRITERIA = ("sp", "eo")


@dataclass(frozen=True)
class Group:
    """One group of records.

    Attributes
    ----------
    name : str
    x : Tensor, shape (n, ...)
        Model inputs (``through_model``) or the points themselves (a reference).
    y : Tensor or None, shape (n, ...)
        Targets of the ERM loss (None: no ERM term for this group).
    private : bool
        Whether replacing one of its records must be hidden.
    through_model : bool
        Whether its points are ``score_fn(model(x))`` (depend on the parameters) or
        ``x`` itself (a fixed reference, Jacobian zero).
    """

    name: str
    x: object
    y: object | None
    private: bool = True
    through_model: bool = True

    @property
    def size(self) -> int:
        """``n_j``: public."""
        return int(self.x.shape[0])


@dataclass(frozen=True)
class Pair:
    """A Wasserstein term ``weight * SW_2^2(group a, group b)`` of the objective."""

    a: int
    b: int
    weight: float


@dataclass(frozen=True)
class Groups:
    """Groups and the pairs of the penalty.

    Attributes
    ----------
    groups : tuple of Group
    pairs : tuple of Pair
    criterion : str
        ``"sp"``, ``"eo"`` or ``"match"``.
    """

    groups: tuple
    pairs: tuple
    criterion: str

    @property
    def sizes(self) -> dict[str, int]:
        """Group sizes by name (public under the relation, Remark 6.2)."""
        return {g.name: g.size for g in self.groups}

    def __repr__(self) -> str:
        sizes = ", ".join(f"{k}: {v}" for k, v in self.sizes.items())
        return f"Groups({self.criterion}; sizes {{{sizes}}}; {len(self.pairs)} pair(s))"


def _tensor(values, name: str, dtype=None):
    if isinstance(values, torch.Tensor):
        t = values
    else:
        try:
            t = torch.from_numpy(np.array(values))  # a copy: read-only arrays are fine
        except (TypeError, ValueError) as exc:
            raise InvalidParameterError(name, type(values).__name__,
                                        "an array or tensor") from exc
    if dtype is not None:
        t = t.to(dtype)
    if t.ndim == 0 or t.shape[0] == 0:
        raise InvalidDataError(f"{name} is empty: at least one row is needed")
    if t.is_floating_point() and not bool(torch.isfinite(t).all()):
        raise InvalidDataError(f"{name} has non-finite values (NaN or inf)")
    return t


def _labels(values, name: str, allowed: tuple, n: int) -> np.ndarray:
    arr = np.asarray(values.detach().cpu() if isinstance(values, torch.Tensor) else values)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise InvalidDataError(f"{name} must be one value per row ({n}), got shape "
                               f"{arr.shape}")
    found = sorted(set(arr.tolist()))
    extra = [v for v in found if v not in allowed]
    if extra:
        raise InvalidParameterError(name, f"values {found}",
                                    f"exactly the stated classes {list(allowed)}")
    missing = [v for v in allowed if v not in found]
    if missing:
        raise InvalidParameterError(name, f"values {found}",
                                    f"every stated class {list(allowed)} present "
                                    f"({missing} missing)")
    return arr


def fairness_groups(x: ArrayLike | torch.Tensor, y: ArrayLike | torch.Tensor | None,
                    sensitive: ArrayLike, *, criterion: str = "sp",
                    sensitive_values: tuple = (0, 1), labels: tuple = (0, 1),
                    dtype: torch.dtype | None = None) -> Groups:
    r"""Groups for the statistical-parity (Eq. 5) or equality-of-odds (Eq. 6) penalty.

    Parameters
    ----------
    x : array or Tensor, shape (n, p)
        Features.
    y : array or Tensor, shape (n,) or (n, k), or None
        Targets of the ERM loss; None for an unsupervised loss on ``x`` itself (e.g. an
        autoencoder's reconstruction, paper App. B.3).
    sensitive : array, shape (n,)
        The sensitive attribute, with exactly the values ``sensitive_values``.
    criterion : {"sp", "eo"}
        ``"sp"``: groups ``A = a`` (one pair, weight 1). ``"eo"``: groups
        ``(A = a, Y = k)`` for every ``k`` in ``labels`` (``R = len(labels)`` pairs of
        weight ``1/R``); needs ``y`` with exactly the values ``labels``.
    sensitive_values : tuple of two values, default (0, 1)
    labels : tuple, default (0, 1)
    dtype : torch dtype, optional
        Of ``x`` (default: torch's default dtype).

    Returns
    -------
    Groups
        Group sizes are public (Remark 6.2).
    """
    if criterion not in CRITERIA:
        raise InvalidParameterError("criterion", criterion, f"one of {CRITERIA}")
    if len(sensitive_values) != 2:
        raise InvalidParameterError("sensitive_values", sensitive_values,
                                    "exactly two values (the paper's penalties compare two "
                                    "groups)")
    xt = _tensor(x, "x", dtype or torch.get_default_dtype())
    n = xt.shape[0]
    yt = None if y is None else _tensor(y, "y")
    if yt is not None and yt.shape[0] != n:
        raise InvalidDataError(f"x has {n} rows but y has {yt.shape[0]}")
    a = _labels(sensitive, "sensitive", tuple(sensitive_values), n)
    targets = xt if yt is None else yt
    groups, pairs = [], []
    if criterion == "sp":
        for v in sensitive_values:
            rows = torch.as_tensor(np.flatnonzero(a == v))
            groups.append(Group(f"A={v}", xt[rows], targets[rows]))
        pairs.append(Pair(0, 1, 1.0))
    else:
        if yt is None:
            raise InvalidParameterError("y", None, "labels for the equality-of-odds "
                                        "penalty (it compares groups within each label)")
        lab = _labels(yt, "y", tuple(labels), n)
        weight = 1.0 / len(labels)
        for k in labels:
            first = len(groups)
            for v in sensitive_values:
                rows = torch.as_tensor(np.flatnonzero((a == v) & (lab == k)))
                if rows.numel() == 0:
                    raise InvalidDataError(f"the group A={v}, Y={k} is empty: equality of "
                                           "odds needs every (attribute, label) pair")
                groups.append(Group(f"A={v},Y={k}", xt[rows], targets[rows]))
            pairs.append(Pair(first, first + 1, weight))
    return Groups(tuple(groups), tuple(pairs), criterion)


def matching_groups(x: ArrayLike | torch.Tensor, reference: ArrayLike | torch.Tensor, *,
                    y: ArrayLike | torch.Tensor | None = None, private: bool = True,
                    reference_private: bool = False,
                    reference_through_model: bool = False,
                    dtype: torch.dtype | None = None) -> Groups:
    r"""The free-form case: ``SW_2^2(g(x), h(reference))`` (Thm 4.1 / A.1).

    Parameters
    ----------
    x : array or Tensor, shape (n, p)
        Passed through the model (``g_theta``).
    reference : array or Tensor, shape (m, d) or (m, p)
        The target sample: points in the score space (``h = identity``, data generation
        and representation learning) or, with ``reference_through_model``, inputs of the
        same model (``h = g``, domain adaptation).
    y : optional
        ERM targets for ``x`` (None: no ERM term; use ``alpha = 1``).
    private : bool, default True
        Whether ``x`` is private.
    reference_private : bool, default False
        Whether the reference is private too (relation ``~2``; else ``~1``).
    reference_through_model : bool, default False

    Returns
    -------
    Groups
    """
    dtype = dtype or torch.get_default_dtype()
    xt = _tensor(x, "x", dtype)
    rt = _tensor(reference, "reference", dtype)
    yt = None if y is None else _tensor(y, "y")
    if yt is not None and yt.shape[0] != xt.shape[0]:
        raise InvalidDataError(f"x has {xt.shape[0]} rows but y has {yt.shape[0]}")
    if not private and not reference_private:
        raise InvalidParameterError("private, reference_private", (private, reference_private),
                                    "at least one private side (else no DP is needed)")
    groups = (Group("x", xt, yt, bool(private), True),
              Group("reference", rt, None, bool(reference_private),
                    bool(reference_through_model)))
    return Groups(groups, (Pair(0, 1, 1.0),), "match")
