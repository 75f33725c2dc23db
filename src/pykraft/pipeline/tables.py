"""The input tables of one analysis, decoded once and written as Parquet under OUT, then read back from there by
every job (a Parquet scan is a JVM scan; the Python data sources run once):

- `records`: every record of every segment of every replica (`kafka-log` with payload decoding where the records
  are metadata or group records), partitioned by cluster_id and topic: a query of one cluster or topic reads
  only its folders;
- `snapshots`: every `.checkpoint` (`kafka-snapshot`), partitioned by cluster_id;
- `traces`: every node's `pykraft-trace.jsonl` through Spark's JSON reader with a declared schema, with the
  cluster id of the node it came from, partitioned by cluster_id;
- client histories (not written: they are the user's own files): linearizability operations
  (`pykraft-history.jsonl`) and what producers were told (`pykraft-produce-history.jsonl`);
- `checkpoints`: each replica's high watermark and log start offset from its node's offset checkpoint files
  (small: read on the driver);
- `aborted`: each replica's aborted transactions from its `.txnindex` files (small: read on the driver).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from pykraft.records.client_history import HISTORY_DDL as PRODUCE_DDL
from pykraft.records.client_history import PRODUCE_HISTORY_FILE

from .decode import METADATA_TOPIC
from .layout import (aborted_transactions, find_named, history_cluster, history_files, node_identity,
                     offset_checkpoints, trace_files)
from .linearize import HISTORY_DDL

TRACE_DDL = ("`ts_ms` BIGINT, `node_id` INT, `event` STRING, `role` STRING, `epoch` INT, `leader_id` INT, "
             "`voters` ARRAY<INT>, `hwm` BIGINT, `offset` BIGINT, `bytes` BIGINT, `from_end_offset` BIGINT, "
             "`to_end_offset` BIGINT, `log_end_offset` BIGINT, `segments` INT, `old` STRING, `new` STRING, "
             "`broker_epoch` BIGINT, `graceful` BOOLEAN, `topic` STRING, `partition` INT, `leader_epoch` INT, "
             "`partition_epoch` INT, `isr` ARRAY<INT>, `metadata_offset` BIGINT, `reason` STRING")
ABORTED_DDL = ("`cluster_id` STRING, `node_id` INT, `topic` STRING, `partition` INT, `producer_id` BIGINT, "
               "`first_offset` BIGINT, `last_offset` BIGINT")
CHECKPOINT_DDL = "`cluster_id` STRING, `node_id` INT, `topic` STRING, `partition` INT, `hwm` BIGINT, `log_start` BIGINT"
INPUT_TABLES = ("records", "snapshots", "traces")


@dataclass
class Tables:
    records: DataFrame
    snapshots: DataFrame
    traces: DataFrame
    histories: DataFrame | None  # linearizability operations
    produced: DataFrame | None  # what producers were told
    checkpoints: DataFrame
    aborted: DataFrame  # aborted transactions from the .txnindex files


def one_partition(tables: Tables) -> Tables:
    """Every input table as one partition, for inputs that fit one shuffle partition anyway. A query over frames
    that all have one partition needs no shuffle: a join, a window or a grouping of one partition is already
    clustered by any key, so each table or audit written is one stage instead of a stage (and, under adaptive
    execution, a job) per join, window and grouping; on small inputs those stages' scheduling is most of the work.
    Only the partitioning changes, never a row."""
    frames: list[DataFrame | None] = [getattr(tables, f.name) for f in fields(tables)]
    return Tables(*(None if frame is None else frame.coalesce(1) for frame in frames))  # type: ignore[arg-type]


def parallel(*jobs: Callable[[], Any]) -> list[Any]:
    """Run independent Spark actions from threads: each small job is mostly driver-side latency (planning,
    scheduling, Python workers starting), which overlaps; the executors share the cores as they do anyway."""
    if len(jobs) == 1:
        return [jobs[0]()]
    with ThreadPoolExecutor(max_workers=min(4, len(jobs))) as pool:
        return [f.result() for f in [pool.submit(job) for job in jobs]]


def write_inputs(spark: SparkSession, roots: list[str], out: str) -> Tables:
    """Decode every input once into OUT/records, OUT/snapshots and OUT/traces; the tables read back."""
    paths = os.pathsep.join(os.path.abspath(r) for r in roots)
    traces = trace_files(roots)

    def records() -> None:
        (spark.read.format("kafka-log").option("metadata", "true").option("paths", paths).load()
         .write.mode("overwrite").partitionBy("cluster_id", "topic").parquet(os.path.join(out, "records")))

    def snapshots() -> None:
        (spark.read.format("kafka-snapshot").option("paths", paths).load()
         .write.mode("overwrite").partitionBy("cluster_id").parquet(os.path.join(out, "snapshots")))

    def trace_table() -> None:
        if traces:
            _traces(spark, traces).write.mode("overwrite").partitionBy("cluster_id").parquet(
                os.path.join(out, "traces"))

    parallel(records, snapshots, trace_table)
    read = {name: spark.read.parquet(os.path.join(out, name)) for name in INPUT_TABLES
            if os.path.isdir(os.path.join(out, name))}
    empty_traces = local_frame(spark, [], TRACE_DDL + ", `cluster_id` STRING")
    return Tables(read["records"], read["snapshots"], read.get("traces", empty_traces),
                  _json(spark, history_files(roots), HISTORY_DDL),
                  _produced(spark, find_named(roots, PRODUCE_HISTORY_FILE)),
                  local_frame(spark, offset_checkpoints(roots), CHECKPOINT_DDL),
                  local_frame(spark, aborted_transactions(roots), ABORTED_DDL))


def local_frame(spark: SparkSession, rows: list[tuple], ddl: str) -> DataFrame:
    """A small table from the driver as literals in the plan (`createDataFrame` of a list is a Python RDD: every
    job using it would start Python tasks to produce a few rows)."""
    fields = [field.strip().replace("`", "").split(" ", 1) for field in _split_ddl(ddl)]
    if not rows:
        return spark.range(0).select(*[F.lit(None).cast(kind).alias(name) for name, kind in fields])
    structs = [F.struct(*[F.lit(value).cast(kind).alias(name) for (name, kind), value in zip(fields, row)])
               for row in rows]
    return spark.range(1).select(F.inline(F.array(*structs)))


def _split_ddl(ddl: str) -> list[str]:
    """The fields of a DDL string (commas inside ARRAY<...> types kept)."""
    parts, depth, current = [], 0, ""
    for char in ddl:
        depth += {"<": 1, ">": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    return parts + [current]


def _owner(files: dict[str, str]) -> Column:
    """The cluster of the file each row came from: a literal map from the file's URI (no join, no Python)."""
    pairs = [F.lit(part) for uri, cluster in files.items() for part in (Path(uri).resolve().as_uri(), cluster)]
    return F.coalesce(F.create_map(*pairs)[F.input_file_name()], F.lit("unknown")).alias("cluster_id")


def _traces(spark: SparkSession, files: list[str]) -> DataFrame:
    owners = _owner({f: node_identity(Path(f).parent).cluster_id for f in files})
    return spark.read.schema(TRACE_DDL).json(files).select("*", owners)


def _produced(spark: SparkSession, files: list[str]) -> DataFrame | None:
    """What producers were told, with the cluster of the node directories found beside each file ("unknown",
    matching no cluster, when there are none or several)."""
    if not files:
        return None
    return spark.read.schema(PRODUCE_DDL).json(files).select("*", _owner({f: history_cluster(f) for f in files}))


def _json(spark: SparkSession, files: list[str], ddl: str) -> DataFrame | None:
    return spark.read.schema(ddl).json(files) if files else None


def metadata_records(tables: Tables) -> DataFrame:
    """Every copy of every metadata-log record that decoded (the partition filter reads only those folders)."""
    return tables.records.filter((F.col("topic") == METADATA_TOPIC) & F.col("error").isNull() & (F.col("offset") >= 0))


def partition_records(tables: Tables) -> DataFrame:
    """Every record of every partition but the metadata log's (user topics and the internal ones)."""
    return tables.records.filter((F.col("topic") != METADATA_TOPIC) & F.col("error").isNull()
                                 & (F.col("offset") >= 0))
