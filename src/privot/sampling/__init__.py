"""Private sampling: one eps-local-DP sample of a user's distribution (paper 003).

A user holds a distribution ``mu`` over ``k`` public points and releases one sample of
``M[mu]``, a distribution over ``k_v`` public output points that lies in the LDP
polytope ``Q_{m, eps}`` (Def. 2.2), which makes the sample eps-LDP (Prop. 3.2).

Modules (each with one job):

* :mod:`~privot.sampling.mechanism` -- the one API: :class:`WassersteinProjection`
  (WPM), :class:`KLProjection` (KPM), :class:`GenreKLProjection`,
  :class:`ExponentialMechanism`, :class:`RandomizedResponse`, :func:`make_mechanism`;
* :mod:`~privot.sampling.polytope` -- the polytope and its exact KL projection;
* :mod:`~privot.sampling.wpm_exact`, :mod:`~privot.sampling.wpm_entropic` -- the WPM
  solvers (network simplex / HiGHS; Algorithm 1 in the log domain, batched);
* :mod:`~privot.sampling.base_measure` -- uniform, optimal (Thm 3.4-3.5, certified) and
  sphere (Prop. H.1) base measures;
* :mod:`~privot.sampling.baselines` -- KPM, KPM per genre, exponential mechanism, k-RR;
* :mod:`~privot.sampling.device` -- exact privacy on the device (certified integer
  polytope, exact draw from the CSPRNG);
* :mod:`~privot.sampling.cost` -- cost matrices from public points;
* :mod:`~privot.sampling.engine_step` -- each user's distribution over a public grid, on
  DuckDB or Spark;
* :mod:`~privot.sampling.params` -- :class:`SampleParams`, the public choices of a
  population sample (mechanism, variant, batch size, channel, bits);
* :mod:`~privot.sampling.population` -- one report per user of a whole table (direct or
  linear variant), :func:`sample_population`;
* :mod:`~privot.sampling.result` -- :class:`PopulationSample`, its result, with ``save``
  (the files of ``privot sample``) and ``plot``;
* :mod:`~privot.sampling.estimators` -- the server's estimators (EM through the public
  channel, the histogram), post-processing of the released reports;
* :mod:`~privot.sampling.plot` -- the picture ``sample.png``;
* :mod:`~privot.sampling.error` -- the error statement of a release, from its public
  parameters (:func:`sample_error`: worst-case per-user :math:`W_1`; issue 28).
"""

from privot.sampling.base_measure import (
    BaseMeasureResult,
    WorstCaseCost,
    optimal_base_measure,
    sphere_base_measure,
    uniform_base_measure,
)
from privot.sampling.cost import cost_matrix
from privot.sampling.device import DeviceSample, private_sample
from privot.sampling.engine_step import UserCellCounts, user_cell_counts
from privot.sampling.error import dirac_w1, sample_error
from privot.sampling.estimators import (
    EstimateIntervals,
    estimate_intervals,
    estimate_linear_stopped,
    stopping_iterations,
)
from privot.sampling.mechanism import (
    MECHANISMS,
    ExponentialMechanism,
    GenreKLProjection,
    KLProjection,
    RandomizedResponse,
    SamplingMechanism,
    WassersteinProjection,
    make_mechanism,
)
from privot.sampling.params import SampleParams
from privot.sampling.plot import plot_population_sample
from privot.sampling.polytope import in_polytope, kl_projection, polytope_bounds
from privot.sampling.population import (
    PopulationSample,
    estimate_direct,
    estimate_linear,
    estimate_population,
    linear_law,
    sample_population,
)
from privot.sampling.wpm_entropic import wpm_entropic
from privot.sampling.wpm_exact import wpm_exact

__all__ = [
    "MECHANISMS",
    "BaseMeasureResult",
    "DeviceSample",
    "EstimateIntervals",
    "ExponentialMechanism",
    "GenreKLProjection",
    "KLProjection",
    "PopulationSample",
    "RandomizedResponse",
    "SampleParams",
    "SamplingMechanism",
    "UserCellCounts",
    "WassersteinProjection",
    "WorstCaseCost",
    "cost_matrix",
    "dirac_w1",
    "estimate_direct",
    "estimate_intervals",
    "estimate_linear",
    "estimate_linear_stopped",
    "estimate_population",
    "in_polytope",
    "kl_projection",
    "linear_law",
    "make_mechanism",
    "optimal_base_measure",
    "plot_population_sample",
    "polytope_bounds",
    "private_sample",
    "sample_error",
    "sample_population",
    "sphere_base_measure",
    "stopping_iterations",
    "uniform_base_measure",
    "user_cell_counts",
    "wpm_entropic",
    "wpm_exact",
]
