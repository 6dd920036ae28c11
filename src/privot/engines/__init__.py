"""Local and distributed execution of the data-touching steps.

The steps that read raw data at scale are written once against a small columnar
backend protocol (:class:`~privot.engines.base.Backend`: read, map_columns, filter,
count_per_key, sum_per_key, join, cache, count, collect_to_numpy), in the spirit of
PipelineDP's ``PipelineBackend``:

* :class:`~privot.engines.local.LocalBackend` (``engine="local"``, the default):
  pandas chunks streamed from CSV/TSV/Parquet with pyarrow, bounded memory;
* :class:`~privot.engines.spark.SparkBackend` (``engine="spark"``): Spark DataFrames.

Only aggregates reach the driver; noise and reconstruction run there, once, so a
seeded release is identical whichever engine computed the aggregate.

:func:`aggregate_user_cells` (module :mod:`~privot.engines.heatmap`) is the heatmap
step: per-user distributions over a public grid, summed per cell, bit-identical on
every engine. :func:`coreset_leaf_counts` (module :mod:`~privot.engines.coreset`) is
the private-coreset step: exact per-(group, leaf) counts of the public binary partition.

Privacy
-------
Engines release nothing: their aggregates are exact and curator-only. The capability
that noises them on the driver states unit, relation, sensitivity and guarantee
(``docs/privacy/heatmaps.md``, ``docs/privacy/barycenters.md``).
"""

from __future__ import annotations

from typing import Any

from privot.engines.base import (
    Backend,
    ColumnFunction,
    Compare,
    Predicate,
    SourceNotFoundError,
)
from privot.engines.local import LocalBackend, LocalFrame
from privot.errors import InvalidParameterError

__all__ = [
    "ENGINES",
    "Backend",
    "ColumnFunction",
    "Compare",
    "LocalBackend",
    "LocalFrame",
    "Predicate",
    "SourceNotFoundError",
    "SparkBackend",
    "aggregate_user_cells",
    "coreset_leaf_counts",
    "get_backend",
]

#: Engine names accepted by ``engine=``.
ENGINES = ("local", "spark")


def get_backend(engine: str | Backend = "local", *, chunk_size: int = 1_000_000,
                spark: Any = None) -> Backend:
    """The backend for an ``engine=`` argument.

    Parameters
    ----------
    engine : {"local", "spark"} or Backend
        A name, or a backend instance returned as is.
    chunk_size : int
        Rows per chunk of the local engine.
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
        if engine == "local":
            if spark is not None:
                raise InvalidParameterError("spark", spark,
                                            "None unless engine='spark'")
            return LocalBackend(chunk_size=chunk_size)
        if engine == "spark":
            from privot.engines.spark import SparkBackend

            return SparkBackend(spark)
    elif isinstance(engine, Backend):
        return engine
    raise InvalidParameterError("engine", engine,
                                f"one of {ENGINES} or a privot.engines.Backend instance")


def __getattr__(name: str) -> Any:
    # Lazy: the heatmap step imports privot.heatmaps, and the Spark backend pyspark;
    # importing privot.engines itself stays light and free of import cycles.
    if name == "aggregate_user_cells":
        from privot.engines.heatmap import aggregate_user_cells

        return aggregate_user_cells
    if name == "coreset_leaf_counts":
        from privot.engines.coreset import coreset_leaf_counts

        return coreset_leaf_counts
    if name == "SparkBackend":
        from privot.engines.spark import SparkBackend

        return SparkBackend
    raise AttributeError(f"module 'privot.engines' has no attribute {name!r}")
