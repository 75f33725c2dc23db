"""`pykraft analyze`: the whole batch job.

1. Every segment, snapshot and trace decoded once into Parquet (OUT/records, OUT/snapshots, OUT/traces); every
   later job reads those files.
2. One pass per cluster over its committed metadata log (cluster_pass.py), persisted: high watermark, stop offset,
   the controller's replay, the histories. A stop offset before what the directories hold ends here (exit 2).
3. The tables cut from the pass and the traces, and the per-replica log summary, written side by side.
4. The audits (metadata log, partition logs, client histories), written side by side.
5. OUT/summary.json (verdicts, first offending rows, what each audit looked at, the image) and OUT/report.html.
Independent writes run from threads (tables.parallel): on small inputs most of a Spark job is driver latency.
An input of one shuffle partition is read as one partition all along (tables.one_partition): each table or audit
is then one stage, where joins, windows and groupings each cost a stage and a job (measured on the quickstart's
directories: 140 Spark jobs and 212 tasks before, 82 and 85 after; the JVM's CPU 80 -> 64 s).
"""

from __future__ import annotations

import json
import math
import os
import threading
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from . import jobs, partition_audits
from .cluster_pass import StopAt
from .jobs import Results
from .layout import LayoutError, data_directories, find_files
from .progress import Progress
from .summary import AUDITS, audit_summary, clusters, failing, read_small
from .tables import INPUT_TABLES, one_partition, parallel, write_inputs

__all__ = ["AnalyzeOptions", "Progress", "analyze", "failing"]
STEPS = 5
SHUFFLE_BYTES = 128 * 1024 * 1024  # input bytes per shuffle partition (small inputs: one)
BROADCAST_BYTES = "10485760"  # Spark's default threshold for broadcasting a join's smaller side


class UnreachableOffsetError(LayoutError):
    """--at-offset / --at-time before what the directories hold: the CLI prints it and exits 2."""


@dataclass(frozen=True, slots=True)
class AnalyzeOptions:
    roots: list[str]
    out: str
    at_offset: int | None = None
    at_time_ms: int | None = None


def size_shuffles(spark: SparkSession, roots: list[str]) -> int:
    """Shuffle partitions sized to the input: Spark's default of 200 (or 4) tasks per shuffle costs more than the
    work itself on a few megabytes. An input of one shuffle partition is read as one partition all along
    (tables.one_partition): no join then broadcasts its smaller side either (a broadcast is a job of its own)."""
    total = sum(os.path.getsize(f.path) for f in find_files(roots, snapshots=False))
    count = max(1, min(64, math.ceil(total / SHUFFLE_BYTES)))
    spark.conf.set("spark.sql.shuffle.partitions", str(count))
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", "-1" if count == 1 else BROADCAST_BYTES)
    return count


def analyze(spark: SparkSession, options: AnalyzeOptions, progress: Progress | None = None) -> dict[str, Any]:
    find_files(options.roots, snapshots=False)  # LayoutError (exit 2) before any Spark work
    progress = progress or Progress(STEPS, spark=spark)
    try:
        return _analyze(spark, options, progress)
    finally:
        progress.close()


def _analyze(spark: SparkSession, options: AnalyzeOptions, progress: Progress) -> dict[str, Any]:
    shuffles = size_shuffles(spark, options.roots)
    out = options.out
    progress.start("decoding segments, snapshots and traces into Parquet")
    tables = write_inputs(spark, options.roots, out)
    if shuffles == 1:
        tables = one_partition(tables)
    progress.step("records, snapshots and traces written")

    progress.start("one pass per cluster over the committed metadata log; the log-wide audits")
    results = Results()
    jobs.trace_tables(tables, results)
    jobs.log_summary(tables, results)
    jobs.audit_readable(tables, results)
    jobs.audit_replicas(tables, results)
    jobs.audit_epochs(tables, results)
    jobs.audit_linearizability(tables, results)
    partition_audits.log_audits(tables, results)
    first = _frames(results)
    pass_rows: list[DataFrame] = []

    def replay() -> None:
        _describe(spark, "the per-cluster pass")
        rows = jobs.run_cluster_pass(tables, StopAt(options.at_offset, options.at_time_ms))
        problems = [r["detail"] for r in rows.filter(F.col("kind") == "unreachable").select("detail").collect()]
        if problems:
            raise UnreachableOffsetError(problems[0])
        pass_rows.append(rows)

    parallel(replay, *_writers(spark, out, first))
    progress.step(f"metadata log replayed per cluster; {len(first)} tables and audits written")

    progress.start("tables and audits from the replay")
    rows = pass_rows[0]
    jobs.pass_tables(rows, results)
    jobs.audit_replay_epochs(results)
    shared = partition_audits.image_audits(tables, results)
    second = {k: v for k, v in _frames(results).items() if k not in first}
    warm = _import_report_meanwhile()
    parallel(*_writers(spark, out, second))
    progress.step(f"{len(second)} more tables and audits written")
    for frame in [rows, *shared]:
        frame.unpersist()
    warm.join()

    progress.start("summary")
    summary = build_summary(spark, options, results)
    progress.step("summary")
    from .report import write_report  # matplotlib is imported only when a report is written

    summary["report"] = write_report(out, summary)
    with open(os.path.join(out, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=2, sort_keys=True, default=str)
    progress.step("report")
    return summary


def _import_report_meanwhile() -> threading.Thread:
    """Import the report's modules (matplotlib, seconds on a loaded machine) from a thread while Spark writes the
    last tables: the driver's Python mostly waits on the JVM then."""
    def load() -> None:
        from . import report  # noqa: F401

    thread = threading.Thread(target=load, name="analyze-report-import", daemon=True)
    thread.start()
    return thread


def _frames(results: Results) -> dict[str, DataFrame]:
    return {**results.tables, **{f"audit_{k}": v for k, v in results.audits.items()}}


def _describe(spark: SparkSession, what: str) -> None:
    spark.sparkContext.setJobDescription(what)  # a thread's own property: names its jobs in Spark's event log


def _writers(spark: SparkSession, out: str, frames: dict[str, DataFrame]) -> list:
    def writer(name: str, frame: DataFrame):
        def write() -> None:
            _describe(spark, f"write {name}")
            frame.write.mode("overwrite").parquet(os.path.join(out, name))
        return write

    return [writer(name, frame) for name, frame in frames.items()]


def looked_at(out: str) -> dict[str, int]:
    """How many rows each audit looked at, from the small tables written (no Spark job)."""
    logs = read_small(out, "log_summary")
    total = lambda rows, key, keep=lambda r: True: sum(r[key] or 0 for r in rows if keep(r))
    metadata = lambda r: r["topic"] == "__cluster_metadata"
    committed = total(read_small(out, "record_counts"), "count")
    events = read_small(out, "node_events")
    return {
        "readable": total(logs, "records"), "epochs": total(logs, "records"),
        "replicas": total(logs, "records", metadata),
        "partition_replicas": total(logs, "records", lambda r: not metadata(r)),
        "idempotence": total(logs, "idempotent_batches"), "consumer_groups": total(logs, "offset_commits"),
        "kip841": committed, "replay": committed,
        "leaders_per_epoch": len(read_small(out, "leaders")) + len(read_small(out, "elections")),
        "replay_epochs": len(read_small(out, "partition_history")) + len(read_small(out, "broker_history")),
        "linearizability": total(read_small(out, "linearizability"), "operations"),
        "acknowledged": sum((r["acked"] or 0) + (r["failed"] or 0) for r in read_small(out, "acknowledged_history")),
        "kip841_brokers": sum(1 for e in events if e["event"] == "isr_view"),
    }


def build_summary(spark: SparkSession, options: AnalyzeOptions, results: Results) -> dict[str, Any]:
    spark.sparkContext.setJobDescription("summary")
    out = options.out
    written = sorted(name for name in os.listdir(out) if os.path.isdir(os.path.join(out, name))
                     and os.path.exists(os.path.join(out, name, "_SUCCESS")))
    assert set(results.audits) <= set(AUDITS), set(results.audits) - set(AUDITS)
    return {"clusters": clusters(out), "audits": audit_summary(spark, out, list(results.audits), looked_at(out)),
            "data_directories": data_directories(options.roots), "tables": written,
            "inputs": [os.path.abspath(r) for r in options.roots],
            "input_tables": [t for t in INPUT_TABLES if t in written]}
