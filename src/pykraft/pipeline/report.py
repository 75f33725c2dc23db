"""OUT/report.html: an incident view of what `analyze` found, one self-contained page (no script, no external URL;
plots are inline matplotlib SVG, report_plots.py).

At the top: the inputs, the time range (UTC) and each audit's verdict with a sentence saying what it checks and how
many rows it looked at. Then one section per cluster, each on its own wall-clock axis: a timeline (elections,
controller changes, fencing, controlled shutdowns, ISR shrinks and expansions, voter changes as markers; the
quorum's leader per epoch and every broker's state as spans), each partition's leader and ISR over time (small
multiples, offline times in red), the final image (offline partitions and fenced brokers highlighted), the commit
rate and each node's high watermark, the observers and their lag, the partition logs with the client-history
figures, and the metadata records by type. Every table is read from the Parquet just written (pyarrow, small)."""

from __future__ import annotations

import html
import os
from typing import Any

import pandas as pd
import pyarrow.parquet as pq

from . import report_plots as plots

SECTIONS = ("Inputs and time range", "Audit verdicts", "Data directories")
CLUSTER_SECTIONS = ("Timeline", "Partitions: leader and ISR over time", "Final image",
                    "Commit rate and high watermark", "Observers and lag", "Partition logs and client histories",
                    "Metadata records by type")
MAX_DIRECTORIES = 30  # listed in the report (thousands of simulated runs: all of them are in summary.json)
MAX_CLUSTERS = 12  # clusters drawn in full; the others are listed
MAX_ROWS = 200_000  # rows of one table read for the plots (more: a sample)
MAX_PARTITIONS = 24  # small multiples drawn per cluster
MAX_INTERNAL = 6  # of which partitions of internal topics (__consumer_offsets has 50)
_STYLE = ("body{font-family:sans-serif;margin:1.5em;max-width:1340px}table{border-collapse:collapse;margin:.5em 0}"
          "td,th{border:1px solid #bbb;padding:2px 6px;font-size:13px}.pass{color:#070}.fail{color:#b00}"
          "tr.bad td{background:#ffebee}svg{max-width:100%;height:auto}section.cluster{border-top:3px solid #455a64;"
          "margin-top:2em}p.note{color:#555;font-size:13px}")


def read(out: str, name: str) -> pd.DataFrame:
    path = os.path.join(out, name)
    if not os.path.isdir(path):
        return pd.DataFrame()
    dataset = pq.ParquetDataset(path)
    rows = sum(f.metadata.num_rows for f in dataset.fragments)
    frame = dataset.read().to_pandas()
    return frame.iloc[:: max(1, -(-rows // MAX_ROWS))] if rows > MAX_ROWS else frame


def _table(rows: list[dict[str, Any]], bad: Any = None) -> str:
    if not rows:
        return "<p>none</p>"
    columns = list(rows[0])
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in columns)
    body = "".join(f"<tr{' class=bad' if bad is not None and bad(r) else ''}>"
                   + "".join(f"<td>{html.escape(str(_cell(r.get(c))))}</td>" for c in columns) + "</tr>"
                   for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def _cell(value: Any) -> Any:
    return list(value) if hasattr(value, "tolist") and not isinstance(value, str) else value


def _of(frame: pd.DataFrame, cluster: str) -> pd.DataFrame:
    return frame[frame["cluster_id"] == cluster] if len(frame) else frame


class Tables:
    """The Parquet tables the report reads, once."""

    NAMES = ("node_events", "elections", "hwm_history", "commit_rate", "partition_history", "broker_history",
             "leaders", "voters", "image_partitions", "image_brokers", "image_voters", "log_summary",
             "acknowledged_history", "consumer_offsets", "record_counts", "high_watermarks")

    def __init__(self, out: str) -> None:
        self.frames = {name: read(out, name) for name in self.NAMES}

    def of(self, name: str, cluster: str) -> pd.DataFrame:
        return _of(self.frames[name], cluster)


def time_span(t: Tables, cluster: str) -> tuple[int, int] | None:
    stamps = []
    for name, column, scale in (("node_events", "ts_ms", 1), ("hwm_history", "ts_ms", 1), ("commit_rate", "second",
                                                                                         1000),
                                ("partition_history", "timestamp", 1), ("broker_history", "timestamp", 1)):
        frame = t.of(name, cluster)
        if len(frame):
            stamps += [int(frame[column].min()) * scale, int(frame[column].max()) * scale]
    if not stamps:
        return None
    low, high = min(stamps), max(stamps)
    pad = max(500, (high - low) // 50)
    return low - pad, high + pad


def events(t: Tables, cluster: str) -> pd.DataFrame:
    found: list[tuple[str, int]] = []
    traced = t.of("node_events", cluster)
    if len(traced):
        found += [("election", ts) for ts in traced.loc[traced["event"] == "became_candidate", "ts_ms"]]
        found += [("controller change", ts) for ts in traced.loc[traced["event"] == "became_leader", "ts_ms"]]
        found += [("log truncated", ts) for ts in traced.loc[traced["event"] == "log_truncated", "ts_ms"]]
    else:
        found += [("controller change", ts) for ts in t.of("leaders", cluster)["timestamp"]]
    voters = t.of("voters", cluster).sort_values("offset") if len(t.of("voters", cluster)) else pd.DataFrame()
    found += [("voter change", ts) for ts in (voters["timestamp"].iloc[1:] if len(voters) else [])]
    brokers = t.of("broker_history", cluster)
    if len(brokers):
        brokers = brokers.sort_values("offset")
        previous = brokers.groupby("broker_id")["state"].shift()
        changed = brokers[brokers["state"] != previous]
        lanes = {"FENCED": "fenced", "UNFENCED": "unfenced", "CONTROLLED_SHUTDOWN": "controlled shutdown"}
        found += [(lanes[s], ts) for s, ts in zip(changed["state"], changed["timestamp"]) if s in lanes]
    parts = t.of("partition_history", cluster)
    if len(parts):
        parts = parts.sort_values("offset").assign(size=lambda f: f["isr"].map(len))
        before = parts.groupby(["topic", "partition"])["size"].shift()
        found += [("ISR shrink", ts) for ts in parts.loc[parts["size"] < before, "timestamp"]]
        found += [("ISR expand", ts) for ts in parts.loc[parts["size"] > before, "timestamp"]]
    return pd.DataFrame(found, columns=["lane", "ts_ms"])


def _spans(frame: pd.DataFrame, key: list[str], start: str, end_ms: int) -> pd.DataFrame:
    """Each row lasts until the next row of the same key (the last one until `end_ms`)."""
    if not len(frame):
        return frame
    frame = frame.sort_values([*key, start]).copy()
    frame["start_ms"] = frame[start]
    frame["end_ms"] = frame.groupby(key)[start].shift(-1).fillna(end_ms).astype("int64")
    return frame


def leadership(t: Tables, cluster: str, end_ms: int) -> pd.DataFrame:
    elections = t.of("elections", cluster)
    if len(elections):
        frame = elections.rename(columns={"ts_ms": "at"})[["node_id", "epoch", "at"]]
    else:
        leaders = t.of("leaders", cluster)
        if not len(leaders):
            return pd.DataFrame()
        frame = leaders.rename(columns={"leader_id": "node_id", "leader_epoch": "epoch", "timestamp": "at"})
        frame = frame[["node_id", "epoch", "at"]]
    frame = frame.sort_values("at").assign(cluster=0)
    spans = _spans(frame, ["cluster"], "at", end_ms)  # one leader at a time: each epoch lasts until the next
    traced = t.of("node_events", cluster)
    if len(traced):  # a leader that resigned or stopped ended its span there
        ends = traced[traced["event"].isin(["became_resigned", "stopped"])]
        for index, row in spans.iterrows():
            mine = ends[(ends["node_id"] == row["node_id"]) & (ends["ts_ms"] > row["start_ms"])]["ts_ms"]
            if len(mine):
                spans.at[index, "end_ms"] = min(row["end_ms"], int(mine.min()))
    return spans


def _cluster_section(t: Tables, cluster: dict[str, Any], summary: dict[str, Any]) -> str:
    cid = cluster["clusterId"]
    span = time_span(t, cid)
    parts = [f"<section class=cluster><h2>Cluster {html.escape(cid)}</h2>"]
    if span is None:
        parts.append("<p class=note>no timestamps: no traces and no committed metadata records</p>")
    else:
        parts.append(f"<p>from {plots.clock(span[0])} to {plots.clock(span[1])} UTC; high watermark "
                     f"{cluster['highWatermark']}, image after offset {cluster['offset']}</p>")
    body = {
        CLUSTER_SECTIONS[0]: _timeline(t, cid, span),
        CLUSTER_SECTIONS[1]: _partitions(t, cid, span),
        CLUSTER_SECTIONS[2]: _final_image(cluster),
        CLUSTER_SECTIONS[3]: (plots.rates(t.of("commit_rate", cid), t.of("hwm_history", cid), span)
                              if span else "<p>no data</p>"),
        CLUSTER_SECTIONS[4]: _observers(t, cid, cluster),
        CLUSTER_SECTIONS[5]: _partition_logs(t, cid, span),
        CLUSTER_SECTIONS[6]: _record_counts(t, cid),
    }
    parts += [f"<h3>{html.escape(title)}</h3>{content}" for title, content in body.items()]
    return "".join(parts) + "</section>"


def _timeline(t: Tables, cid: str, span: tuple[int, int] | None) -> str:
    if span is None:
        return "<p>no data</p>"
    states = _spans(t.of("broker_history", cid), ["broker_id"], "timestamp", span[1])
    return plots.timeline(events(t, cid), leadership(t, cid, span[1]), states, span)


def _partitions(t: Tables, cid: str, span: tuple[int, int] | None) -> str:
    history = t.of("partition_history", cid)
    if span is None or not len(history):
        return "<p>no partitions</p>"
    spans = _spans(history, ["topic", "partition"], "timestamp", span[1])
    # The user's topics first; the internal ones (__consumer_offsets: 50 partitions) after them.
    keys = sorted({(tp, p) for tp, p in zip(spans["topic"], spans["partition"])},
                  key=lambda k: (k[0].startswith("__"), k[0], k[1]))
    user = [k for k in keys if not k[0].startswith("__")][:MAX_PARTITIONS]
    shown = user + [k for k in keys if k[0].startswith("__")][:max(0, min(MAX_INTERNAL, MAX_PARTITIONS - len(user)))]
    by_partition = {f"{tp}-{p}": spans[(spans["topic"] == tp) & (spans["partition"] == p)] for tp, p in shown}
    more = f"<p class=note>{len(keys) - len(shown)} more partitions: see partition_history</p>" \
        if len(keys) > len(shown) else ""
    return plots.partitions(by_partition, span) + more


def _final_image(cluster: dict[str, Any]) -> str:
    """Brokers (the ones not unfenced highlighted), every partition of the user's topics (offline ones
    highlighted), the internal topics one line each (how many of their partitions are offline)."""
    image = cluster["image"]
    partitions = [{"topic": tp["name"], "partition": p["partitionId"], "leader": p["leader"], "isr": p["isr"],
                   "replicas": p["replicas"], "leaderEpoch": p["leaderEpoch"],
                   "state": "OFFLINE" if p["leader"] < 0 else "online"}
                  for tp in image["topics"] for p in tp["partitions"]]
    offline = sum(1 for p in partitions if p["leader"] < 0)
    fenced = [b["brokerId"] for b in image["brokers"] if b["state"] != "UNFENCED"]
    note = (f"<p class=note>{offline} of {len(partitions)} partitions offline (no leader); brokers not unfenced: "
            f"{fenced or 'none'}; voters {[v['voterId'] for v in image['voters']]}</p>")
    user = [p for p in partitions if not p["topic"].startswith("__")]
    internal: dict[str, dict[str, Any]] = {}
    for p in partitions:
        if p["topic"].startswith("__"):
            line = internal.setdefault(p["topic"], {"internal topic": p["topic"], "partitions": 0, "offline": 0})
            line["partitions"] += 1
            line["offline"] += p["leader"] < 0
    return (note + _table(image["brokers"], bad=lambda r: r["state"] != "UNFENCED")
            + _table(user, bad=lambda r: r["leader"] < 0)
            + (_table(list(internal.values()), bad=lambda r: r["offline"] > 0) if internal else "")
            + _table(image["features"])
            + "".join(_table(image[k]) for k in ("users", "acls") if image.get(k)))  # SCRAM users: no secrets


def _observers(t: Tables, cid: str, cluster: dict[str, Any]) -> str:
    logs = t.of("log_summary", cid)
    logs = logs[logs["topic"] == "__cluster_metadata"] if len(logs) else logs
    if not len(logs):
        return "<p>none</p>"
    voters = {v["voterId"] for v in cluster["image"]["voters"]}
    hwm = t.of("hwm_history", cid)
    traced = hwm.sort_values("ts_ms").groupby("node_id")["hwm"].last().to_dict() if len(hwm) else {}
    end = cluster["highWatermark"]
    rows = [{"node": int(r.node_id), "role": "voter" if r.node_id in voters else "observer",
             "log end offset": int(r.last_offset) + 1,
             "behind the high watermark": max(0, end - int(r.last_offset) - 1),
             "last traced high watermark": traced.get(r.node_id, "-")}
            for r in logs.sort_values("node_id").itertuples()]
    return ("<p class=note>lag at the end: how far each node's metadata log ends behind the cluster's high watermark "
            f"({end}); over time: the high-watermark plot above</p>" + _table(rows, bad=lambda r: r[
                "behind the high watermark"] > 0 and r["role"] == "voter"))


def _partition_logs(t: Tables, cid: str, span: tuple[int, int] | None) -> str:
    logs = t.of("log_summary", cid)
    logs = logs[logs["topic"] != "__cluster_metadata"] if len(logs) else logs
    parts = []
    if len(logs):
        grouped = logs.groupby(["topic", "partition"]).agg(replicas=("node_id", "nunique"),
                                                            records=("records", "max"), first=("first_offset", "min"),
                                                            last=("last_offset", "max")).reset_index()
        parts.append(_table(grouped.head(100).to_dict("records")))
    acked = t.of("acknowledged_history", cid)
    if len(acked):
        kinds = ["acked", "failed", "lost", "duplicated", "phantom"]
        parts.append(plots.bars(list(acked["topic"]), {k: list(acked[k]) for k in kinds if k in acked},
                                "client histories: records acknowledged and failed, lost / duplicated / phantom"))
        parts.append(_table(acked[["topic", *[k for k in kinds if k in acked]]].to_dict("records"),
                            bad=lambda r: r.get("lost", 0) or r.get("duplicated", 0) or r.get("phantom", 0)))
    commits = t.of("consumer_offsets", cid)
    if len(commits) and span is not None:
        parts.append(plots.offsets(commits, span))
    return "".join(parts) or "<p>no partition logs</p>"


def _record_counts(t: Tables, cid: str) -> str:
    counts = t.of("record_counts", cid)
    if not len(counts):
        return "<p>no data</p>"
    counts = counts.sort_values("count", ascending=False)
    return plots.bars(list(counts["record_type"]), {"records": list(counts["count"])},
                      "committed metadata records by type (log scale)", log=True)


def _audit_section(summary: dict[str, Any]) -> str:
    parts = []
    for name, audit in sorted(summary["audits"].items()):
        verdict = audit["verdict"]
        parts.append(f"<h3>{html.escape(name)}: <span class='{verdict}'>{verdict.upper()}</span></h3>"
                     f"<p>Checks that {html.escape(audit.get('checks', ''))}. Looked at "
                     f"{audit.get('looked_at', 0):,} {html.escape(audit.get('unit', 'rows'))}; "
                     f"{audit['offending']} offending.</p>{_table(audit['first']) if audit['first'] else ''}")
    return "".join(parts)


def _directories(summary: dict[str, Any]) -> str:
    directories = summary.get("data_directories", [])
    more = (f"<p>{len(directories) - MAX_DIRECTORIES} more in summary.json</p>"
            if len(directories) > MAX_DIRECTORIES else "")
    return ("<p>a row's <code>file</code> is the path below its node's data directory:</p>"
            f"{_table(directories[:MAX_DIRECTORIES])}{more}")


def _header(t: Tables, summary: dict[str, Any]) -> str:
    spans = [s for s in (time_span(t, c["clusterId"]) for c in summary["clusters"]) if s]
    when = "no timestamps"
    if spans:
        low, high = min(s[0] for s in spans), max(s[1] for s in spans)
        day = pd.Timestamp(low, unit="ms", tz="UTC").strftime("%Y-%m-%d")
        when = f"{day} {plots.clock(low)} to {plots.clock(high)} UTC"
    failed = [n for n, a in summary["audits"].items() if a["verdict"] == "fail"]
    verdict = (f"<span class=fail>{len(failed)} audit(s) FAILED: {', '.join(sorted(failed))}</span>" if failed
               else "<span class=pass>every audit passes</span>")
    inputs = "".join(f"<li><code>{html.escape(p)}</code></li>" for p in summary.get("inputs", []))
    return (f"<p>{when}; {len(summary['clusters'])} cluster(s); {verdict}</p><ul>{inputs}</ul>")


def write_report(out: str, summary: dict[str, Any]) -> str:
    t = Tables(out)
    clusters = summary["clusters"]
    sections = [f"<section><h2>{SECTIONS[0]}</h2>{_header(t, summary)}</section>",
                f"<section><h2>{SECTIONS[1]}</h2>{_audit_section(summary)}</section>"]
    sections += [_cluster_section(t, c, summary) for c in clusters[:MAX_CLUSTERS]]
    if len(clusters) > MAX_CLUSTERS:
        sections.append(f"<p class=note>{len(clusters) - MAX_CLUSTERS} more clusters (summary.json): "
                        + ", ".join(html.escape(c["clusterId"]) for c in clusters[MAX_CLUSTERS:]) + "</p>")
    sections.append(f"<section><h2>{SECTIONS[2]}</h2>{_directories(summary)}</section>")
    page = (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>pykraft analyze</title>"
            f"<style>{_STYLE}</style></head><body><h1>pykraft analyze</h1>{''.join(sections)}</body></html>")
    path = os.path.join(out, "report.html")
    with open(path, "w", encoding="utf-8") as f:
        f.write(page)
    return path
