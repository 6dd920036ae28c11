"""The distributed engine: Apache Spark SQL.

A step's SQL runs as ``spark.sql`` over a temporary view ``{source}`` of the input (a
Spark ``DataFrame`` made from the file or the in-memory table, the requested columns
converted by the engines' rule; a polars ``DataFrame``/``LazyFrame`` or a pyarrow
``Table`` is converted to pandas first, its requested columns only). Row functions run
as pandas UDFs (Arrow batches), the same numpy code as on DuckDB. Only the query's
result is brought to the driver.

pyspark (with pandas and pyarrow) is an optional dependency, extra ``spark``, imported
when the engine is built. Spark 3.5 or later; the ANSI SQL mode may be on or off.
``{wide}`` is ``DECIMAL(38,0)`` and ``{div}`` is ``div`` (exact on decimals).
"""

from __future__ import annotations

import inspect
import os
import sys
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from privot._optional import require
from privot.engines.base import (
    VectorFunction,
    check_columns,
    check_names,
    resolve_file,
)
from privot.engines.tables import TABLES, describe_table, is_table, table_columns, to_pandas
from privot.errors import InvalidDataError, InvalidParameterError

__all__ = ["DIALECT", "SparkEngine"]

#: Dialect tokens of the step texts.
DIALECT = {"wide": "DECIMAL(38,0)", "div": "div"}

_EXTRA = "spark"
_NUMERIC = ("tinyint", "smallint", "int", "bigint", "float", "double")


def _sql():
    return require("pyspark.sql", _EXTRA)


def _functions():
    return require("pyspark.sql.functions", _EXTRA)


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


class SparkEngine:
    """Engine over a Spark session.

    Parameters
    ----------
    spark : pyspark.sql.SparkSession, optional
        The session to use; default the active session, else
        ``SparkSession.builder.getOrCreate()``.

    Notes
    -----
    Implements :class:`~privot.engines.base.Engine`. Text files are read with every
    column as a string (no schema inference, so no extra pass), and ``float_columns``
    are converted with ``try_cast(... AS DOUBLE)`` (Java's correctly rounded parsing;
    text that is not a number becomes null) or, for numbers, ``cast``; decimals go
    through their exact text, as on DuckDB.
    """

    name = "spark"

    def __init__(self, spark: Any = None) -> None:
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

    def __repr__(self) -> str:
        return f"SparkEngine(master={self.spark.sparkContext.master!r})"

    # -- reading -----------------------------------------------------------------------

    def _read(self, source: Any, wanted: list[str], sep: str | None,
              names: Sequence[str] | None) -> Any:
        sql = _sql()
        if isinstance(source, sql.DataFrame) or is_table(source):
            if sep is not None or names is not None:
                raise InvalidParameterError("sep/names", (sep, names),
                                            "None for an in-memory table")
            if isinstance(source, sql.DataFrame):
                check_columns(wanted, [str(c) for c in source.columns], "the DataFrame")
                return source
            check_columns(wanted, table_columns(source), describe_table(source))
            # polars and pyarrow tables go through pandas (the same values as the
            # equivalent pandas DataFrame, hence the same aggregate)
            return self.spark.createDataFrame(to_pandas(source, wanted))
        if not isinstance(source, (str, os.PathLike)):
            raise InvalidParameterError(
                "source", type(source).__name__,
                f"a path to a CSV/TSV/Parquet file, a Spark DataFrame, {TABLES}")
        names = check_names(names)
        file = resolve_file(source, sep, names)
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
        check_columns(wanted, df.columns, repr(path))
        return df

    def _view(self, source: Any, columns: Mapping[str, str],
              float_columns: Sequence[str], sep: str | None,
              names: Sequence[str] | None) -> Any:
        F = _functions()
        df = self._read(source, list(columns.values()), sep, names)
        dtypes = dict(df.dtypes)
        exprs = []
        for alias, col in columns.items():
            c, t = F.col(_quote(col)), dtypes[col]
            if alias in float_columns:
                if t == "double":
                    e = c
                elif t in _NUMERIC:
                    e = c.cast("double")
                elif t.startswith("decimal"):
                    e = c.cast("string").cast("double")
                elif t == "string":
                    e = F.expr(f"try_cast({_quote(col)} AS DOUBLE)")
                elif t == "void":
                    e = F.lit(None).cast("double")
                else:
                    raise InvalidDataError(
                        f"column {col!r} has type {t}; it must hold numbers or numeric text")
            elif t in ("double", "float"):  # a NaN key is a missing key
                e = F.when(F.isnan(c), F.lit(None)).otherwise(c)
            else:
                e = c
            exprs.append(e.alias(alias))
        return df.select(*exprs)

    # -- the query ---------------------------------------------------------------------

    def query(self, sql: str, source: Any, *, columns: Mapping[str, str],
              float_columns: Sequence[str] = (), sep: str | None = None,
              names: Sequence[str] | None = None,
              functions: Mapping[str, VectorFunction] | None = None
              ) -> dict[str, np.ndarray]:
        view = f"privot_source_{uuid.uuid4().hex[:12]}"
        self._view(source, columns, float_columns, sep, names).createOrReplaceTempView(view)
        tokens = {"source": view, **DIALECT}
        for name, fn in (functions or {}).items():
            registered = f"privot_fn_{name}_{uuid.uuid4().hex[:8]}"
            self.spark.udf.register(registered, _pandas_udf(fn))
            tokens[name] = registered
        try:
            frame = self.spark.sql(sql.format(**tokens)).toPandas()
        finally:
            self.spark.catalog.dropTempView(view)
        return {str(c): _column(frame[c]) for c in frame.columns}


def _column(series: Any) -> np.ndarray:
    if series.dtype == object:
        return np.array([None if v is None or v != v else v for v in series.tolist()],
                        dtype=object)
    return series.to_numpy()


def _pandas_udf(fn: VectorFunction) -> Any:
    """``fn`` as a scalar pandas UDF (float64 Series in, int64 Series out)."""
    F = _functions()
    pd = require("pandas", _EXTRA)

    def call(*series: Any) -> Any:
        cols = [s.to_numpy(dtype=np.float64, na_value=np.nan) for s in series]
        return pd.Series(fn(*cols))

    # Spark reads the UDF's kind (Series to Series) from its signature and type hints
    params = [f"a{i}" for i in range(fn.n_args)]
    call.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=pd.Series)
         for p in params], return_annotation=pd.Series)
    call.__annotations__ = {**dict.fromkeys(params, pd.Series), "return": pd.Series}
    return F.pandas_udf(call, "long")
