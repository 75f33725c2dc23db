"""A SparkSession for pykraft: loopback only (Spark otherwise binds to the first non-loopback address), the
running interpreter on the Python workers (Spark otherwise runs `python3` from PATH, which lacks pyarrow), no UI,
few shuffle partitions (the tables are small next to Spark's default of 200), and a clear error without Java."""

from __future__ import annotations

import os
import shutil
import sys
from typing import Any


# Spark's JVM logs WARN lines (native Hadoop, local dir) on stderr before setLogLevel can run; the CLI's stderr
# is for its progress bar and its one-line errors.
_QUIET_LOG4J = """rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
"""


# Spark reads the Python workers' Arrow batches through Arrow Java, which by default checks the bounds and the
# reference count of its buffer on every value read (about 5% of the JVM's samples, measured with JFR on the
# kafka-log -> Parquet job). Spark's accessors already test for null and stay within the vectors: skip the checks.
ARROW_JAVA_OPTIONS = "-Darrow.enable_unsafe_memory_access=true -Darrow.enable_null_check_for_get=false"


# Parquet as Spark writes every table here. Measured with JFR and A/B in one session (alternating runs) on the
# kafka-log -> Parquet job (2 M records, local[2]); the Parquet writer is ~60% of the job's CPU:
# - Record keys and values are opaque bytes: min/max statistics on them prune nothing a reader asks, and a
#   dictionary pays only where values repeat (2.61 against 2.87 CPU us a record).
# - The columns that hold one value per file (cluster_id, directory_id, topic, file: up to ~90 bytes each) keep
#   their dictionary (one entry per file; Parquet's dictionary filter still skips row groups on `=`/`IN`), but no
#   min/max statistics: those compared every row's bytes twice (8% of the writer's samples).
# - A record's offset is unique in its partition: the offset column's dictionary only fills up and falls back.
# - The v2 writer (data page v2, delta encodings; read by Spark 3.3+, pyarrow, DuckDB) stores sequential offsets
#   and repeated byte strings in a fraction of the room and costs less per value. With the two points above:
#   files 4x smaller, 2.75 against 3.10 CPU us a record (median of 5 alternating runs; Spark's task threads alone
#   1.77 against 1.97). Not kept, measured: ParallelGC instead of G1 (GC is ~3% of the job), C1 only, another
#   codec (lz4_raw, zstd, none: no CPU difference), no size statistics, no dictionary for the per-file strings
#   (~4% less, but no row-group pruning on them any more).
PER_FILE_COLUMNS = ("cluster_id", "directory_id", "topic", "file")
PARQUET_SETTINGS = {
    "spark.hadoop.parquet.writer.version": "v2",
    "spark.hadoop.parquet.enable.dictionary#offset": "false",
    **{f"spark.hadoop.parquet.{setting}#{column}": "false"
       for setting in ("enable.dictionary", "column.statistics.enabled") for column in ("key", "value")},
    **{f"spark.hadoop.parquet.column.statistics.enabled#{column}": "false" for column in PER_FILE_COLUMNS},
}


class JavaMissingError(RuntimeError):
    """No `java` to start Spark with: the CLI prints this one line and exits 2."""


def prepare_environment() -> None:
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


def java_executable() -> str | None:
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "java"), os.X_OK):
        return os.path.join(home, "bin", "java")
    return shutil.which("java")


def session(master: str = "local[2]", *, app_name: str = "pykraft-analyze", local_dir: str | None = None,
            extra: dict[str, str] | None = None) -> Any:
    """Start (or reuse) the SparkSession, with the pykraft data sources registered."""
    if java_executable() is None:
        raise JavaMissingError("Java not found: Spark needs a Java 17+ runtime (`java` on PATH or JAVA_HOME)")
    prepare_environment()
    from pyspark.sql import SparkSession

    builder = (SparkSession.builder.master(master).appName(app_name)
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "4").config("spark.default.parallelism", "4")
               .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.pyspark.python", os.environ["PYSPARK_PYTHON"])
               .config("spark.sql.execution.arrow.pyspark.enabled", "true")
               .config("spark.python.daemon.module", "pykraft.pipeline.daemon")
               # Partition folders (cluster_id=..., topic=...) are names, never numbers to infer.
               .config("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
               # Writing `records` partitioned by cluster and topic: a writer per folder a task meets (a task's
               # slices are a few files, so a few folders) instead of sorting every row by folder first.
               .config("spark.sql.maxConcurrentOutputFileWriters", "64")
               .config("spark.executor.extraJavaOptions", ARROW_JAVA_OPTIONS))
    java_options = ARROW_JAVA_OPTIONS
    if local_dir:
        os.makedirs(local_dir, exist_ok=True)
        quiet = os.path.join(local_dir, "log4j2.properties")
        with open(quiet, "w", encoding="utf-8") as f:
            f.write(_QUIET_LOG4J)
        builder = builder.config("spark.local.dir", local_dir)
        java_options += f" -Dlog4j2.configurationFile=file:{quiet}"
    builder = builder.config("spark.driver.extraJavaOptions", java_options)
    for key, value in {**PARQUET_SETTINGS, **(extra or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark


def register(spark: Any) -> None:
    """Register pykraft's Python data sources with `spark` (kafka-log, kafka-snapshot, the kraft stream)."""
    from .sources import KafkaLogDataSource, KafkaSnapshotDataSource
    from .stream import KraftDataSource

    spark.dataSource.register(KafkaLogDataSource)
    spark.dataSource.register(KafkaSnapshotDataSource)
    spark.dataSource.register(KraftDataSource)
