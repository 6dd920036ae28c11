"""One rule for unusable rows, and the curator's refusal when nothing is usable.

Every capability reads rows of coordinates, and every path (arrays, DataFrames, the
engines, the CLI) applies the same rule:

* A row with a **missing, non-numeric, NaN or infinite coordinate** is *unusable*: it is
  dropped from the mechanism's input and counted for the curator. (For the barycenter
  capability, whose neighbouring relation keeps group sizes public, the row still counts
  in its group's public size: see ``docs/privacy/barycenters.md``.)
* Rows outside the public bounds are dropped (heatmaps) or clipped into them
  (barycenters), and counted for the curator.
* When **no row is usable and inside the bounds**, the run is refused with
  :class:`~privot.errors.InvalidDataError` *before anything is charged*: the curator
  sees the counts anyway, and a release of pure noise with exit 0 looks believable.
* When **most rows** are dropped or clipped, a :class:`~privot.errors.DataWarning`
  (curator-only) says so, with a hint when the axes look swapped.

Privacy
-------
These checks read the exact data and decide whether to run at all, before any budget is
charged: a curator decision (DESIGN.md, "Publishable output"). Their messages and
warnings are curator-only and never enter a release.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from privot._validation import check_group_sequence
from privot.errors import DataWarning, InvalidDataError

__all__ = ["MOSTLY", "UserPoints", "axes_look_swapped", "check_usable", "coordinate_column",
           "group_arrays", "refuse_swapped_axes", "swapped_axes_hint", "usable_rows",
           "usable_user_points"]

#: A share of rows dropped or clipped above which the curator is warned.
MOSTLY = 0.5

AXES_HINT = ("check the axis order (the x/y or longitude/latitude columns, or the axes of "
             "the bounds, may be swapped) and that the bounds cover the data")


def usable_rows(points: np.ndarray) -> np.ndarray:
    """``(n,)`` bool: rows of an ``(n, d)`` float array whose coordinates are all finite."""
    return np.all(np.isfinite(points), axis=1)


def group_arrays(groups: object, name: str = "groups") -> list[np.ndarray]:
    """``k >= 1`` float ``(n_i, d)`` arrays of a common ``d``, each with ``n_i >= 1`` rows.

    Non-finite values are allowed: such rows are unusable (the rule above). A 1-D group
    is read as ``(n, 1)``. Raises :class:`~privot.errors.InvalidDataError` naming the
    group otherwise.
    """
    out: list[np.ndarray] = []
    for i, g in enumerate(check_group_sequence(groups, name)):
        try:
            arr = np.array(g, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise InvalidDataError(f"{name}[{i}] must be numeric (NaN for a missing "
                                   f"coordinate), got {type(g).__name__}") from exc
        if arr.ndim == 1:
            arr = arr[:, None]
        if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] < 1:
            raise InvalidDataError(
                f"{name}[{i}] must be a non-empty (n_i, d) array, got shape {arr.shape}")
        if out and arr.shape[1] != out[0].shape[1]:
            raise InvalidDataError(
                f"all {name} must have the same dimension d; {name}[0] has "
                f"d={out[0].shape[1]} but {name}[{i}] has shape {arr.shape}")
        out.append(arr)
    return out


def swapped_axes_hint(points: np.ndarray, inside: Callable[[np.ndarray], np.ndarray]) -> str:
    """A hint naming swapped axes when exchanging the first two coordinates helps.

    Parameters
    ----------
    points : (n, d) float array, d >= 2
        The usable rows.
    inside : callable
        ``inside(points) -> (n,) bool``, the public bounds' membership test.
    """
    if points.ndim != 2 or points.shape[1] < 2 or points.shape[0] == 0:
        return AXES_HINT
    swapped = points.copy()
    swapped[:, [0, 1]] = swapped[:, [1, 0]]
    now, then = int(inside(points).sum()), int(inside(swapped).sum())
    if axes_look_swapped(len(points), now, then):
        return (f"the first two coordinates look swapped: with them exchanged, {then} of "
                f"{len(points)} usable rows would be inside the bounds instead of {now} "
                "(for geographic data x is the longitude and y the latitude)")
    return AXES_HINT


def axes_look_swapped(n_rows: int, n_inside: int, n_inside_swapped: int) -> bool:
    """The one rule: exchanging the first two coordinates puts more than half of the rows,
    and more than as given, inside the public bounds."""
    return n_inside_swapped > max(n_inside, MOSTLY * n_rows)


def refuse_swapped_axes(*, n_rows: int, n_outside: int,
                        n_outside_swapped: Callable[[], int], what: str) -> None:
    """Refuse, before anything is charged, rows that clearly fit with swapped axes.

    A curator decision on the exact rows, taken by every capability that reads
    coordinates against public bounds (heatmaps, sampling, barycenters): when most rows
    are outside the bounds as given (``n_outside > MOSTLY * n_rows``) and
    :func:`axes_look_swapped` holds for the rows with their first two coordinates
    exchanged, the release would be of the wrong data; it is refused (before, it was a
    warning the curator could miss).

    Parameters
    ----------
    n_rows : int
        Rows read.
    n_outside : int
        Rows outside the bounds or unusable, as given.
    n_outside_swapped : callable
        ``() -> int``, the same count with the first two coordinates exchanged; called
        only when most rows are outside (it may read the data again).
    what : str
        What the rows are, for the message.

    Raises
    ------
    InvalidDataError
    """
    if n_rows <= 0 or n_outside <= MOSTLY * n_rows:
        return
    swapped = int(n_outside_swapped())
    if axes_look_swapped(n_rows, n_rows - n_outside, n_rows - swapped):
        raise InvalidDataError(
            f"{what}: the first two coordinates look swapped: {n_outside} of {n_rows} rows "
            f"are outside the bounds as given, {swapped} with them exchanged (for "
            "geographic data x is the longitude and y the latitude). Swap the columns (or "
            "the bounds' axes). Nothing was charged or written")


def check_usable(*, n_rows: int, n_unusable: int, n_outside: int, what: str,
                 outside: str = "outside the bounds",
                 hint: Callable[[], str] | None = None) -> None:
    """Refuse when no row is usable and inside; warn when most rows are not.

    Parameters
    ----------
    n_rows : int
        Rows read.
    n_unusable : int
        Rows with a missing or non-numeric coordinate.
    n_outside : int
        Usable rows outside the public bounds (dropped or clipped).
    what : str
        What the rows are, for the message (``"the input"``, ``"group 'a'"``).
    outside : str
        How to say what happens to rows outside (``"outside the bounds (clipped)"``).
    hint : callable, optional
        ``hint() -> str``, called only when the run is refused or warned about (it may
        read the rows again); default :data:`AXES_HINT`.

    Raises
    ------
    InvalidDataError
        No row at all, or none usable and inside the bounds. Raised before anything is
        charged by every caller.
    """
    good = n_rows - n_unusable - n_outside
    summary = (f"{n_rows} row(s) read, {n_unusable} with a missing or non-numeric "
               f"coordinate, {n_outside} {outside}")
    if n_rows - good > MOSTLY * n_rows:
        said = AXES_HINT if hint is None else hint()
    if n_rows == 0:
        raise InvalidDataError(f"{what} has no rows (a header-only file?); nothing was "
                               "charged or written")
    if good <= 0:
        raise InvalidDataError(f"{what}: no usable row inside the bounds ({summary}); "
                               f"{said}. Nothing was charged or written")
    if n_rows - good > MOSTLY * n_rows:
        warnings.warn(f"{what}: most rows are not used as given ({summary}); {said}",
                      DataWarning, stacklevel=3)


# -- user points (heatmaps, sampling): one row = (user id, x, y) ----------------------


def coordinate_column(values: object, name: str) -> np.ndarray:
    """A 1-D float array; a missing or non-numeric value becomes NaN (an unusable row).

    The engines' rule (``privot.engines.base``): numbers are widened, text is parsed as
    a decimal number (``_`` digit separators are not numbers), booleans are refused.
    """
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise InvalidDataError(f"{name} must be a 1-D array, got shape {arr.shape}")
    if arr.dtype.kind == "b":
        raise InvalidDataError(f"{name} must be numeric coordinates, got booleans")
    if arr.dtype.kind in "iuf":
        return arr.astype(np.float64)
    out = np.empty(arr.shape[0], dtype=np.float64)
    for i, v in enumerate(arr.tolist()):
        try:
            out[i] = np.nan if isinstance(v, str) and "_" in v else float(v)
        except (TypeError, ValueError):
            out[i] = np.nan
    return out


def _missing_ids(ids: np.ndarray) -> np.ndarray:
    """``(n,)`` bool: user ids that are missing (None, NaN, pandas NA)."""
    if ids.dtype.kind == "f":
        return ~np.isfinite(ids)
    if ids.dtype.kind != "O":
        return np.zeros(ids.shape[0], dtype=bool)
    return np.fromiter((v is None or v != v or type(v).__name__ == "NAType"
                        for v in ids.tolist()), dtype=bool, count=ids.shape[0])


def _factorise(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Codes ``0..k-1`` of the user ids, and the ``k`` distinct ids (sorted)."""
    try:
        uniq, codes = np.unique(ids, return_inverse=True)
    except TypeError as exc:
        raise InvalidDataError(
            "user_ids could not be compared (mixed types?); use one type of id") from exc
    return codes.reshape(-1).astype(np.int64, copy=False), uniq


@dataclass(frozen=True)
class UserPoints:
    """The usable rows of a table of user points (the one rule of :mod:`privot._usable`).

    Attributes
    ----------
    codes : (k,) int64 array
        User code ``0..n_ids-1`` of each usable row.
    x, y : (k,) float arrays
        Its finite coordinates.
    n_ids : int
        Distinct user ids among the rows with a user id.
    n_rows : int
        Rows read, usable or not. **Curator-only.**
    unique_ids : (n_ids,) array
        The distinct user ids, sorted: code ``i`` is ``unique_ids[i]``.
    """

    codes: np.ndarray
    x: np.ndarray
    y: np.ndarray
    n_ids: int
    n_rows: int
    unique_ids: np.ndarray


def usable_user_points(user_ids: object, x: object, y: object) -> UserPoints:
    """Drop rows with a missing user id or a missing, non-numeric or non-finite
    coordinate; factorise the user ids. Every in-memory heatmap path goes through here
    (the engines apply the same rule in SQL/pandas)."""
    xs = coordinate_column(x, "x")
    ys = coordinate_column(y, "y")
    ids = np.asarray(user_ids)
    if ids.ndim != 1:
        raise InvalidDataError(f"user_ids must be a 1-D array, got shape {ids.shape}")
    n = xs.shape[0]
    for name, arr in (("user_ids", ids), ("y", ys)):
        if arr.shape[0] != n:
            raise InvalidDataError(f"{name} has {arr.shape[0]} values but x has {n}")
    has_user = ~_missing_ids(ids)
    codes, uniq = _factorise(ids[has_user])
    usable = (np.isfinite(xs) & np.isfinite(ys))[has_user]
    return UserPoints(codes=codes[usable], x=xs[has_user][usable], y=ys[has_user][usable],
                      n_ids=int(uniq.size), n_rows=n, unique_ids=uniq)
