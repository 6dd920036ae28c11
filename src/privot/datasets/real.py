"""Loaders for the real data files kept in the shared data folder (used by path).

The files are never copied into the project; see :mod:`privot.datasets._paths` for
how the folder is found (``data_dir`` -> ``PRIVOT_DATA_DIR`` -> ``shared/data``).
pandas is an optional dependency (extra ``datasets``) imported when a loader runs.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Literal

from privot._optional import require
from privot._validation import check_int
from privot.datasets._paths import data_file
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
