"""Loaders for the real data files kept in the shared data folder (used by path).

The files are never copied into the project; see :mod:`privot.datasets._paths` for
how the folder is found (``data_dir`` -> ``PRIVOT_DATA_DIR`` -> ``shared/data``).
pandas is an optional dependency (extra ``datasets``) imported when a loader runs.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Literal

import numpy as np

from privot._optional import require
from privot._validation import check_int
from privot.datasets._paths import data_file
from privot.datasets.synthetic import FairLearningData
from privot.errors import InvalidDataError, InvalidParameterError

if TYPE_CHECKING:  # pragma: no cover - typing only
    import pandas as pd

__all__ = [
    "GOWALLA_NYC_COLUMNS",
    "UNISS_IMAGE_WIDTH",
    "UNISS_IMAGE_HEIGHT",
    "load_gowalla_nyc",
    "load_uniss_fixations",
    "load_adult",
    "ADULT_NUMERIC_BOUNDS",
    "ADULT_CATEGORIES",
    "load_adult_fairness",
]

PathArg = str | os.PathLike[str] | None

#: Column names given to the header-less Gowalla file.
GOWALLA_NYC_COLUMNS = ("user_id", "time", "latitude", "longitude", "location_id")
#: Width in pixels at which the Uniss-FGD stimuli were shown (x runs over [0, 562)).
UNISS_IMAGE_WIDTH = 562
#: Height in pixels at which the Uniss-FGD stimuli were shown (y runs over [0, 762)).
UNISS_IMAGE_HEIGHT = 762


def _pandas():
    return require("pandas", "datasets")


def load_gowalla_nyc(data_dir: PathArg = None, *, nrows: int | None = None) -> pd.DataFrame:
    """Gowalla location check-ins in New York City.

    One row per check-in. The full file has 138,957 check-ins by 7,115 users at 21,509
    locations, latitude 40.4844..40.9176, longitude -74.2586..-73.7013, April 2009 to
    October 2010 (6 rows are exact duplicates, as in the source; they are kept).

    Parameters
    ----------
    data_dir : str or path-like, optional
        Folder holding ``gowalla_nyc/checkins.tsv``; ``None`` resolves it as
        described in :func:`privot.datasets.resolve_data_dir`.
    nrows : int, optional
        Read only the first ``nrows`` rows (>= 1); ``None`` reads all.

    Returns
    -------
    pandas.DataFrame
        Columns ``user_id`` (int64), ``time`` (datetime64, UTC), ``latitude``
        (float64, degrees), ``longitude`` (float64, degrees), ``location_id`` (int64).

    Raises
    ------
    DataNotFoundError
        If the data folder or the file cannot be found.
    MissingExtraError
        If pandas is not installed (extra ``datasets``).

    Notes
    -----
    Provenance: SNAP ``loc-gowalla_totalCheckins``, filtered to the NYC bounding box.
    The file is tab-separated without header: user id, check-in time (UTC,
    ISO-8601), latitude, longitude, location id.

    Terms: research use; cite the paper below.

    Citation: E. Cho, S. A. Myers, J. Leskovec, "Friendship and Mobility: User
    Movement in Location-Based Social Networks", KDD 2011.

    Privacy: each user contributes many rows (median 5, max 1,794), so the unit of
    privacy for this data is a *user* (group rows by ``user_id``), not a row.
    """
    if nrows is not None:
        nrows = check_int(nrows, "nrows", minimum=1)
    pd = _pandas()
    path = data_file("gowalla_nyc/checkins.tsv", data_dir)
    df = pd.read_csv(
        path, sep="\t", header=None, names=list(GOWALLA_NYC_COLUMNS), nrows=nrows,
        dtype={"user_id": "int64", "time": str, "latitude": "float64",
               "longitude": "float64", "location_id": "int64"},
    )
    df["time"] = pd.to_datetime(df["time"], format="%Y-%m-%dT%H:%M:%SZ", utc=True)
    return df


def load_uniss_fixations(data_dir: PathArg = None, *,
                         with_stimuli: bool = False) -> pd.DataFrame:
    """Eye-tracking fixations of the Uniss-FGD data set.

    One row per fixation: 19,902 fixations of 20 viewers on 119 face images shown at
    ``562 x 762`` pixels (:data:`UNISS_IMAGE_WIDTH` x :data:`UNISS_IMAGE_HEIGHT`).

    Parameters
    ----------
    data_dir : str or path-like, optional
        Folder holding ``uniss_fgd/fixations.csv`` (and ``StimuliMap.csv``); ``None``
        resolves it as described in :func:`privot.datasets.resolve_data_dir`.
    with_stimuli : bool, default False
        Also join ``uniss_fgd/StimuliMap.csv`` on ``image_id`` and add a column
        ``file_name`` with the KDEF image file name (the images are not included).

    Returns
    -------
    pandas.DataFrame
        Columns ``image_id`` (int64), ``participant`` (string, zero-padded id such as
        ``"00"``), ``gender`` (string, ``"M"``/``"F"``), ``fixation_index`` (int64,
        1-based order within a viewing), ``x``, ``y`` (int64, pixels, origin top-left),
        ``duration_ms`` (int64), ``media_width``, ``media_height`` (int64, 562 and
        762), and ``file_name`` (string) when ``with_stimuli``.

    Raises
    ------
    DataNotFoundError
        If the data folder or a file cannot be found.
    InvalidDataError
        If an ``image_id`` has no entry in ``StimuliMap.csv`` (with ``with_stimuli``).
    MissingExtraError
        If pandas is not installed (extra ``datasets``).

    Notes
    -----
    Provenance and citation: Uniss-FGD, P. Ruiu et al., IEEE Access 12, 2024. Terms:
    research use as stated by the data set's publication; cite it.

    Privacy: a viewer contributes many fixations; the natural unit of privacy is a
    ``participant`` (or a participant-image viewing), not a row.
    """
    pd = _pandas()
    path = data_file("uniss_fgd/fixations.csv", data_dir)
    df = pd.read_csv(
        path,
        dtype={"image_id": "int64", "participant": "string", "gender": "string",
               "fixation_index": "int64", "x": "int64", "y": "int64",
               "duration_ms": "int64", "media_width": "int64", "media_height": "int64"},
    )
    if with_stimuli:
        stim = pd.read_csv(data_file("uniss_fgd/StimuliMap.csv", data_dir),
                           skipinitialspace=True, dtype={"ID": "int64", "FileName": "string"})
        stim = stim.rename(columns={"ID": "image_id", "FileName": "file_name"})
        df = df.merge(stim, on="image_id", how="left", validate="many_to_one")
        missing = df["file_name"].isna()
        if bool(missing.any()):
            ids = sorted(set(df.loc[missing, "image_id"].tolist()))[:5]
            raise InvalidDataError(
                f"StimuliMap.csv has no file name for image_id(s) {ids}; the two files "
                "do not belong together")
    return df


def _adult_columns(pd, data_dir: PathArg) -> list[str]:
    text = data_file("adult/columns.txt", data_dir).read_text(encoding="utf-8")
    return [c.strip() for c in text.strip().split(",")]


def _read_adult_file(pd, name: str, columns: list[str], data_dir: PathArg):
    path = data_file(f"adult/{name}", data_dir)
    # "|" starts the comment line found at the top of some copies of adult.test.
    df = pd.read_csv(path, header=None, names=columns, sep=",", skipinitialspace=True,
                     na_values=["?"], comment="|", skip_blank_lines=True)
    # Test labels end with "." (">50K."): normalise to the training spelling.
    df["label"] = df["label"].str.strip().str.rstrip(".")
    bad = ~df["label"].isin(["<=50K", ">50K"])
    if bool(bad.any()):
        raise InvalidDataError(
            f"adult/{name} has {int(bad.sum())} label(s) other than '<=50K'/'>50K', "
            f"e.g. {df.loc[bad, 'label'].iloc[0]!r}")
    df["income"] = (df["label"] == ">50K").astype("int8")
    return df


def load_adult(data_dir: PathArg = None, *,
               split: Literal["train", "test", "all"] = "train") -> pd.DataFrame:
    """UCI Adult (census income).

    Parameters
    ----------
    data_dir : str or path-like, optional
        Folder holding ``adult/adult.data``, ``adult/adult.test`` and
        ``adult/columns.txt``; ``None`` resolves it as described in
        :func:`privot.datasets.resolve_data_dir`.
    split : {"train", "test", "all"}, default "train"
        ``"train"``: ``adult.data`` (32,561 rows); ``"test"``: ``adult.test`` (16,281
        rows); ``"all"``: both, train first (48,842 rows, index 0..48841).

    Returns
    -------
    pandas.DataFrame
        The 15 columns named in ``columns.txt`` (``age``, ``workclass``, ``fnlwgt``,
        ``education``, ``education-num``, ``marital-status``, ``occupation``,
        ``relationship``, ``race``, ``sex``, ``capital-gain``, ``capital-loss``,
        ``hours-per-week``, ``native-country``, ``label``) plus ``income`` (int8:
        1 if ``label == ">50K"``, else 0). Missing values (``"?"``) are NaN; the test
        file's labels (``"<=50K."``, ``">50K."``) are normalised to ``"<=50K"`` and
        ``">50K"``.

    Raises
    ------
    InvalidParameterError
        If ``split`` is not one of the three values.
    DataNotFoundError
        If the data folder or a file cannot be found.
    MissingExtraError
        If pandas is not installed (extra ``datasets``).

    Notes
    -----
    Provenance: UCI Machine Learning Repository, extraction from the 1994 US Census
    by Barry Becker. Separator ``", "``, missing values ``"?"``.

    Licence: CC BY 4.0.

    Citation: B. Becker and R. Kohavi, "Adult", UCI Machine Learning Repository,
    1996, https://doi.org/10.24432/C5XW20.

    Privacy: one row is one person; ``sex`` and ``race`` are the usual sensitive
    attributes in fairness experiments.
    """
    if split not in ("train", "test", "all"):
        raise InvalidParameterError("split", split, "one of 'train', 'test', 'all'")
    pd = _pandas()
    columns = _adult_columns(pd, data_dir)
    if split == "train":
        return _read_adult_file(pd, "adult.data", columns, data_dir)
    if split == "test":
        return _read_adult_file(pd, "adult.test", columns, data_dir)
    parts = [_read_adult_file(pd, name, columns, data_dir)
             for name in ("adult.data", "adult.test")]
    return pd.concat(parts, ignore_index=True)


# ----------------------------------------------------------------- Adult for fair learning

#: Public bounds of Adult's numeric columns, fixed without looking at the data: age
#: > 16 and hours-per-week > 0 are the extraction conditions in ``adult.names``; 90
#: (age), 99 (hours) and 99999 (capital gain) are the Current Population Survey's
#: top-codes; education-num codes the 16 education levels listed in ``adult.names``.
#: Capital loss has no published top-code: it is given the capital-gain bound.
ADULT_NUMERIC_BOUNDS: dict[str, tuple[float, float]] = {
    "age": (17.0, 90.0),
    "education-num": (1.0, 16.0),
    "capital-gain": (0.0, 99999.0),
    "capital-loss": (0.0, 99999.0),
    "hours-per-week": (1.0, 99.0),
}
#: Numeric columns scaled as ``log1p(v) / log1p(upper bound)`` (heavy-tailed, mostly 0).
_ADULT_LOG_COLUMNS = frozenset({"capital-gain", "capital-loss"})

#: Public category lists of Adult's categorical columns, copied from ``adult.names`` (in
#: its order). ``education`` is left out of the features: it is a one-to-one relabelling
#: of ``education-num``.
ADULT_CATEGORIES: dict[str, tuple[str, ...]] = {
    "workclass": ("Private", "Self-emp-not-inc", "Self-emp-inc", "Federal-gov",
                  "Local-gov", "State-gov", "Without-pay", "Never-worked"),
    "marital-status": ("Married-civ-spouse", "Divorced", "Never-married", "Separated",
                       "Widowed", "Married-spouse-absent", "Married-AF-spouse"),
    "occupation": ("Tech-support", "Craft-repair", "Other-service", "Sales",
                   "Exec-managerial", "Prof-specialty", "Handlers-cleaners",
                   "Machine-op-inspct", "Adm-clerical", "Farming-fishing",
                   "Transport-moving", "Priv-house-serv", "Protective-serv", "Armed-Forces"),
    "relationship": ("Wife", "Own-child", "Husband", "Not-in-family", "Other-relative",
                     "Unmarried"),
    "race": ("White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"),
    "sex": ("Female", "Male"),
    "native-country": (
        "United-States", "Cambodia", "England", "Puerto-Rico", "Canada", "Germany",
        "Outlying-US(Guam-USVI-etc)", "India", "Japan", "Greece", "South", "China", "Cuba",
        "Iran", "Honduras", "Philippines", "Italy", "Poland", "Jamaica", "Vietnam",
        "Mexico", "Portugal", "Ireland", "France", "Dominican-Republic", "Laos", "Ecuador",
        "Taiwan", "Haiti", "Columbia", "Hungary", "Guatemala", "Nicaragua", "Scotland",
        "Thailand", "Yugoslavia", "El-Salvador", "Trinadad&Tobago", "Peru", "Hong",
        "Holand-Netherlands"),
}


def _scaled(values, lower: float, upper: float, *, log: bool):
    """Clip into ``[lower, upper]`` and map to ``[0, 1]``; NaN -> 0 (the lower end)."""
    v = np.clip(np.asarray(values, dtype=np.float64), lower, upper)
    if log:
        out = np.log1p(v - lower) / np.log1p(upper - lower)
    else:
        out = (v - lower) / (upper - lower)
    return np.nan_to_num(out, nan=0.0)


def _one_hot(column, categories: tuple[str, ...]):
    """One column per public category; a value not in the list (or NaN) is all zeros."""
    values = column.astype("string").fillna("").str.strip().to_numpy(dtype=object)
    return np.stack([values == c for c in categories], axis=1).astype(np.float32)


def load_adult_fairness(data_dir: PathArg = None, *,
                        split: Literal["train", "test", "all"] = "train",
                        include_sensitive: bool = False) -> FairLearningData:
    """UCI Adult encoded for fair learning: income label, sex as sensitive attribute.

    Parameters
    ----------
    data_dir : str or path-like, optional
        Folder holding ``adult/``; ``None`` resolves it as described in
        :func:`privot.datasets.resolve_data_dir`.
    split : {"train", "test", "all"}, default "train"
        As in :func:`load_adult`: 32,561, 16,281 or 48,842 rows.
    include_sensitive : bool, default False
        Also put ``sex`` in ``x`` (two one-hot columns ``sex=Female``, ``sex=Male``).
        By default the sensitive attribute is only in ``sensitive``.

    Returns
    -------
    FairLearningData
        ``y`` (int64): 1 if income is ``">50K"`` (``">50K."`` in ``adult.test``);
        positive fraction 24.08 % (train), 23.62 % (test), 23.93 % (all).
        ``sensitive`` (int64): **1 = Male, 0 = Female** (train 21,790 male / 10,771
        female). ``x`` (float32, all values in ``[0, 1]``), in this order:

        - ``age``, ``education-num``, ``hours-per-week``: clipped into
          :data:`ADULT_NUMERIC_BOUNDS` and min-max scaled;
        - ``capital-gain``, ``capital-loss``: clipped into ``[0, 99999]`` and scaled
          as ``log1p(v) / log1p(99999)``;
        - one-hot columns ``"<column>=<category>"`` over the public lists of
          :data:`ADULT_CATEGORIES` for ``workclass``, ``marital-status``,
          ``occupation``, ``relationship``, ``race``, ``native-country`` (81 columns),
          then ``sex`` with ``include_sensitive``.

        86 features (88 with ``include_sensitive``). ``fnlwgt`` (a census sampling
        weight) and ``education`` (a relabelling of ``education-num``) are dropped.
        Rows with missing values (``"?"``) are kept: their one-hot block is all zeros.
        ``name`` is ``"adult-<split>"``.

    Raises
    ------
    InvalidParameterError
        If ``split`` is not one of the three values.
    DataNotFoundError
        If the data folder or a file cannot be found.
    MissingExtraError
        If pandas is not installed (extra ``datasets``).

    Notes
    -----
    Source, licence and citation as in :func:`load_adult`: UCI Machine Learning
    Repository, CC BY 4.0; B. Becker and R. Kohavi, "Adult", 1996,
    https://doi.org/10.24432/C5XW20. Paper 004 cites Adult as the kind of bias its
    synthetic App. B model reproduces; it does not train on it.

    Privacy
    -------
    Unit: one row (one person); relation: replace one row; ``n`` is public. The
    encoding is data-independent: each row's features depend on that row and on
    public constants only (bounds, category lists), never on statistics of the data,
    so it adds no privacy cost and a per-row sensitivity bound holds after it. The
    fractions and counts quoted above are of the public UCI release, for orientation;
    do not re-derive them from private data. Paper 004 fixes :math:`\\delta = 0.1/n`
    in its experiments (a common, stricter alternative is :math:`\\delta = 1/n^2`).
    """
    if not isinstance(include_sensitive, bool):
        raise InvalidParameterError("include_sensitive", include_sensitive, "True or False")
    df = load_adult(data_dir, split=split)
    blocks, names = [], []
    for col in ("age", "education-num", "hours-per-week", "capital-gain", "capital-loss"):
        lo, hi = ADULT_NUMERIC_BOUNDS[col]
        blocks.append(_scaled(df[col], lo, hi, log=col in _ADULT_LOG_COLUMNS)[:, None])
        names.append(col)
    cat_cols = ["workclass", "marital-status", "occupation", "relationship", "race",
                "native-country"] + (["sex"] if include_sensitive else [])
    for col in cat_cols:
        cats = ADULT_CATEGORIES[col]
        blocks.append(_one_hot(df[col], cats))
        names.extend(f"{col}={c}" for c in cats)
    x = np.concatenate(blocks, axis=1).astype(np.float32)
    y = (df["income"].to_numpy() == 1).astype(np.int64)
    sex = df["sex"].astype("string").fillna("").str.strip().to_numpy(dtype=object)
    sensitive = (sex == "Male").astype(np.int64)
    return FairLearningData(x=x, y=y, sensitive=sensitive, feature_names=tuple(names),
                            name=f"adult-{split}")
