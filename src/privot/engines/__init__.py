"""Embedded and distributed execution of the data-touching steps.

A step is one SQL text owned by its capability (``privot.heatmaps.engine_step``,
``privot.barycenters.engine_step``); an :class:`~privot.engines.base.Engine` runs it
over a file or an in-memory table (a pandas or polars ``DataFrame``, a polars
``LazyFrame``, a pyarrow ``Table``: :mod:`privot.engines.tables`) and returns the
(small) result:

* :class:`~privot.engines.duckdb.DuckDBEngine` (``engine="duckdb"``, the default;
  ``"local"`` is an alias): DuckDB in this process, out-of-core and multi-threaded;
* :class:`~privot.engines.spark.SparkEngine` (``engine="spark"``): Spark SQL.

Only aggregates reach the driver; noise and reconstruction run there, once, so a
seeded release is identical whichever engine computed the aggregate. This package
knows nothing of any capability.

Privacy
-------
Engines release nothing: their aggregates are exact and curator-only. The capability
that noises them on the driver states unit, relation, sensitivity and guarantee
(``docs/privacy/heatmaps.md``, ``docs/privacy/barycenters.md``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from privot.engines.base import Engine, SourceNotFoundError, VectorFunction, check_source
from privot.errors import InvalidParameterError

__all__ = [
    "ALIASES",
    "ENGINES",
    "DuckDBEngine",
    "Engine",
    "SourceNotFoundError",
    "SparkEngine",
    "VectorFunction",
    "get_engine",
    "read_columns",
]

#: Engine names accepted by ``engine=``.
ENGINES = ("duckdb", "spark")
#: Other names accepted for an engine: ``"local"`` (the embedded engine) is DuckDB.
ALIASES = {"local": "duckdb"}


def get_engine(engine: str | Engine = "duckdb", *, spark: Any = None) -> Engine:
    """The engine for an ``engine=`` argument.

    Parameters
    ----------
    engine : {"duckdb", "spark", "local"} or Engine
        A name (``"local"`` is an alias of ``"duckdb"``), or an engine instance
        returned as is.
    spark : pyspark.sql.SparkSession, optional
        Session of the Spark engine (default: the active one, else a new one).

    Raises
    ------
    InvalidParameterError
        An unknown name, or ``spark`` given with another engine.
    MissingExtraError
        pyspark not installed (extra ``spark``) for ``"spark"``.
    """
    if isinstance(engine, str):
        name = ALIASES.get(engine, engine)
        if name == "duckdb":
            if spark is not None:
                raise InvalidParameterError("spark", spark, "None unless engine='spark'")
            from privot.engines.duckdb import DuckDBEngine

            return DuckDBEngine()
        if name == "spark":
            from privot.engines.spark import SparkEngine

            return SparkEngine(spark)
    elif isinstance(engine, Engine):
        return engine
    raise InvalidParameterError(
        "engine", engine,
        f"one of {ENGINES} ('local' = 'duckdb') or a privot.engines.Engine instance")


def read_columns(source: Any, *, columns: Sequence[str], float_columns: Sequence[str] = (),
                 sep: str | None = None, names: Sequence[str] | None = None,
                 engine: str | Engine = "duckdb") -> dict[str, np.ndarray]:
    """The rows of ``source`` brought into memory, column by column.

    For data that fits in memory (the in-memory paths of the capabilities); the
    conversion rule of ``float_columns`` is the engines' (``privot.engines.base``).

    Returns
    -------
    dict of str to (n,) ndarray
        float64 for ``float_columns`` (NaN where missing); other columns as read.
    """
    check_source(source)
    cols = list(dict.fromkeys(columns))
    aliases = {f"c{i}": c for i, c in enumerate(cols)}
    floats = [a for a, c in aliases.items() if c in float_columns]
    got = get_engine(engine).query("SELECT * FROM {source}", source, columns=aliases,
                                   float_columns=floats, sep=sep, names=names)
    out = {}
    for alias, col in aliases.items():
        values = got[alias]
        out[col] = (np.asarray(values, dtype=np.float64) if alias in floats else values)
    return out


def __getattr__(name: str) -> Any:
    # Lazy: duckdb and pyspark are imported when an engine is built.
    if name == "DuckDBEngine":
        from privot.engines.duckdb import DuckDBEngine

        return DuckDBEngine
    if name == "SparkEngine":
        from privot.engines.spark import SparkEngine

        return SparkEngine
    raise AttributeError(f"module 'privot.engines' has no attribute {name!r}")
