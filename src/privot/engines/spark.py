"""The Apache Spark engine: the same operations as Spark ``DataFrame`` transformations.

A collection is a ``pyspark.sql.DataFrame``. Per-row functions run as native column
expressions when the :class:`~privot.engines.base.ColumnFunction` provides them (no
Python on the executors), otherwise as ``mapInPandas`` over the same pandas code the
local engine runs; aggregations are ``groupBy().agg()``, joins are ``DataFrame.join``.
Nothing but the aggregates asked for by :meth:`SparkBackend.collect_to_numpy` (and
row counts) is brought to the driver.

pyspark (with pandas and pyarrow) is an optional dependency, extra ``spark``, imported
when the engine is built. Spark 3.5 or later; the ANSI SQL mode may be on or off.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from privot._optional import require
from privot.engines.base import (
    ColumnFunction,
    Predicate,
    check_columns,
    check_names,
    normalise_values,
    quote,
    resolve_file,
)
from privot.errors import InvalidDataError, InvalidParameterError

__all__ = ["SparkBackend"]

_EXTRA = "spark"
_NUMERIC = ("tinyint", "smallint", "int", "bigint", "float", "double")
_SPARK_TYPES = {"int64": "LongType", "float64": "DoubleType", "bool": "BooleanType"}


def _sql():
    return require("pyspark.sql", _EXTRA)


def _functions():
    return require("pyspark.sql.functions", _EXTRA)


class SparkBackend:
    """Backend over Spark DataFrames.

    Parameters
    ----------
    spark : pyspark.sql.SparkSession, optional
        The session to use; default the active session, else
        ``SparkSession.builder.getOrCreate()``.
    native : bool, default True
        Use the native column expressions of a ``ColumnFunction``/``Predicate`` when it
        has them; ``False`` always runs their pandas code through ``mapInPandas`` (the
        two give identical columns; the switch exists to test exactly that).

    Notes
    -----
    Implements :class:`~privot.engines.base.Backend`; see that protocol for the
    semantics. Text files are read with every column as a string (no schema
    inference, so no extra pass), and ``float_columns`` are converted with
    ``try_cast(... AS DOUBLE)`` (Java's correctly rounded parsing; text that is not a
    number becomes null) or, for numbers, ``cast``; decimals go through their exact
    text so the value is the correctly rounded one, as on the local engine.
    """

    name = "spark"

    def __init__(self, spark: Any = None, *, native: bool = True) -> None:
        sql = _sql()
        if spark is None:
            spark = sql.SparkSession.getActiveSession()
        if spark is None:
            # a session started here runs its Python workers with this interpreter (the
            # one that has privot), unless the caller chose one
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
            spark = sql.SparkSession.builder.getOrCreate()
        elif not isinstance(spark, sql.SparkSession):
            raise InvalidParameterError("spark", type(spark).__name__,
                                        "a pyspark.sql.SparkSession or None")
        self.spark = spark
        self.native = bool(native)

    def __repr__(self) -> str:
        return f"SparkBackend(master={self.spark.sparkContext.master!r}, native={self.native})"

    # -- reading -----------------------------------------------------------------------

    def read(self, source: Any, *, columns: Sequence[str],
             float_columns: Sequence[str] = (), sep: str | None = None,
             names: Sequence[str] | None = None) -> Any:
        sql = _sql()
        columns = list(dict.fromkeys(columns))
        pd = require("pandas", _EXTRA)
        if isinstance(source, (pd.DataFrame, sql.DataFrame)):
            if sep is not None or names is not None:
                raise InvalidParameterError("sep/names", (sep, names),
                                            "None for an in-memory DataFrame")
            where = "the DataFrame"
            check_columns(columns, [str(c) for c in source.columns], where)
            df = (source if isinstance(source, sql.DataFrame)
                  else self.spark.createDataFrame(source[columns]))
        elif isinstance(source, (str, os.PathLike)):
            names = check_names(names)
            file = resolve_file(source, sep, names)
            where = repr(str(file.path))
            path = str(file.path)
            if file.format == "parquet":
                df = self.spark.read.parquet(path)
            else:
                reader = (self.spark.read.option("sep", file.sep)
                          .option("header", names is None)
                          .option("inferSchema", False).option("mode", "PERMISSIVE"))
                if names is not None:
                    t = sql.types
                    reader = reader.schema(t.StructType(
                        [t.StructField(n, t.StringType(), True) for n in names]))
                df = reader.csv(path)
            check_columns(columns, df.columns, where)
        else:
            raise InvalidParameterError(
                "source", type(source).__name__,
                "a path to a CSV/TSV/Parquet file or a pandas or Spark DataFrame")
        df = df.select(*[quote(c) for c in columns])
        return self._to_double(df, [c for c in float_columns if c in columns])

    def _to_double(self, df: Any, floats: list[str]) -> Any:
        F = _functions()
        dtypes = dict(df.dtypes)
        exprs = {}
        for c in floats:
            t = dtypes[c]
            if t == "double":
                continue
            if t in _NUMERIC:
                exprs[c] = F.col(quote(c)).cast("double")
            elif t.startswith("decimal"):
                exprs[c] = F.col(quote(c)).cast("string").cast("double")
            elif t == "string":
                exprs[c] = F.expr(f"try_cast({quote(c)} AS DOUBLE)")
            elif t == "void":
                exprs[c] = F.lit(None).cast("double")
            else:
                raise InvalidDataError(
                    f"column {c!r} has type {t}; it must hold numbers or numeric text")
        return df.withColumns(exprs) if exprs else df

    # -- transformations ---------------------------------------------------------------

    def map_columns(self, data: Any, fn: ColumnFunction) -> Any:
        if self.native:
            exprs = fn.spark(_functions(), dict(data.dtypes))
            if exprs is not None:
                return data.withColumns(exprs)
        t = _sql().types
        fields = [f for f in data.schema.fields if f.name not in fn.outputs]
        for name, dtype in fn.outputs.items():
            fields.append(t.StructField(name, getattr(t, _SPARK_TYPES[dtype])(), True))
        schema = t.StructType(fields)
        names = [f.name for f in fields]

        def run(chunks):
            for chunk in chunks:
                out = chunk.copy(deep=False)
                for name, values in fn.pandas(chunk).items():
                    out[name] = values
                yield out[names]

        return data.mapInPandas(run, schema)

    def filter(self, data: Any, predicate: Predicate) -> Any:
        if self.native:
            cond = predicate.spark(_functions(), dict(data.dtypes))
            if cond is not None:
                return data.filter(cond)

        def run(chunks):
            for chunk in chunks:
                yield chunk[np.asarray(predicate.pandas(chunk), dtype=bool)]

        return data.mapInPandas(run, data.schema)

    def select(self, data: Any, columns: Sequence[str]) -> Any:
        check_columns(columns, data.columns, "the collection")
        return data.select(*[quote(c) for c in columns])

    def join(self, left: Any, right: Any, *, on: Sequence[str]) -> Any:
        keys = list(on)
        clash = (set(left.columns) & set(right.columns)) - set(keys)
        if clash:
            raise InvalidParameterError("right", sorted(clash),
                                        "no column other than the join keys in common")
        return left.join(right, on=keys, how="inner")

    # -- aggregations ------------------------------------------------------------------

    def count_per_key(self, data: Any, keys: Sequence[str], *, out: str = "count") -> Any:
        F = _functions()
        keys = list(keys)
        check_columns(keys, data.columns, "the collection")
        agg = F.count(F.lit(1)).alias(out)
        return data.groupBy(*[quote(k) for k in keys]).agg(agg) if keys else data.agg(agg)

    def sum_per_key(self, data: Any, keys: Sequence[str],
                    values: Mapping[str, str] | Sequence[str]) -> Any:
        F = _functions()
        keys = list(keys)
        vals = normalise_values(values)
        check_columns(keys + list(vals.values()), data.columns, "the collection")
        if keys:
            aggs = [F.sum(F.col(quote(src))).alias(out) for out, src in vals.items()]
            return data.groupBy(*[quote(k) for k in keys]).agg(*aggs)
        aggs = [F.coalesce(F.sum(F.col(quote(src))), F.lit(0)).alias(out)
                for out, src in vals.items()]
        return data.agg(*aggs)

    # -- materialisation ---------------------------------------------------------------

    def cache(self, data: Any) -> Any:
        return data.persist()

    def release(self, data: Any) -> None:
        data.unpersist()

    def count(self, data: Any) -> int:
        return int(data.count())

    def collect_to_numpy(self, data: Any, columns: Sequence[str]) -> dict[str, np.ndarray]:
        check_columns(columns, data.columns, "the collection")
        frame = data.select(*[quote(c) for c in columns]).toPandas()
        return {c: frame[c].to_numpy() for c in columns}
