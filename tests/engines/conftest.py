"""A real SparkSession for the engine tests: local[2], small shuffles, no UI.

Skipped cleanly (with the reason) when pyspark or a Java runtime is missing. The JVM
runs with the C1 JIT only and the serial GC: for small test data that halves the time
to the first result, and changes nothing in the arithmetic (IEEE doubles either way).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import warnings
from pathlib import Path

import pytest


def _java_available() -> bool:
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return True
    return shutil.which("java") is not None


@pytest.fixture(scope="session")
def spark():
    """A session-scoped ``SparkSession`` (master ``local[2]``)."""
    if importlib.util.find_spec("pyspark") is None:
        pytest.skip("pyspark is not installed (pip install 'privot[spark]')")
    if not _java_available():
        pytest.skip("no Java runtime found (set JAVA_HOME or put java on PATH)")
    # Python workers (mapInPandas) must run this interpreter, which can import privot.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pyspark's pandas-version FutureWarning
        session = (
            SparkSession.builder.master("local[2]")
            .appName("privot-tests")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.default.parallelism", "2")
            .config("spark.sql.execution.arrow.pyspark.enabled", "true")
            .config("spark.driver.extraJavaOptions",
                    "-XX:+UseSerialGC -XX:TieredStopAtLevel=1")
            .getOrCreate()
        )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
