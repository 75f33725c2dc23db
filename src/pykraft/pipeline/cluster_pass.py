"""One pass over one cluster's metadata log: everything `analyze` learns from the committed log, in one go.

Input (pandas frames of one cluster, as jobs.py groups them): every node's copy of every metadata-log record, the
records of every snapshot, and the highest high watermark each node traced. Output: plain dict rows (`kind`
tells them apart, PASS_COLUMNS their columns):
- `stops`: the high watermark (the highest one traced; without traces, the end of the longest prefix a majority of
  the nodes hold with identical, valid batches), the stop offset of the image (--at-offset/--at-time), the first
  committed offset still held and the snapshot the replay starts from;
- `unreachable`: the stop offset is before what the directories still hold (every log starts after a snapshot
  later than it): no image, the CLI exits 2 with this row's detail;
- the controller's replay (replay.py) of the chosen snapshot and the committed log up to the stop offset: history
  rows, KIP-841 violations, replay errors and the image;
- `leader` (one per LeaderChange control record), `voters` (per KRaftVoters), `image_voters` (the voter set at the
  stop offset), `record_count` per record type and `commit_rate` per second, of the committed log.
The committed log is one copy of each offset below the high watermark: the lowest node id holding a valid one (the
replica audit checks that the copies agree). No Spark here: one cluster's rows in, rows out.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pandas as pd

from .replay import REPLAY_COLUMNS, InputRecord, replay_cluster

PASS_COLUMNS: list[tuple[str, str]] = REPLAY_COLUMNS + [
    ("node_id", "int"), ("voters", "array<int>"), ("count", "bigint"), ("hwm", "bigint"), ("stop_offset", "bigint"),
    ("first_offset", "bigint"), ("snapshot_end_offset", "bigint")]
PASS_DDL = ", ".join(f"`{n}` {t}" for n, t in PASS_COLUMNS)
# What jobs.py sends in: a metadata-log record (source "log"), a snapshot record ("snapshot", offset = its place
# in the file, snapshot_end_offset set) or a node's highest traced high watermark ("trace", hwm set).
INPUT_DDL = ("`cluster_id` STRING, `source` STRING, `node_id` INT, `offset` BIGINT, `base_offset` BIGINT, "
             "`leader_epoch` INT, `timestamp` BIGINT, `value` BINARY, `crc_valid` BOOLEAN, `batch_digest` BIGINT, "
             "`is_control` BOOLEAN, `control_type` STRING, `record_type` STRING, `payload` STRING, "
             "`snapshot_end_offset` BIGINT, `hwm` BIGINT")
NOT_METADATA = "(not metadata)"


@dataclass(frozen=True, slots=True)
class StopAt:
    """Where the image is taken: at_offset, at_time_ms or neither (the high watermark)."""

    at_offset: int | None = None
    at_time_ms: int | None = None


def high_watermark(log: pd.DataFrame, traced: pd.Series) -> int:
    """The highest traced high watermark; else the end of the majority-held prefix of valid, identical copies."""
    if traced.notna().any():
        return int(traced.max())
    if log.empty:
        return 0
    nodes = log["node_id"].nunique()
    valid = log[log["crc_valid"].eq(True)]
    holders = valid.groupby(["offset", "batch_digest"])["node_id"].nunique().groupby(level="offset").max()
    held = holders.reindex(sorted(log["offset"].unique()), fill_value=0)
    short = held.index[held < nodes // 2 + 1]
    return int(short[0]) if len(short) else int(held.index.max()) + 1


def committed_log(log: pd.DataFrame, hwm: int) -> pd.DataFrame:
    valid = log[log["crc_valid"].eq(True) & (log["offset"] < hwm)]
    return valid.sort_values(["offset", "node_id"], kind="stable").drop_duplicates("offset")


def stop_offset(committed: pd.DataFrame, hwm: int, at: StopAt) -> int:
    if at.at_offset is not None:
        return min(at.at_offset, hwm - 1)
    if at.at_time_ms is not None:
        before = committed.loc[committed["timestamp"] <= at.at_time_ms, "offset"]
        return int(before.max()) if len(before) else -1
    return hwm - 1


def choose_snapshot(snapshots: pd.DataFrame, first: int | None, stop: int) -> tuple[int, int] | None:
    """(end offset, node) of the snapshot the replay starts from, None to replay the log from offset 0.

    None when the committed log reaches back to 0: the replay then applies every record, so the histories keep
    what happened below a snapshot. Otherwise the earliest snapshot within the stop offset that the committed log
    continues from (end at or after its first offset), else the latest within the stop offset. The bootstrap
    snapshot (end offset 0) holds no image."""
    if first == 0 or snapshots.empty:
        return None
    ends = snapshots[["snapshot_end_offset", "node_id"]].drop_duplicates()
    ends = ends[(ends["snapshot_end_offset"] > 0) & (ends["snapshot_end_offset"] <= stop + 1)]
    if ends.empty:
        return None
    continued = ends[ends["snapshot_end_offset"] >= (first if first is not None else 2**62)]
    if len(continued):
        pick = continued.sort_values(["snapshot_end_offset", "node_id"]).iloc[0]
    else:
        pick = ends.sort_values(["snapshot_end_offset", "node_id"], ascending=[False, True]).iloc[0]
    return int(pick["snapshot_end_offset"]), int(pick["node_id"])


def unreachable(first: int | None, snapshot: tuple[int, int] | None, stop: int, at: StopAt,
                snapshots: pd.DataFrame) -> str | None:
    """Why no image at `stop` can be built from what the directories hold, None when one can: the replay needs a
    start (offset 0 or a snapshot's end E <= stop + 1) and the committed log from there to the stop offset. A
    time before every record still held is unreachable too when the log no longer starts at 0 (what happened
    before its first record is gone)."""
    if first is None or first == 0:
        return None
    start = 0 if snapshot is None else snapshot[0]
    by_time = at.at_time_ms is not None and stop < first
    if not by_time and (start == stop + 1 or start >= first):
        return None
    if at.at_offset is not None:
        asked = f"--at-offset {at.at_offset}"
    elif at.at_time_ms is not None:
        asked = "--at-time " + ("(before every record still held)" if stop < 0 else f"(offset {stop})")
    else:
        asked = f"the high watermark {stop + 1}"
    ends = sorted({int(e) for e in snapshots["snapshot_end_offset"] if e >= first}) if len(snapshots) else []
    earliest = f"the image after offset {ends[0] - 1} (a snapshot)" if ends else "no image (no snapshot reaches it)"
    return (f"{asked} is before what the directories still hold: every metadata log starts at offset {first} or "
            f"later; the earliest they give is {earliest}")


def _records(snapshot_rows: pd.DataFrame, log_rows: pd.DataFrame) -> list[InputRecord]:
    snap = [InputRecord(int(e) - 1, int(b), int(t), None if v is None else bytes(v), True)
            for e, b, t, v in zip(snapshot_rows["snapshot_end_offset"], snapshot_rows["base_offset"],
                                  snapshot_rows["timestamp"], snapshot_rows["value"])]
    log = [InputRecord(int(o), int(b), int(t), None if v is None else bytes(v), False)
           for o, b, t, v in zip(log_rows["offset"], log_rows["base_offset"], log_rows["timestamp"],
                                 log_rows["value"])]
    return snap + log


def _control(committed: pd.DataFrame, kind: str) -> pd.DataFrame:
    return committed[committed["control_type"] == kind]


def control_rows(committed: pd.DataFrame, snapshots: pd.DataFrame, stop: int, base: dict) -> Iterator[dict]:
    for r in _control(committed, "LEADER_CHANGE").itertuples():
        yield dict(base, kind="leader", leader_epoch=int(r.leader_epoch), offset=int(r.offset),
                   timestamp=int(r.timestamp), leader=json.loads(r.payload).get("leaderId"))
    latest: tuple[int, list[int]] | None = None
    for r in _control(committed, "KRAFT_VOTERS").itertuples():
        voters = [v["voterId"] for v in json.loads(r.payload).get("voters", [])]
        yield dict(base, kind="voters", offset=int(r.offset), timestamp=int(r.timestamp), voters=voters)
        if r.offset <= stop and (latest is None or r.offset > latest[0]):
            latest = (int(r.offset), voters)
    for r in _control(snapshots, "KRAFT_VOTERS").itertuples():
        at = int(r.snapshot_end_offset) - 1
        if at <= stop and (latest is None or at > latest[0]):
            latest = (at, [v["voterId"] for v in json.loads(r.payload).get("voters", [])])
    if latest is not None:
        yield dict(base, kind="image_voters", offset=latest[0], voters=latest[1], detail=json.dumps(latest[1]))


def count_rows(committed: pd.DataFrame, base: dict) -> Iterator[dict]:
    types = committed["record_type"].fillna(NOT_METADATA)
    for name, count in types.value_counts().sort_index().items():
        yield dict(base, kind="record_count", name=str(name), count=int(count))
    for second, count in (committed["timestamp"] // 1000).value_counts().sort_index().items():
        yield dict(base, kind="commit_rate", offset=int(second), count=int(count))


def cluster_pass(cluster_id: str, rows: pd.DataFrame, at: StopAt) -> Iterator[dict[str, Any]]:
    base = {"cluster_id": cluster_id}
    log = rows[rows["source"] == "log"]
    snapshots = rows[rows["source"] == "snapshot"].sort_values(["snapshot_end_offset", "node_id", "offset"])
    hwm = high_watermark(log, rows.loc[rows["source"] == "trace", "hwm"])
    committed = committed_log(log, hwm)
    first = int(committed["offset"].min()) if len(committed) else None
    stop = stop_offset(committed, hwm, at)
    snapshot = choose_snapshot(snapshots, first, stop)
    yield dict(base, kind="stops", hwm=hwm, stop_offset=stop, first_offset=first,
               snapshot_end_offset=None if snapshot is None else snapshot[0],
               node_id=None if snapshot is None else snapshot[1])
    problem = unreachable(first, snapshot, stop, at, snapshots)
    if problem is not None:
        yield dict(base, kind="unreachable", detail=problem)
        return
    start = 0 if snapshot is None else snapshot[0]
    chosen = snapshots.iloc[0:0] if snapshot is None else snapshots[
        (snapshots["snapshot_end_offset"] == snapshot[0]) & (snapshots["node_id"] == snapshot[1])]
    plain = ~committed["is_control"].eq(True) & committed["record_type"].notna()
    replayed = committed[plain & (committed["offset"] >= start) & (committed["offset"] <= stop)]
    chosen = chosen[~chosen["is_control"].eq(True)]
    yield from replay_cluster(cluster_id, _records(chosen, replayed), stop)
    yield from control_rows(committed, snapshots, stop, base)
    yield from count_rows(committed, base)
