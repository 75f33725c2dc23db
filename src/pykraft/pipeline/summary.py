"""OUT/summary.json from the Parquet tables just written: the audits' verdicts (offending rows counted from the
files' footers, the first ones read and ordered), what each audit checks and how many rows it looked at, the image
of each cluster at its stop offset in the field names of Kafka's metadata records, the tables, the inputs.

Small tables (images, counts, a passing audit's empty file) are read with pyarrow on the driver: a Spark job costs
more than the read. A large offending table is ordered and cut by Spark (`first_rows`)."""

from __future__ import annotations

import json
import os
from typing import Any

import pyarrow.parquet as pq
from pyspark.sql import SparkSession

FIRST_ROWS = 5
DRIVER_ROWS = 20_000  # above this, a table's first rows are ordered by Spark, not read whole to the driver

# name -> (what it checks, the order of its offending rows: the first is "the first divergence", what it counts)
AUDITS: dict[str, tuple[str, list[str], str]] = {
    "readable": ("every batch of every segment can be read (a torn tail at a file's end is a crash artefact)",
                 ["cluster_id", "node_id", "file", "position"], "records"),
    "replicas": ("Raft's log matching on the metadata log: copies of an offset under one leader epoch are "
                 "byte-identical on every node", ["cluster_id", "topic", "partition", "offset", "node_id"],
                 "metadata-log records"),
    "kip841": ("KIP-841 in the committed metadata: no fenced or shutting-down broker leads a partition or is in an "
               "ISR (but as its last, leaderless member)", ["cluster_id", "offset", "topic", "partition"],
               "committed metadata records"),
    "replay": ("every committed metadata record applies to the image (the controller's own replay)",
               ["cluster_id", "offset"], "committed metadata records"),
    "epochs": ("leader epochs never decrease along any replica's log", ["cluster_id", "node_id", "base_offset"],
               "records"),
    "leaders_per_epoch": ("at most one leader per epoch (LeaderChange records and the nodes' traces)",
                          ["cluster_id", "epoch"], "leader changes and elections"),
    "replay_epochs": ("partition and broker epochs never decrease along the replay", ["cluster_id", "offset"],
                      "partition and broker changes"),
    "linearizability": ("client histories are linearizable (the simulator's checker)", ["history", "key"],
                        "client operations"),
    "partition_replicas": ("below the high watermark every replica of a partition holds the reference replica's "
                           "records (same epoch, same bytes, a valid CRC)",
                           ["cluster_id", "topic", "partition", "offset", "node_id"], "partition-log records"),
    "idempotence": ("no (producer id, epoch, sequence range) is twice in a replica's log",
                    ["cluster_id", "topic", "partition", "node_id", "offset"], "idempotent batches"),
    "acknowledged": ("every acknowledged record is at its offset on the leader and every ISR replica (lost); no "
                     "value more often than sent (duplicated); nothing no producer sent (phantom)",
                     ["kind", "cluster_id", "topic", "partition", "offset", "node_id"], "producer outcomes"),
    "consumer_groups": ("a group's committed offsets never move backwards within a generation",
                        ["cluster_id", "group", "topic", "partition", "offset"], "offset commits"),
    "kip841_brokers": ("KIP-841 as the partition leaders saw it: no ISR they used or proposed holds a broker "
                       "fenced or shutting down in the metadata they had applied", ["cluster_id", "ts_ms", "topic",
                                                                                   "partition"],
                       "ISR views traced by leaders"),
}


def parquet_rows(path: str) -> int:
    """Rows of a Spark-written Parquet folder, from the footers."""
    return sum(pq.read_metadata(os.path.join(root, f)).num_rows for root, _, files in os.walk(path)
               for f in files if f.endswith(".parquet"))


def read_small(out: str, name: str) -> list[dict[str, Any]]:
    """Every row of a small table (none when it was not written)."""
    path = os.path.join(out, name)
    if not os.path.isdir(path):
        return []
    return pq.ParquetDataset(path).read().to_pylist()


def first_rows(spark: SparkSession, out: str, name: str, order: list[str], count: int) -> list[dict[str, Any]]:
    path = os.path.join(out, name)
    if count == 0:
        return []
    if count <= DRIVER_ROWS:
        rows = read_small(out, name)
        return sorted(rows, key=lambda r: tuple((r.get(k) is None, r.get(k)) for k in order))[:FIRST_ROWS]
    return [r.asDict(recursive=True) for r in spark.read.parquet(path).orderBy(*order).limit(FIRST_ROWS).collect()]


def audit_summary(spark: SparkSession, out: str, names: list[str], looked_at: dict[str, int]) -> dict[str, Any]:
    audits = {}
    for name in sorted(names):
        checks, order, unit = AUDITS[name]
        count = parquet_rows(os.path.join(out, f"audit_{name}"))
        first = [{k: _plain(v) for k, v in r.items()} for r in first_rows(spark, out, f"audit_{name}", order, count)]
        audits[name] = {"verdict": "fail" if count else "pass", "offending": count, "first": first,
                        "checks": checks, "looked_at": looked_at.get(name, 0), "unit": unit}
    return audits


def _plain(value: Any) -> Any:
    return value.tolist() if hasattr(value, "tolist") else value


def clusters(out: str) -> list[dict[str, Any]]:
    """Each cluster's high watermark, stop offset and image, as summary.json has them."""
    def by_cluster(name: str, order: list[str]) -> dict[str, list[dict]]:
        grouped: dict[str, list[dict]] = {}
        for row in sorted(read_small(out, name), key=lambda r: tuple(str(r[k]) if k == "cluster_id" else r[k]
                                                                         for k in order)):
            grouped.setdefault(row["cluster_id"], []).append(row)
        return grouped

    brokers = by_cluster("image_brokers", ["cluster_id", "broker_id"])
    partitions = by_cluster("image_partitions", ["cluster_id", "topic", "partition"])
    features = by_cluster("image_features", ["cluster_id", "name"])
    users = by_cluster("image_users", ["cluster_id", "name"])  # SCRAM users: names and iterations, never a key
    acls = by_cluster("image_acls", ["cluster_id", "detail", "name"])
    voters = {r["cluster_id"]: json.loads(r["detail"]) for r in read_small(out, "image_voters")}
    found = []
    for stop in sorted(read_small(out, "high_watermarks"), key=lambda r: r["cluster_id"]):
        cid = stop["cluster_id"]
        found.append({"clusterId": cid, "highWatermark": stop["hwm"], "offset": stop["stop_offset"], "image": {
            "brokers": [{"brokerId": b["broker_id"], "brokerEpoch": b["broker_epoch"], "fenced": b["fenced"],
                         "inControlledShutdown": b["in_controlled_shutdown"], "state": b["state"]}
                        for b in brokers.get(cid, [])],
            "topics": _topics(partitions.get(cid, [])),
            "features": [{"name": f["name"], "featureLevel": f["level"]} for f in features.get(cid, [])],
            "voters": [{"voterId": v} for v in voters.get(cid, [])],
            "users": [{"user": u["name"], "credentials": u["detail"]} for u in users.get(cid, [])],
            "acls": [{"principal": a["name"], "permission": a["state"], "acl": a["detail"]}
                     for a in acls.get(cid, [])]}})
    return found


def _topics(partitions: list[dict]) -> list[dict]:
    topics: dict[str, dict] = {}
    for p in partitions:
        topic = topics.setdefault(p["topic"], {"name": p["topic"], "topicId": p["topic_id"], "partitions": []})
        topic["partitions"].append({"partitionId": p["partition"], "leader": p["leader"], "isr": list(p["isr"]),
                                    "replicas": list(p["replicas"]), "addingReplicas": list(p["adding_replicas"]),
                                    "removingReplicas": list(p["removing_replicas"]),
                                    "leaderEpoch": p["leader_epoch"], "partitionEpoch": p["partition_epoch"]})
    return list(topics.values())


def failing(summary: dict[str, Any]) -> list[str]:
    """One line per failing audit, naming its first offending row."""
    lines = []
    for name, audit in sorted(summary["audits"].items()):
        if audit["verdict"] == "fail":
            first = audit["first"][0] if audit["first"] else {}
            shown = ", ".join(f"{k}={v}" for k, v in first.items() if k not in ("batch_digest", "majority_digest"))
            lines.append(f"audit {name} FAILED: {audit['offending']} offending row(s); first: {shown}")
    return lines
