"""The jobs of `pykraft analyze`, as DataFrame work over the input tables (tables.py): the controller's replay
per cluster (image, partition and broker histories, KIP-841), the leadership, voter and commit histories, and
the audits. Each audit is a DataFrame of offending rows: empty means it passes.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from .decode import TORN_TAIL
from .linearize import VERDICT_DDL, check_group
from .replay import REPLAY_COLUMNS, REPLAY_DDL, InputRecord, replay_cluster
from .tables import Tables, committed, metadata_records, replay_input


@dataclass
class Results:
    tables: dict[str, DataFrame] = field(default_factory=dict)  # written to Parquet, one folder each
    audits: dict[str, DataFrame] = field(default_factory=dict)  # offending rows; also written


def _replay_group(frame: pd.DataFrame) -> pd.DataFrame:
    # Rows reach the group in no particular order: the snapshot's records first, in the order they were written.
    frame = frame.sort_values(["from_snapshot", "offset", "order"], ascending=[False, True, True], kind="stable")
    records = [InputRecord(int(o), int(b), int(t), None if v is None else bytes(v), bool(s))
               for o, b, t, v, s in zip(frame["offset"], frame["base_offset"], frame["timestamp"], frame["value"],
                                        frame["from_snapshot"])]
    stop = int(frame["stop_offset"].iloc[0])
    names = [n for n, _ in REPLAY_COLUMNS]
    rows = [[row.get(n) for n in names] for row in replay_cluster(str(frame["cluster_id"].iloc[0]), records, stop)]
    return pd.DataFrame(rows, columns=names, dtype=object)  # object: a missing value stays None, never NaN


def replay(tables: Tables, stops: DataFrame) -> DataFrame:
    """Every cluster's replay rows (replay.py), computed per cluster on the executors."""
    rows = replay_input(tables, stops).groupBy("cluster_id").applyInPandas(_replay_group, REPLAY_DDL)
    return rows.persist()


def image_and_history(rows: DataFrame, results: Results) -> None:
    kind = F.col("kind")
    keep = {"image_brokers": ("image_broker", ["cluster_id", "offset", "broker_id", "broker_epoch", "fenced",
                                               "in_controlled_shutdown", "state"]),
            "image_partitions": ("image_partition", ["cluster_id", "offset", "topic", "topic_id", "partition",
                                                     "leader", "isr", "replicas", "adding_replicas",
                                                     "removing_replicas", "leader_epoch", "partition_epoch"]),
            "image_features": ("image_feature", ["cluster_id", "offset", "name", "level"]),
            "image_users": ("image_user", ["cluster_id", "offset", "name", "detail"]),
            "image_acls": ("image_acl", ["cluster_id", "offset", "name", "state", "detail"]),
            "partition_history": ("partition", ["cluster_id", "offset", "timestamp", "topic", "topic_id", "partition",
                                                "leader", "isr", "replicas", "adding_replicas", "removing_replicas",
                                                "leader_epoch", "partition_epoch", "detail"]),
            "broker_history": ("broker", ["cluster_id", "offset", "timestamp", "broker_id", "broker_epoch", "fenced",
                                          "in_controlled_shutdown", "state", "detail"])}
    for name, (wanted, columns) in keep.items():
        results.tables[name] = rows.filter(kind == wanted).select(*columns)
    results.audits["kip841"] = rows.filter(kind == "kip841").select(
        "cluster_id", "offset", "timestamp", "topic", "partition", "leader", "isr", "detail")
    results.audits["replay"] = rows.filter(kind == "replay_error").select("cluster_id", "offset", "detail")


def histories(tables: Tables, hwm: DataFrame, results: Results) -> None:
    log = committed(tables, hwm)
    payload = F.col("payload")
    results.tables["leaders"] = (log.filter(F.col("control_type") == "LEADER_CHANGE")
                                 .select("cluster_id", "leader_epoch", "offset", "timestamp",
                                         F.get_json_object(payload, "$.leaderId").cast("int").alias("leader_id")))
    voter_ids = F.from_json(F.get_json_object(payload, "$.voters"), "array<struct<voterId:int>>")
    results.tables["voters"] = (log.filter(F.col("control_type") == "KRAFT_VOTERS")
                                .select("cluster_id", "offset", "timestamp",
                                        F.transform(voter_ids, lambda v: v["voterId"]).alias("voters")))
    results.tables["record_counts"] = (log.groupBy("cluster_id", F.coalesce("record_type", F.lit("(not metadata)"))
                                                   .alias("record_type")).count())
    second = F.floor(F.col("timestamp") / 1000).cast("long")
    results.tables["commit_rate"] = (log.groupBy("cluster_id", second.alias("second")).count()
                                     .withColumnRenamed("count", "records"))
    traces = tables.traces
    results.tables["elections"] = (traces.filter(F.col("event") == "became_leader")
                                   .select("cluster_id", "node_id", "epoch", "ts_ms"))
    results.tables["hwm_history"] = (traces.filter(F.col("event") == "hwm_advanced")
                                     .select("cluster_id", "node_id", "ts_ms", "hwm"))
    results.tables["log_summary"] = (tables.records.groupBy("cluster_id", "node_id", "topic", "partition")
                                     .agg(F.count("*").alias("records"), F.min("offset").alias("first_offset"),
                                          F.max("offset").alias("last_offset"),
                                          F.countDistinct("file").alias("segments")))


def audit_readable(tables: Tables, results: Results) -> None:
    """Damage: a batch or file that cannot be read (a torn tail at a file's end is a crash artefact, not damage)."""
    results.audits["readable"] = (tables.records.filter(F.col("error").isNotNull()
                                                        & ~F.col("error").startswith(TORN_TAIL))
                                  .select("cluster_id", "node_id", "topic", "partition", "file", "position",
                                          "offset", "error"))


def audit_replicas(tables: Tables, results: Results) -> None:
    """Raft's log matching: every offset held by two or more replicas under the same leader epoch has identical
    batch bytes. The offending rows are the copies that differ from the most common one (on a tie, from a copy
    whose CRC holds, then the lowest node id)."""
    rows = tables.records.filter(F.col("offset") >= 0)
    key = ["cluster_id", "topic", "partition", "offset", "leader_epoch"]
    copies = rows.groupBy(*key, "batch_digest", "crc_valid").agg(F.count("*").alias("copies"),
                                                                  F.min("node_id").alias("min_node"))
    ranked = copies.withColumn("rank", F.row_number().over(
        Window.partitionBy(*key).orderBy(F.desc("copies"), F.desc("crc_valid"), "min_node")))
    disputed = copies.groupBy(*key).agg(F.count("*").alias("variants"), F.sum("copies").alias("replicas")) \
        .filter(F.col("variants") > 1)
    majority = ranked.filter(F.col("rank") == 1).select(*key, F.col("batch_digest").alias("majority_digest"))
    results.audits["replicas"] = (rows.join(disputed, key).join(majority, key)
                                  .filter(F.col("batch_digest") != F.col("majority_digest"))
                                  .select("cluster_id", "topic", "partition", "offset", "leader_epoch", "node_id",
                                          "file", "position", "base_offset", "crc_valid", "batch_digest",
                                          "majority_digest", "replicas"))


def audit_epochs(tables: Tables, results: Results) -> None:
    """Per node, leader epochs never decrease along the log; at most one leader per epoch (LeaderChange records
    of every replica and the nodes' traces); broker and partition epochs never decrease along the replay."""
    batches = (tables.records.filter(F.col("offset") >= 0)
               .select("cluster_id", "node_id", "topic", "partition", "file", "position", "base_offset",
                       "leader_epoch").dropDuplicates(["cluster_id", "node_id", "topic", "partition", "base_offset"]))
    along = Window.partitionBy("cluster_id", "node_id", "topic", "partition").orderBy("base_offset")
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


def voters_at(tables: Tables, stops: DataFrame) -> DataFrame:
    """(cluster_id, voters JSON) of the latest KRaftVoters record at or before the stop offset (log or snapshot)."""
    log = metadata_records(tables).select("cluster_id", "offset", "payload", "control_type")
    snaps = tables.snapshots.select("cluster_id", (F.col("snapshot_end_offset") - 1).alias("offset"), "payload",
                                    "control_type")
    voters = (log.unionByName(snaps).filter(F.col("control_type") == "KRAFT_VOTERS").join(stops, "cluster_id")
              .filter(F.col("offset") <= F.col("stop_offset")))
    latest = voters.groupBy("cluster_id").agg(F.max_by(F.get_json_object("payload", "$.voters"), "offset")
                                              .alias("voters"))
    return latest


def json_list(text: str | None) -> list:
    return [] if text is None else json.loads(text)
