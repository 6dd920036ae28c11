r""":class:`HeatmapParams`: the public choices of one private heatmap, validated.

The parameter object of :func:`~privot.heatmaps.private_heatmap` (privot's one
parameter style, :mod:`privot._params`): the grid, the budget, the method and its
tuning, the filter width. What is not a choice of the release stays an argument of the
call: the data and its columns (``user``, ``x``, ``y``), the accountant, the
randomness, the progress bar and the memory limit.

.. code-block:: python

    params = HeatmapParams(grid=Grid((0, 1, 0, 1), 256), epsilon=1.0)
    private_heatmap(points, params, x="x", y="y")
    private_heatmap(points, params, epsilon=0.5)     # a field replaced, validated again

Privacy
-------
Every field is public by construction: a choice of the caller, never read from the
data. :meth:`HeatmapParams.to_dict` is what a release may record of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from privot._params import ReleaseParams
from privot._validation import check_epsilon, check_int, check_nonnegative, check_positive
from privot.errors import InvalidParameterError
from privot.grid import Grid
from privot.heatmaps.measure import DEFAULT_GAMMA, DEFAULT_W
from privot.heatmaps.reconstruct import FULL_LP_MAX_RESOLUTION, LP_FORMS

__all__ = ["DEFAULT_SIGMA", "METHODS", "HeatmapParams"]

#: The heatmap mechanisms: paper 002's Algorithms 1+2, and the baselines of its Sec. 4.
METHODS = ("pyramid", "laplace", "threshold")
#: Default Gaussian filter width, in cells (a display choice; any value is post-processing).
DEFAULT_SIGMA = 2.0


@dataclass(frozen=True, repr=False)
class HeatmapParams(ReleaseParams):
    r"""The public parameters of a private heatmap (paper 002), checked when built.

    Parameters
    ----------
    grid : Grid
        Public grid: bounds and resolution :math:`\Delta = 2^\ell` (never derived from
        the data).
    epsilon : float
        Total budget > 0 (pure DP).
    method : {"pyramid", "laplace", "threshold"}, default "pyramid"
        Algorithms 1+2 of the paper, or the baselines of its Sec. 4.
    w : int, default 20
        Cells kept per level (pyramid); sets :math:`q = \lfloor\log_2\sqrt w\rfloor`.
    gamma : float, default 1/sqrt(2)
        Decay of the per-level budgets (pyramid), > 0.
    sigma : float, default 2.0
        Gaussian filter width in cells (>= 0) of the rendered heatmap.
    threshold : float, default 1.0
        ``method="threshold"``: the percentage of cells kept, in (0, 100].
    lp : {"compact", "full"}, default "compact"
        RECONSTRUCT's LP; ``"full"`` only for :math:`\Delta \le 64` with the pyramid.

    Raises
    ------
    InvalidParameterError
        A field outside its range, naming it, its value and what is allowed (checked in
        the order method, grid, epsilon, w, gamma, sigma, threshold, lp).
    """

    grid: Grid
    epsilon: float
    method: str = "pyramid"
    w: int = DEFAULT_W
    gamma: float = DEFAULT_GAMMA
    sigma: float = DEFAULT_SIGMA
    threshold: float = 1.0
    lp: str = "compact"

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise InvalidParameterError("method", self.method, f"one of {METHODS}")
        if not isinstance(self.grid, Grid):
            raise InvalidParameterError("grid", self.grid, "a privot.heatmaps.Grid")
        # stored as checked (float / int): the release records these values
        self._set("epsilon", check_epsilon(self.epsilon))
        self._set("w", check_int(self.w, "w", minimum=1))
        self._set("gamma", check_positive(self.gamma, "gamma"))
        self._set("sigma", check_nonnegative(self.sigma, "sigma"))
        top = check_positive(self.threshold, "threshold")
        if top > 100:
            raise InvalidParameterError("threshold", self.threshold,
                                        "a percentage in (0, 100]")
        self._set("threshold", top)
        if self.lp not in LP_FORMS:
            raise InvalidParameterError("lp", self.lp, f"one of {LP_FORMS}")
        if (self.method == "pyramid" and self.lp == "full"
                and self.grid.resolution > FULL_LP_MAX_RESOLUTION):
            raise InvalidParameterError(
                "lp", self.lp, f"'compact' for resolution {self.grid.resolution}; the full "
                f"LP is only allowed up to {FULL_LP_MAX_RESOLUTION}")

    def _set(self, name: str, value: object) -> None:
        object.__setattr__(self, name, value)  # frozen: normalised once, when built

    def to_dict(self) -> dict[str, Any]:
        """The fields as a JSON-ready dictionary; the grid as its public bounds,
        resolution and aspect (as in ``release.json``)."""
        out = super().to_dict()
        g = self.grid
        out["grid"] = {"bounds": list(g.bounds), "resolution": g.resolution,
                       "aspect": g.aspect}
        return out

    def __repr__(self) -> str:
        g = self.grid
        b = ", ".join(f"{v:g}" for v in g.bounds)
        tuning = {"pyramid": f"w={self.w}, gamma={self.gamma:.4g}, lp={self.lp}",
                  "laplace": "", "threshold": f"threshold={self.threshold:g}%"}[self.method]
        return (f"HeatmapParams({self.method}, epsilon={self.epsilon:g}, "
                f"grid={g.resolution}x{g.resolution} over ({b}), "
                + (f"{tuning}, " if tuning else "") + f"sigma={self.sigma:g})")
