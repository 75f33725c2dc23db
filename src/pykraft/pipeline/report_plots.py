"""The report's figures (matplotlib, inline SVG), all on a wall-clock axis (HH:MM:SS, UTC) shared by a cluster's
timeline panels: events as markers in lanes of their own, leadership and broker states as spans, partitions as
small multiples (who is in the ISR, who leads, when the partition is offline), commit rate and each node's high
watermark. Inputs are small pandas frames read from the Parquet tables (report.py). Colors and line styles both
tell series apart, so that overlapping lines stay readable in gray too."""

from __future__ import annotations

import datetime as dt
import io
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.dates as mdates
import matplotlib.pyplot as plt
import pandas as pd
from matplotlib.patches import Patch

WIDTH = 13.0  # inches: 1300 px at 100 dpi fits a 1400 px wide window with the page's margins
STATE_COLORS = {"UNFENCED": "#4caf50", "FENCED": "#e53935", "CONTROLLED_SHUTDOWN": "#fb8c00",
                "UNREGISTERED": "#bdbdbd"}
EVENT_STYLE = {  # lane -> (marker, color)
    "election": ("*", "#6a1b9a"), "controller change": ("D", "#1565c0"), "fenced": ("X", "#e53935"),
    "unfenced": ("P", "#4caf50"), "controlled shutdown": ("v", "#fb8c00"), "ISR shrink": ("<", "#d81b60"),
    "ISR expand": (">", "#00897b"), "voter change": ("s", "#5d4037"), "log truncated": ("x", "#000000"),
}
LINE_STYLES = ["-", "--", "-.", ":"]
PALETTE = plt.get_cmap("tab10").colors  # type: ignore[attr-defined]  # a ListedColormap: its colors


def to_time(ms: Any) -> Any:
    """Epoch milliseconds (a number or a Series) -> UTC datetimes, for matplotlib's date axis."""
    return pd.to_datetime(ms, unit="ms", utc=True)


_DAY_MS = 86_400_000
_EPOCH_DAYS = mdates.date2num(dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc))


def bars_at(ax: Any, y: float, spans: list[tuple[int, int]], height: float, **style: Any) -> None:
    """Horizontal bars from start to end ms on row `y`, as one collection (a Rectangle each costs far more to
    draw and to lay out)."""
    if spans:
        ax.broken_barh([(_EPOCH_DAYS + a / _DAY_MS, (b - a) / _DAY_MS) for a, b in spans], (y - height / 2, height),
                       **style)


def clock(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).strftime("%H:%M:%S")


def svg(fig: Any) -> str:
    """The figure as inline SVG (laid out by the caller's tight_layout: a "tight" bbox at save would measure every
    text again, most of a report's time)."""
    buffer = io.StringIO()
    fig.savefig(buffer, format="svg", metadata={"Date": None})
    plt.close(fig)
    text = buffer.getvalue()
    return text[text.index("<svg"):]  # no XML prolog: the SVG is inlined in HTML


def _time_axis(ax: Any, span: tuple[int, int], ticks: int | None = None) -> None:
    """HH:MM:SS (UTC) over the cluster's whole span; `ticks`: at most that many labels (small panels)."""
    if ticks is not None:
        ax.xaxis.set_major_locator(mdates.AutoDateLocator(minticks=ticks - 1, maxticks=ticks, tz=dt.timezone.utc))
    ax.xaxis.set_major_formatter(mdates.DateFormatter("%H:%M:%S", tz=dt.timezone.utc))
    ax.set_xlim(to_time(span[0]), to_time(span[1]))
    ax.grid(axis="x", color="#e0e0e0", linewidth=0.6)


def timeline(events: pd.DataFrame, leadership: pd.DataFrame, states: pd.DataFrame, span: tuple[int, int]) -> str:
    """Three panels on one time axis: events by kind, metadata-quorum leadership per epoch (a span per epoch on its
    leader's row), broker states (a span per state on each broker's row)."""
    lanes = [lane for lane in EVENT_STYLE if lane in set(events["lane"])] if len(events) else []
    nodes = sorted(set(leadership["node_id"])) if len(leadership) else []
    brokers = sorted(set(states["broker_id"])) if len(states) else []
    heights = [max(1, len(lanes)) * 0.32 + 0.5, max(1, len(nodes)) * 0.32 + 0.5, max(1, len(brokers)) * 0.32 + 0.5]
    fig, axes = plt.subplots(3, 1, figsize=(WIDTH, sum(heights) + 0.8), sharex=True,
                             gridspec_kw={"height_ratios": heights})
    ax = axes[0]
    for i, lane in enumerate(lanes):
        marker, color = EVENT_STYLE[lane]
        at = events[events["lane"] == lane]
        ax.scatter(to_time(at["ts_ms"]), [i] * len(at), marker=marker, color=color, s=46, zorder=3)
    ax.set_yticks(range(len(lanes)), lanes, fontsize=8)
    ax.set_ylim(-0.7, max(1, len(lanes)) - 0.3)
    ax.set_title("events (one lane per kind)", fontsize=9, loc="left")
    _spans(axes[1], leadership, nodes, "node_id", lambda r: PALETTE[int(r["epoch"]) % 10],
           lambda r: f"epoch {int(r['epoch'])}", "node")
    axes[1].set_title("metadata quorum leader per epoch", fontsize=9, loc="left")
    _spans(axes[2], states, brokers, "broker_id", lambda r: STATE_COLORS.get(r["state"], "#9e9e9e"), None, "broker")
    axes[2].set_title("broker states (committed metadata)", fontsize=9, loc="left")
    axes[2].legend(handles=[Patch(color=c, label=s.lower().replace("_", " ")) for s, c in STATE_COLORS.items()],
                   fontsize=7, ncol=4, loc="upper left", bbox_to_anchor=(0, -0.35), frameon=False)
    for axis in axes:
        _time_axis(axis, span)
    axes[-1].set_xlabel("time (UTC)")
    fig.tight_layout()
    return svg(fig)


def _spans(ax: Any, frame: pd.DataFrame, rows: list[int], column: str, color: Any, label: Any, what: str) -> None:
    """One horizontal bar per row of `frame` (start_ms, end_ms) on the row of its `column` value."""
    for _, r in frame.iterrows():
        y = rows.index(r[column])
        bars_at(ax, y, [(r["start_ms"], r["end_ms"])], 0.6, facecolors=color(r), edgecolor="white", linewidth=0.5)
        if label is not None and r["end_ms"] - r["start_ms"] > 0:
            ax.text(to_time((r["start_ms"] + r["end_ms"]) // 2), y, label(r), ha="center", va="center", fontsize=7,
                    color="white", clip_on=True)
    ax.set_yticks(range(len(rows)), [f"{what} {r}" for r in rows], fontsize=8)
    ax.set_ylim(-0.7, max(1, len(rows)) - 0.3)


def partitions(history: dict[str, pd.DataFrame], span: tuple[int, int], columns: int = 3) -> str:
    """Small multiples, one per partition: each replica's row shows when it is in the ISR (light) and when it
    leads (dark); a red band marks the times the partition has no leader (offline)."""
    names = list(history)
    count = len(names)
    rows = -(-count // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(WIDTH, 1.7 * rows + 0.6), sharex=True, squeeze=False)
    for index, ax in enumerate(axes.flat):
        if index >= count:
            ax.axis("off")
            continue
        spans = history[names[index]]
        replicas = sorted({b for bs in spans["replicas"] for b in bs})
        offline = [(a, b) for a, b, leader in zip(spans["start_ms"], spans["end_ms"], spans["leader"]) if leader < 0]
        bars_at(ax, (len(replicas) - 1) / 2, offline, len(replicas) + 0.4, facecolors="#ffcdd2", zorder=0)
        spells = list(zip(spans["start_ms"], spans["end_ms"], spans["leader"], spans["isr"]))
        for y, replica in enumerate(replicas):
            bars_at(ax, y, [(a, b) for a, b, leader, isr in spells if replica in isr and leader != replica], 0.3,
                    facecolors="#90caf9", zorder=2)
            bars_at(ax, y, [(a, b) for a, b, leader, _ in spells if leader == replica], 0.5, facecolors="#1565c0",
                    zorder=2)
        ax.set_yticks(range(len(replicas)), [f"b{b}" for b in replicas], fontsize=7)
        ax.set_ylim(-0.6, max(1, len(replicas)) - 0.4)
        ax.set_title(names[index], fontsize=8, loc="left")
        _time_axis(ax, span, ticks=4)
        ax.tick_params(axis="x", labelsize=7)
    fig.legend(handles=[Patch(color="#1565c0", label="leader"), Patch(color="#90caf9", label="in the ISR"),
                        Patch(color="#ffcdd2", label="offline (no leader)")], fontsize=8, ncol=3, loc="lower left",
               frameon=False)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    return svg(fig)


def rates(commit_rate: pd.DataFrame, hwm: pd.DataFrame, span: tuple[int, int], columns: int = 4) -> str:
    """Committed records per second; then each node's traced high watermark in a panel of its own (small
    multiples: equal lines would hide each other on one axis), over the highest one any node traced (gray), so
    that a node's lag is the gap between the two."""
    nodes = sorted(set(hwm["node_id"])) if len(hwm) else []
    rows = -(-len(nodes) // columns)
    fig = plt.figure(figsize=(WIDTH, 2.4 + 1.6 * rows))
    grid = fig.add_gridspec(1 + rows, columns, height_ratios=[2.0] + [1.4] * rows)
    top = fig.add_subplot(grid[0, :])
    if len(commit_rate):
        top.step(to_time(commit_rate["second"] * 1000), commit_rate["records"], where="post", color="#1565c0")
    top.set_ylabel("records/s")
    top.set_title("committed metadata records per second", fontsize=9, loc="left")
    _time_axis(top, span)
    if nodes:
        overall = hwm.sort_values("ts_ms").assign(best=lambda f: f["hwm"].cummax())
    for i, node in enumerate(nodes):
        ax = fig.add_subplot(grid[1 + i // columns, i % columns])
        ax.step(to_time(overall["ts_ms"]), overall["best"], where="post", color="#bdbdbd", linewidth=2.5)
        part = hwm[hwm["node_id"] == node].sort_values("ts_ms")
        ax.step(to_time(part["ts_ms"]), part["hwm"], where="post", color=PALETTE[i % 10], linewidth=1.2)
        ax.set_title(f"node {node}: high watermark (gray: the highest traced)", fontsize=7, loc="left")
        ax.ticklabel_format(axis="y", style="plain", useOffset=False)
        ax.tick_params(labelsize=6)
        _time_axis(ax, span, ticks=4)
    fig.tight_layout()
    return svg(fig)


def bars(labels: list[str], series: dict[str, list[float]], title: str, log: bool = False) -> str:
    """Horizontal bars, one group per label, one bar per series (side by side, never stacked over each other)."""
    height = max(1.6, 0.32 * len(labels) * max(1, len(series)) + 0.8)
    fig, ax = plt.subplots(figsize=(WIDTH * 0.75, height))
    width = 0.8 / max(1, len(series))
    for i, (name, values) in enumerate(series.items()):
        ax.barh([y + i * width for y in range(len(labels))], values, height=width, label=name,
                color=PALETTE[i % 10])
    ax.set_yticks([y + width * (len(series) - 1) / 2 for y in range(len(labels))], labels, fontsize=8)
    ax.invert_yaxis()
    if log:
        ax.set_xscale("log")
    ax.set_title(title, fontsize=9, loc="left")
    if len(series) > 1:
        ax.legend(fontsize=8)
    fig.tight_layout()
    return svg(fig)


def offsets(commits: pd.DataFrame, span: tuple[int, int]) -> str:
    """Each consumer group's committed offset per partition over time."""
    fig, ax = plt.subplots(figsize=(WIDTH, 3.2))
    for i, (key, part) in enumerate(commits.groupby(["group", "topic", "partition"])):
        ax.step(to_time(part["timestamp"]), part["committed_offset"], where="post", label="{} {}-{}".format(*key),
                color=PALETTE[i % 10], linestyle=LINE_STYLES[(i // 10) % len(LINE_STYLES)])
    ax.set_ylabel("committed offset")
    ax.set_title("consumer groups' committed offsets", fontsize=9, loc="left")
    ax.legend(fontsize=7, ncol=4, loc="upper left")
    _time_axis(ax, span)
    fig.tight_layout()
    return svg(fig)
