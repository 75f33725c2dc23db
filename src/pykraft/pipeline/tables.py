"""The input tables of one analysis and the committed view of each cluster's metadata log, as DataFrames.

- `records`: every record of every segment under the roots (`kafka-log` with metadata decoding), cached: every
  job reads it;
- `snapshots`: every `.checkpoint` (`kafka-snapshot`);
- `traces`: every node's `pykraft-trace.jsonl` through Spark's JSON reader with a declared schema, with the
  cluster id of the node it came from;
- `histories`: client histories (`pykraft-history.jsonl`), same reader.

The high watermark of a cluster is the highest one its nodes traced; a cluster without traces gets the end of
the longest prefix a majority of its nodes hold with identical batches. `committed` is then one copy of every
metadata record below it (the replica audit checks that the copies agree).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from .layout import history_files, node_identity, trace_files
from .linearize import HISTORY_DDL

METADATA_TOPIC = "__cluster_metadata"
TRACE_DDL = ("`ts_ms` BIGINT, `node_id` INT, `event` STRING, `role` STRING, `epoch` INT, `leader_id` INT, "
             "`voters` ARRAY<INT>, `hwm` BIGINT, `offset` BIGINT, `bytes` BIGINT, `from_end_offset` BIGINT, "
             "`to_end_offset` BIGINT, `log_end_offset` BIGINT, `segments` INT")


@dataclass
class Tables:
    records: DataFrame
    snapshots: DataFrame
    traces: DataFrame
    histories: DataFrame | None


def load_tables(spark: SparkSession, roots: list[str]) -> Tables:
    paths = os.pathsep.join(os.path.abspath(r) for r in roots)
    records = spark.read.format("kafka-log").option("metadata", "true").option("paths", paths).load()
    snapshots = spark.read.format("kafka-snapshot").option("paths", paths).load()
    return Tables(records.persist(), snapshots.persist(), _traces(spark, roots), _histories(spark, roots))


def _traces(spark: SparkSession, roots: list[str]) -> DataFrame:
    files = trace_files(roots)
    if not files:
        return spark.createDataFrame([], TRACE_DDL + ", `cluster_id` STRING")
    owners = spark.createDataFrame([(Path(f).resolve().as_uri(), node_identity(Path(f).parent).cluster_id)
                                    for f in files], "uri STRING, cluster_id STRING")
    raw = spark.read.schema(TRACE_DDL).json(files).withColumn("uri", F.input_file_name())
    return raw.join(F.broadcast(owners), "uri", "left").drop("uri").fillna({"cluster_id": "unknown"}).persist()


def _histories(spark: SparkSession, roots: list[str]) -> DataFrame | None:
    files = history_files(roots)
    return spark.read.schema(HISTORY_DDL).json(files) if files else None


def metadata_records(tables: Tables) -> DataFrame:
    return tables.records.filter((F.col("topic") == METADATA_TOPIC) & F.col("error").isNull() & (F.col("offset") >= 0))


def high_watermarks(tables: Tables) -> DataFrame:
    """(cluster_id, hwm): exclusive end of the committed log."""
    traced = (tables.traces.filter(F.col("event") == "hwm_advanced").groupBy("cluster_id")
              .agg(F.max("hwm").alias("traced_hwm")))
    meta = metadata_records(tables)
    nodes = meta.groupBy("cluster_id").agg(F.countDistinct("node_id").alias("nodes"))
    held = (meta.filter("crc_valid").groupBy("cluster_id", "offset", "batch_digest")
            .agg(F.countDistinct("node_id").alias("holders")).join(nodes, "cluster_id")
            .withColumn("majority", F.col("holders") >= F.floor(F.col("nodes") / 2) + 1))
    # The majority prefix ends at the first offset without a majority copy.
    first_gap = (held.groupBy("cluster_id", "offset").agg(F.max("majority").alias("ok"))
                 .groupBy("cluster_id").agg(F.min(F.when(~F.col("ok"), F.col("offset"))).alias("gap"),
                                            (F.max("offset") + 1).alias("end")))
    majority = first_gap.select("cluster_id", F.coalesce("gap", "end").alias("majority_hwm"))
    return (majority.join(traced, "cluster_id", "left")
            .select("cluster_id", F.coalesce("traced_hwm", "majority_hwm").alias("hwm")))


def stop_offsets(tables: Tables, hwm: DataFrame, at_offset: int | None, at_time_ms: int | None) -> DataFrame:
    """(cluster_id, hwm, stop_offset): the image is taken after the record at stop_offset (inclusive)."""
    last = F.col("hwm") - 1
    if at_offset is not None:
        return hwm.withColumn("stop_offset", F.least(F.lit(at_offset), last))
    if at_time_ms is not None:
        before = (metadata_records(tables).join(hwm, "cluster_id").filter(F.col("offset") < F.col("hwm"))
                  .filter(F.col("timestamp") <= at_time_ms).groupBy("cluster_id")
                  .agg(F.max("offset").alias("at_time")))
        return hwm.join(before, "cluster_id", "left").withColumn("stop_offset", F.coalesce("at_time", F.lit(-1))) \
            .drop("at_time")
    return hwm.withColumn("stop_offset", last)


def committed(tables: Tables, hwm: DataFrame) -> DataFrame:
    """One copy of every committed metadata-log record: the lowest node id holding a valid copy."""
    meta = metadata_records(tables).filter("crc_valid").join(hwm, "cluster_id").filter(F.col("offset") < F.col("hwm"))
    cols = [c for c in meta.columns if c not in ("cluster_id", "offset")]
    pick = F.min_by(F.struct(*cols), F.col("node_id")).alias("r")
    return meta.groupBy("cluster_id", "offset").agg(pick).select("cluster_id", "offset", "r.*")


def chosen_snapshot(tables: Tables, stops: DataFrame) -> DataFrame:
    """The records of the snapshot each cluster's replay starts from, from the lowest node id holding it.

    None when the committed log reaches back to offset 0: the replay then applies every record, so the histories
    keep what happened below a snapshot (brokers registered and unfenced before it). Otherwise the earliest
    snapshot within the stop offset that the committed log continues from (its end at or after the log's first
    offset), and failing that the latest one within the stop offset (as log_replay.load_committed takes it). The
    bootstrap snapshot (end offset 0) holds no image."""
    first = (committed(tables, stops.select("cluster_id", "hwm")).groupBy("cluster_id")
             .agg(F.min("offset").alias("log_first")))
    snaps = (tables.snapshots.filter(F.col("error").isNull() & (F.col("snapshot_end_offset") > 0))
             .join(stops, "cluster_id").filter(F.col("snapshot_end_offset") <= F.col("stop_offset") + 1)
             .join(first, "cluster_id", "left").filter(F.coalesce("log_first", F.lit(1)) > 0))
    end = F.col("snapshot_end_offset")
    continues = end >= F.coalesce("log_first", F.lit(2**62))
    # max over (continues, end ranked, lowest node): the earliest continued-from snapshot, else the latest.
    rank = F.struct(continues.alias("c"), F.when(continues, -end).otherwise(end).alias("e"),
                    (-F.col("node_id")).alias("node"))
    best = snaps.withColumn("rank", rank).groupBy("cluster_id").agg(F.max("rank").alias("b"))
    return (snaps.withColumn("rank", rank).join(best, "cluster_id")
            .filter(F.col("rank") == F.col("b")).drop("rank", "b", "log_first"))


def replay_input(tables: Tables, stops: DataFrame) -> DataFrame:
    """Per cluster: the chosen snapshot's records, then the committed log after it up to the stop offset."""
    snap = chosen_snapshot(tables, stops)
    snap_end = snap.groupBy("cluster_id").agg(F.max("snapshot_end_offset").alias("snap_end"))
    log = (committed(tables, stops.select("cluster_id", "hwm")).join(stops.select("cluster_id", "stop_offset"),
                                                                     "cluster_id")
           .join(snap_end, "cluster_id", "left").filter(F.col("offset") >= F.coalesce("snap_end", F.lit(0)))
           .filter(F.col("offset") <= F.col("stop_offset"))
           .filter(~F.col("is_control"))
           .select("cluster_id", "offset", "base_offset", "timestamp", "value", F.lit(False).alias("from_snapshot"),
                   "stop_offset", F.col("offset").alias("order")))
    # A snapshot's records all stand at its end offset; `order` (their offset inside the snapshot file) keeps them
    # in the order they were written: a broker's registration before the change that unfences it.
    snap_rows = (snap.filter(~F.col("is_control"))
                 .select("cluster_id", (F.col("snapshot_end_offset") - 1).alias("offset"), "base_offset", "timestamp",
                         "value", F.lit(True).alias("from_snapshot"), "stop_offset", F.col("offset").alias("order")))
    return log.unionByName(snap_rows)
