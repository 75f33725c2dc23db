"""The metadata-log jobs of `pykraft analyze`, as DataFrame work over the input tables (tables.py): the per-cluster
pass (cluster_pass.py: high watermark, stop offset, the controller's replay, histories) run once per cluster on the
executors, the tables cut from its output, the traces' timelines, and the metadata-log audits. Each audit is a
DataFrame of offending rows: empty means it passes. The user-partition audits are in partition_audits.py.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from .cluster_pass import INPUT_DDL, PASS_COLUMNS, PASS_DDL, StopAt, cluster_pass
from .decode import METADATA_TOPIC, TORN_TAIL
from .linearize import VERDICT_DDL, check_group
from .tables import Tables, metadata_records


@dataclass
class Results:
    tables: dict[str, DataFrame] = field(default_factory=dict)  # written to Parquet, one folder each
    audits: dict[str, DataFrame] = field(default_factory=dict)  # offending rows; also written
    looked_at: dict[str, str] = field(default_factory=dict)  # audit -> what its rows count (filled in by run.py)


def _pass_function(at: StopAt):
    names = [n for n, _ in PASS_COLUMNS]

    def run(frame: pd.DataFrame) -> pd.DataFrame:
        rows = cluster_pass(str(frame["cluster_id"].iloc[0]), frame, at)
        return pd.DataFrame([[row.get(n) for n in names] for row in rows], columns=names, dtype=object)

    return run


def _blank(columns: list[str]) -> list:
    types = dict(part.strip().split(" ", 1) for part in INPUT_DDL.replace("`", "").split(","))  # no nested types
    return [F.lit(None).cast(types[c]).alias(c) for c in columns]


def run_cluster_pass(tables: Tables, at: StopAt) -> DataFrame:
    """Every cluster's pass rows (cluster_pass.py), one pandas group per cluster, persisted: every table below
    is cut from them. Only the values of metadata records travel to Python (the replay decodes nothing else), and
    only the payloads of control records (leaders, voters)."""
    control = F.col("is_control")
    value = F.when(F.col("record_type").isNotNull() & ~control, F.col("value")).alias("value")
    payload = F.when(control, F.col("payload")).alias("payload")
    common = ["node_id", "offset", "base_offset", "leader_epoch", "timestamp"]
    flags = ["crc_valid", "batch_digest", "is_control", "control_type", "record_type"]
    log = metadata_records(tables).select("cluster_id", F.lit("log").alias("source"), *common, value, *flags,
                                          payload, *_blank(["snapshot_end_offset", "hwm"]))
    snaps = tables.snapshots.filter(F.col("error").isNull()).select(
        "cluster_id", F.lit("snapshot").alias("source"), *common, value, *flags, payload, "snapshot_end_offset",
        *_blank(["hwm"]))
    traced = (tables.traces.filter(F.col("event") == "hwm_advanced").groupBy("cluster_id", "node_id")
              .agg(F.max("hwm").alias("hwm"))
              .select("cluster_id", F.lit("trace").alias("source"), "node_id",
                      *_blank(common[1:] + ["value"] + flags + ["payload", "snapshot_end_offset"]), "hwm"))
    rows = log.unionByName(snaps).unionByName(traced)
    return rows.groupBy("cluster_id").applyInPandas(_pass_function(at), PASS_DDL).persist()


PASS_TABLES: dict[str, tuple[str, list[str]]] = {  # table -> (kind, its columns as SQL)
    "image_brokers": ("image_broker", ["cluster_id", "offset", "broker_id", "broker_epoch", "fenced",
                                       "in_controlled_shutdown", "state"]),
    "image_partitions": ("image_partition", ["cluster_id", "offset", "topic", "topic_id", "partition", "leader",
                                             "isr", "replicas", "adding_replicas", "removing_replicas",
                                             "leader_epoch", "partition_epoch"]),
    "image_features": ("image_feature", ["cluster_id", "offset", "name", "level"]),
    "image_users": ("image_user", ["cluster_id", "offset", "name", "detail"]),
    "image_acls": ("image_acl", ["cluster_id", "offset", "name", "state", "detail"]),
    "partition_history": ("partition", ["cluster_id", "offset", "timestamp", "topic", "topic_id", "partition",
                                        "leader", "isr", "replicas", "adding_replicas", "removing_replicas",
                                        "leader_epoch", "partition_epoch", "detail"]),
    "broker_history": ("broker", ["cluster_id", "offset", "timestamp", "broker_id", "broker_epoch", "fenced",
                                  "in_controlled_shutdown", "state", "detail"]),
    "leaders": ("leader", ["cluster_id", "leader_epoch", "offset", "timestamp", "leader AS leader_id"]),
    "voters": ("voters", ["cluster_id", "offset", "timestamp", "voters"]),
    "record_counts": ("record_count", ["cluster_id", "name AS record_type", "count"]),
    "commit_rate": ("commit_rate", ["cluster_id", "offset AS second", "count AS records"]),
    "image_voters": ("image_voters", ["cluster_id", "offset", "voters", "detail"]),
    "high_watermarks": ("stops", ["cluster_id", "hwm", "stop_offset", "first_offset", "snapshot_end_offset",
                                  "node_id AS snapshot_node"]),
}


def pass_tables(rows: DataFrame, results: Results) -> None:
    kind = F.col("kind")
    for name, (wanted, columns) in PASS_TABLES.items():
        results.tables[name] = rows.filter(kind == wanted).selectExpr(*columns)
    results.audits["kip841"] = rows.filter(kind == "kip841").select(
        "cluster_id", "offset", "timestamp", "topic", "partition", "leader", "isr", "detail")
    results.audits["replay"] = rows.filter(kind == "replay_error").select("cluster_id", "offset", "detail")


def trace_tables(tables: Tables, results: Results) -> None:
    """The nodes' own timelines: every role change, broker state change and ISR view (one table, the report's
    markers), elections and the traced high watermarks."""
    traces = tables.traces
    results.tables["elections"] = (traces.filter(F.col("event") == "became_leader")
                                   .select("cluster_id", "node_id", "epoch", "ts_ms"))
    results.tables["hwm_history"] = (traces.filter(F.col("event") == "hwm_advanced")
                                     .select("cluster_id", "node_id", "ts_ms", "hwm"))
    results.tables["node_events"] = traces.filter(F.col("event") != "hwm_advanced")


def log_summary(tables: Tables, results: Results) -> None:
    """Per replica: records, offsets, segments, batches (whose first record is still there), idempotent batches,
    committed offsets (group records), damaged rows. The audits' row counts come from it too."""
    flag = lambda c: F.sum(c.cast("long"))
    first = F.col("offset") == F.col("base_offset")
    results.tables["log_summary"] = (
        tables.records.groupBy("cluster_id", "node_id", "topic", "partition")
        .agg(F.count("*").alias("records"), F.min(F.when(F.col("offset") >= 0, F.col("offset"))).alias("first_offset"),
             F.max("offset").alias("last_offset"), F.countDistinct("file").alias("segments"),
             flag(first).alias("batches"), flag(first & (F.col("producer_id") >= 0) & ~F.col("is_control")
                                                & (F.col("base_sequence") >= 0)).alias("idempotent_batches"),
             flag(F.col("record_type") == "OFFSET_COMMIT").alias("offset_commits"),
             flag(F.col("error").isNotNull()).alias("errors")))


def audit_readable(tables: Tables, results: Results) -> None:
    """Damage: a batch or file that cannot be read (a torn tail at a file's end is a crash artefact, not damage)."""
    results.audits["readable"] = (tables.records.filter(F.col("error").isNotNull()
                                                        & ~F.col("error").startswith(TORN_TAIL))
                                  .select("cluster_id", "node_id", "topic", "partition", "file", "position",
                                          "offset", "error"))


def audit_replicas(tables: Tables, results: Results) -> None:
    """Raft's log matching on the metadata log: every offset held by two or more replicas under the same leader
    epoch has identical batch bytes. The offending rows are the copies that differ from the most common one (on a
    tie, from a copy whose CRC holds, then the lowest node id)."""
    rows = metadata_records(tables)
    key = ["cluster_id", "topic", "partition", "offset", "leader_epoch"]
    copies = rows.groupBy(*key, "batch_digest", "crc_valid").agg(F.count("*").alias("copies"),
                                                                  F.min("node_id").alias("min_node"))
    best = F.max(F.struct("copies", "crc_valid", (-F.col("min_node")).alias("node"), "batch_digest"))
    majority = (copies.groupBy(*key).agg(best.alias("best"), F.count("*").alias("variants"),
                                         F.sum("copies").alias("replicas"))
                .filter(F.col("variants") > 1)
                .select(*key, F.col("best.batch_digest").alias("majority_digest"), "replicas"))
    results.audits["replicas"] = (rows.join(majority, key).filter(F.col("batch_digest") != F.col("majority_digest"))
                                  .select("cluster_id", "topic", "partition", "offset", "leader_epoch", "node_id",
                                          "file", "position", "base_offset", "crc_valid", "batch_digest",
                                          "majority_digest", "replicas"))


def audit_epochs(tables: Tables, results: Results) -> None:
    """Per replica, leader epochs never decrease along the log; at most one leader per epoch (LeaderChange records
    of every replica and the nodes' traces). (audit_replay_epochs: broker and partition epochs never decrease
    along the replay.)"""
    # Record by record (each row carries its batch's epoch): a batch whose first record the log cleaner removed
    # still counts, and a decrease shows where two batches meet.
    batches = (tables.records.filter(F.col("offset") >= 0)
               .select("cluster_id", "node_id", "topic", "partition", "file", "position", "base_offset", "offset",
                       "leader_epoch"))
    along = Window.partitionBy("cluster_id", "node_id", "topic", "partition").orderBy("offset")
    decreasing = (batches.withColumn("previous_epoch", F.lag("leader_epoch").over(along))
                  .filter(F.col("leader_epoch") < F.col("previous_epoch"))
                  .select("cluster_id", F.lit("leader epoch decreases along the log").alias("problem"), "node_id",
                          "topic", "partition", "base_offset", "leader_epoch", "previous_epoch", "file", "position"))
    leader_changes = (metadata_records(tables).filter(F.col("control_type") == "LEADER_CHANGE")
                      .select("cluster_id", F.col("leader_epoch").alias("epoch"),
                              F.get_json_object("payload", "$.leaderId").cast("int").alias("leader")))
    traced = (tables.traces.filter(F.col("event") == "became_leader")
              .select("cluster_id", "epoch", F.col("node_id").alias("leader")))
    two_leaders = (leader_changes.unionByName(traced).groupBy("cluster_id", "epoch")
                   .agg(F.array_sort(F.collect_set("leader")).alias("leaders")).filter(F.size("leaders") > 1))
    results.audits["epochs"] = decreasing
    results.audits["leaders_per_epoch"] = two_leaders


def audit_replay_epochs(results: Results) -> None:
    results.audits["replay_epochs"] = _replay_epochs(results)


def _replay_epochs(results: Results) -> DataFrame:
    parts = results.tables["partition_history"]
    along = Window.partitionBy("cluster_id", "topic_id", "partition").orderBy("offset")
    partition_back = (parts.withColumn("prev_leader_epoch", F.lag("leader_epoch").over(along))
                      .withColumn("prev_partition_epoch", F.lag("partition_epoch").over(along))
                      .filter((F.col("leader_epoch") < F.col("prev_leader_epoch"))
                              | (F.col("partition_epoch") < F.col("prev_partition_epoch")))
                      .select("cluster_id", "offset", F.concat_ws("-", "topic", "partition").alias("subject"),
                              F.lit("partition epoch decreases").alias("problem")))
    brokers = results.tables["broker_history"].filter(F.col("broker_epoch").isNotNull())
    by_broker = Window.partitionBy("cluster_id", "broker_id").orderBy("offset")
    broker_back = (brokers.withColumn("prev", F.lag("broker_epoch").over(by_broker))
                   .filter(F.col("broker_epoch") < F.col("prev"))
                   .select("cluster_id", "offset", F.concat(F.lit("broker "), F.col("broker_id")).alias("subject"),
                           F.lit("broker epoch decreases").alias("problem")))
    return partition_back.unionByName(broker_back)


def _check_history(frame: pd.DataFrame) -> pd.DataFrame:
    rows: list[dict[str, Any]] = [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}
            for r in frame.to_dict("records")]
    first = rows[0]
    verdict = check_group(first["history"], first["group_key"], first["model"] or "kv", rows)
    return pd.DataFrame([verdict])


def audit_linearizability(tables: Tables, results: Results) -> None:
    if tables.histories is None:
        return
    hist = tables.histories.fillna({"history": "", "model": "kv"})
    key = F.when(F.col("model") == "kv", F.get_json_object("input", "$[1]"))
    verdicts = (hist.withColumn("group_key", key).groupBy("history", "group_key")
                .applyInPandas(_check_history, VERDICT_DDL).persist())
    results.tables["linearizability"] = verdicts
    results.audits["linearizability"] = verdicts.filter(F.col("outcome") == "ILLEGAL")


def json_list(text: str | None) -> list:
    return [] if text is None else json.loads(text)


__all__ = ["METADATA_TOPIC", "Results", "StopAt"]
