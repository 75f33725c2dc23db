"""OUT/report.html: one self-contained page (no script, no external URL; plots are inline matplotlib SVG) with
the cluster summary, the leadership timeline per node, commit rate and high watermark over time, metadata
record counts by type, ISR size over time per partition, the broker state timeline and the audit verdicts with
their first offending rows. Everything plotted is aggregated by Spark first and read from the Parquet tables."""

from __future__ import annotations

import html
import io
import os
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from pyspark.sql import SparkSession

SECTIONS = ("Cluster summary", "Leadership timeline", "Commit rate and high watermark", "Metadata records by type",
            "ISR size over time", "Broker state timeline", "Audit verdicts")
MAX_DIRECTORIES = 30  # listed in the report (thousands of simulated runs: all of them are in summary.json)
MAX_POINTS = 5000  # rows per plot read to the driver: plots of larger tables show a sample
_STYLE = ("body{font-family:sans-serif;margin:2em;max-width:1100px}table{border-collapse:collapse;margin:.5em 0}"
          "td,th{border:1px solid #bbb;padding:2px 6px;font-size:13px}.pass{color:#070}.fail{color:#b00}"
          "svg{max-width:100%;height:auto}")


def _svg(fig: Any) -> str:
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    text = buffer.getvalue()
    return text[text.index("<svg"):]  # drop the XML prolog and DOCTYPE: the SVG is inlined in HTML


def _pandas(spark: SparkSession, out: str, name: str, order: list[str]) -> Any:
    path = os.path.join(out, name)
    if not os.path.isdir(path):
        return None
    frame = spark.read.parquet(path).orderBy(*order).limit(MAX_POINTS).toPandas()
    return frame if len(frame) else None


def _table(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "<p>none</p>"
    columns = list(rows[0])
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(r.get(c)))}</td>" for c in columns) + "</tr>"
                   for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _lines(frame: Any, x: str, y: str, group: str, title: str, ylabel: str, step: bool = False) -> str:
    if frame is None:
        return "<p>no data</p>"
    fig, ax = plt.subplots(figsize=(10, 3.2))
    for key, part in frame.groupby(group):
        if step:
            ax.step(part[x], part[y], where="post", marker="o", markersize=3, label=f"{group} {key}")
        else:
            ax.plot(part[x], part[y], label=f"{group} {key}")
    ax.set_title(title)
    ax.set_xlabel(x)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=7, ncol=4)
    return _svg(fig)


def _bars(frame: Any) -> str:
    if frame is None:
        return "<p>no data</p>"
    fig, ax = plt.subplots(figsize=(10, 3.5))
    labels = [f"{c[:8]} {t}" for c, t in zip(frame["cluster_id"], frame["record_type"])]
    ax.barh(labels, frame["count"])
    ax.set_xscale("log")
    ax.set_title("metadata records by type (committed log)")
    ax.tick_params(axis="y", labelsize=7)
    return _svg(fig)


def _summary_section(summary: dict[str, Any]) -> str:
    parts = []
    for cluster in summary["clusters"]:
        image = cluster["image"]
        parts.append(f"<h3>cluster {html.escape(cluster['clusterId'])}</h3><p>high watermark "
                     f"{cluster['highWatermark']}, image after offset {cluster['offset']}; voters "
                     f"{[v.get('voterId') for v in image['voters']]}</p>")
        parts.append(_table(image["brokers"]))
        parts.append(_table([{"topic": t["name"], **p} for t in image["topics"] for p in t["partitions"]]))
        parts.append(_table(image["features"]))
        parts.append(_table(image.get("users", [])))  # SCRAM users: names and iterations only
        parts.append(_table(image.get("acls", [])))
    return "".join(parts)


def _audit_section(summary: dict[str, Any]) -> str:
    parts = []
    for name, audit in sorted(summary["audits"].items()):
        verdict = audit["verdict"]
        parts.append(f"<h3>{html.escape(name)}: <span class='{verdict}'>{verdict.upper()}</span> "
                     f"({audit['offending']} offending rows)</h3>{_table(audit['first']) if audit['first'] else ''}")
    directories = summary.get("data_directories", [])
    more = (f"<p>{len(directories) - MAX_DIRECTORIES} more in summary.json</p>"
            if len(directories) > MAX_DIRECTORIES else "")
    parts.append("<h3>data directories</h3><p>a row's <code>file</code> is the path below its node's data "
                 f"directory:</p>{_table(directories[:MAX_DIRECTORIES])}{more}")
    return "".join(parts)


def write_report(spark: SparkSession, out: str, summary: dict[str, Any]) -> str:
    elections = _pandas(spark, out, "elections", ["ts_ms"])
    hwm = _pandas(spark, out, "hwm_history", ["ts_ms"])
    rate = _pandas(spark, out, "commit_rate", ["second"])
    counts = _pandas(spark, out, "record_counts", ["cluster_id", "record_type"])
    isr = _pandas(spark, out, "partition_history", ["offset"])
    brokers = _pandas(spark, out, "broker_history", ["offset"])
    if isr is not None:
        isr["isr_size"] = isr["isr"].map(len)
        isr["tp"] = isr["topic"] + "-" + isr["partition"].astype(str)
    if brokers is not None:
        brokers["state_code"] = brokers["state"].map({"UNREGISTERED": 0, "FENCED": 1, "CONTROLLED_SHUTDOWN": 2,
                                                      "UNFENCED": 3})
    body = {
        SECTIONS[0]: _summary_section(summary),
        SECTIONS[1]: _lines(elections, "ts_ms", "epoch", "node_id", "epochs each node became leader in", "epoch",
                            step=True),
        SECTIONS[2]: _lines(rate, "second", "records", "cluster_id", "committed records per second", "records/s")
        + _lines(hwm, "ts_ms", "hwm", "node_id", "high watermark traced by each node", "offset"),
        SECTIONS[3]: _bars(counts),
        SECTIONS[4]: _lines(isr, "offset", "isr_size", "tp", "ISR size per partition (by log offset)", "replicas",
                            step=True),
        SECTIONS[5]: _lines(brokers, "offset", "state_code", "broker_id",
                            "broker state (0 unregistered, 1 fenced, 2 controlled shutdown, 3 unfenced)", "state",
                            step=True),
        SECTIONS[6]: _audit_section(summary),
    }
    sections = "".join(f"<section><h2>{html.escape(t)}</h2>{b}</section>" for t, b in body.items())
    page = (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>pykraft analyze</title>"
            f"<style>{_STYLE}</style></head><body><h1>pykraft analyze</h1>{sections}</body></html>")
    path = os.path.join(out, "report.html")
    with open(path, "w", encoding="utf-8") as f:
        f.write(page)
    return path
