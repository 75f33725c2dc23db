"""`pykraft analyze`: the whole batch job. Loads the tables, runs the jobs and audits, writes every table as
Parquet under OUT (one folder each), OUT/summary.json (verdicts, first offending rows, the image at the chosen
offset in the field names of Kafka's metadata records) and OUT/report.html; returns the summary."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TextIO

from pyspark.sql import DataFrame, SparkSession

from . import jobs
from .jobs import Results
from .layout import data_directories, find_files
from .tables import Tables, high_watermarks, load_tables, stop_offsets

FIRST_ROWS = 5
# Ordering of each audit's offending rows: the first one is "the first divergence".
AUDIT_ORDER = {"readable": ["cluster_id", "node_id", "file", "position"],
               "replicas": ["cluster_id", "topic", "partition", "offset", "node_id"],
               "kip841": ["cluster_id", "offset", "topic", "partition"], "replay": ["cluster_id", "offset"],
               "epochs": ["cluster_id", "node_id", "base_offset"], "leaders_per_epoch": ["cluster_id", "epoch"],
               "replay_epochs": ["cluster_id", "offset"], "linearizability": ["history", "key"]}


@dataclass(frozen=True, slots=True)
class AnalyzeOptions:
    roots: list[str]
    out: str
    at_offset: int | None = None
    at_time_ms: int | None = None


class Progress:
    """A one-line progress bar on stderr."""

    def __init__(self, steps: int, stream: TextIO | None = None) -> None:
        self.steps, self.done, self.stream = steps, 0, stream or sys.stderr

    def step(self, what: str) -> None:
        self.done += 1
        filled = round(20 * self.done / self.steps)
        print(f"analyze [{'#' * filled}{'.' * (20 - filled)}] {self.done}/{self.steps} {what}",
              file=self.stream, flush=True)


def analyze(spark: SparkSession, options: AnalyzeOptions, progress: Progress | None = None) -> dict[str, Any]:
    find_files(options.roots, snapshots=False)  # LayoutError (exit 2) before any Spark work
    progress = progress or Progress(7)
    tables = load_tables(spark, options.roots)
    progress.step("reading segments, snapshots and traces")
    hwm = high_watermarks(tables).persist()
    stops = stop_offsets(tables, hwm, options.at_offset, options.at_time_ms).persist()
    results = Results()
    rows = jobs.replay(tables, stops)
    jobs.image_and_history(rows, results)
    progress.step("replaying the committed metadata log")
    jobs.histories(tables, hwm, results)
    progress.step("histories")
    jobs.audit_readable(tables, results)
    jobs.audit_replicas(tables, results)
    jobs.audit_epochs(tables, results)
    jobs.audit_linearizability(tables, results)
    progress.step("audits")
    results.tables["high_watermarks"] = stops
    _write_tables(results, options.out, progress)
    summary = build_summary(spark, tables, stops, results, options)
    progress.step("summary")
    from .report import write_report  # matplotlib is imported only when a report is written

    summary["report"] = write_report(spark, options.out, summary)
    with open(os.path.join(options.out, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=2, sort_keys=True, default=str)
    progress.step("report")
    return summary


def _write_tables(results: Results, out: str, progress: Progress) -> None:
    for name, frame in {**results.tables, **{f"audit_{k}": v for k, v in results.audits.items()}}.items():
        frame.write.mode("overwrite").parquet(os.path.join(out, name))
    progress.step(f"{len(results.tables) + len(results.audits)} Parquet tables written")


def build_summary(spark: SparkSession, tables: Tables, stops: DataFrame, results: Results,
                  options: AnalyzeOptions) -> dict[str, Any]:
    spark.sparkContext.setJobDescription("summary")
    audits = {}
    for name, frame in sorted(results.audits.items()):
        # Read back from the Parquet just written: the audit is not recomputed.
        written = spark.read.parquet(os.path.join(options.out, f"audit_{name}"))
        count = written.count()
        first = [r.asDict(recursive=True) for r in written.orderBy(*AUDIT_ORDER[name]).limit(FIRST_ROWS).collect()]
        audits[name] = {"verdict": "fail" if count else "pass", "offending": count, "first": first}
    # The tables' `file` column is the path below the node's data directory: these name the directories.
    return {"clusters": _clusters(spark, options.out, tables, stops), "audits": audits,
            "data_directories": data_directories(options.roots), "tables": sorted(os.listdir(options.out))}


def _read(spark: SparkSession, out: str, name: str) -> DataFrame:
    return spark.read.parquet(os.path.join(out, name))


def _clusters(spark: SparkSession, out: str, tables: Tables, stops: DataFrame) -> list[dict[str, Any]]:
    voters = {r["cluster_id"]: jobs.json_list(r["voters"]) for r in jobs.voters_at(tables, stops).collect()}
    brokers = _grouped(_read(spark, out, "image_brokers"), lambda r: {
        "brokerId": r["broker_id"], "brokerEpoch": r["broker_epoch"], "fenced": r["fenced"],
        "inControlledShutdown": r["in_controlled_shutdown"], "state": r["state"]}, ["broker_id"])
    partitions = _grouped(_read(spark, out, "image_partitions"), lambda r: r, ["topic", "partition"])
    features = _grouped(_read(spark, out, "image_features"),
                        lambda r: {"name": r["name"], "featureLevel": r["level"]}, ["name"])
    users = _grouped(_read(spark, out, "image_users"), lambda r: {"user": r["name"], "credentials": r["detail"]},
                     ["name"])
    acls = _grouped(_read(spark, out, "image_acls"), lambda r: {
        "principal": r["name"], "permission": r["state"], "acl": r["detail"]}, ["detail", "name"])
    clusters = []
    for row in stops.orderBy("cluster_id").collect():
        cid = row["cluster_id"]
        clusters.append({"clusterId": cid, "highWatermark": row["hwm"], "offset": row["stop_offset"],
                         "image": {"brokers": brokers.get(cid, []), "topics": _topics(partitions.get(cid, [])),
                                   "features": features.get(cid, []), "voters": voters.get(cid, []),
                                   "users": users.get(cid, []), "acls": acls.get(cid, [])}})
    return clusters


def _grouped(frame: DataFrame, shape: Callable[[dict], dict], order: list[str]) -> dict[str, list[dict]]:
    grouped: dict[str, list[dict]] = {}
    for row in frame.orderBy("cluster_id", *order).collect():
        grouped.setdefault(row["cluster_id"], []).append(shape(row.asDict(recursive=True)))
    return grouped


def _topics(partitions: list[dict]) -> list[dict]:
    topics: dict[str, dict] = {}
    for p in partitions:
        topic = topics.setdefault(p["topic"], {"name": p["topic"], "topicId": p["topic_id"], "partitions": []})
        topic["partitions"].append({"partitionId": p["partition"], "leader": p["leader"], "isr": p["isr"],
                                    "replicas": p["replicas"], "addingReplicas": p["adding_replicas"],
                                    "removingReplicas": p["removing_replicas"], "leaderEpoch": p["leader_epoch"],
                                    "partitionEpoch": p["partition_epoch"]})
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

