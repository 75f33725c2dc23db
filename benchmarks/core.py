"""How many Fetch requests, appended records and snapshot bytes per second the pure raft core handles on one CPU.

Run: .venv/bin/python benchmarks/core.py   (prints figures; not a test)

Every figure is the median of several short runs, with the lowest and highest run in brackets: the machine may be
shared, and the spread shows how much to trust the median. Inputs are built before the clock starts where possible
(batches are pre-encoded and only their base offset is patched), so the figures are the core's own cost plus the
in-memory log's.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable

sys.path.insert(0, "tests/raft")

from kio.schema.errors import ErrorCode
from kio.schema.fetch.v17.request import FetchRequest
from kio.schema.fetch_snapshot.v1.request import FetchSnapshotRequest

from pykraft.raft import messages
from pykraft.raft.election import ElectionState
from pykraft.raft.log import OffsetAndEpoch
from pykraft.raft.memory_log import MemoryLog
from pykraft.raft.snapshot_writer import SnapshotWriter
from pykraft.raft.voter_set import ReplicaKey
from pykraft.records import SimpleRecord, encode_batch
from pykraft.records.batch import set_base_offset
from raft_context import CLUSTER, build

RUNS = 5
SECONDS = 0.5
CHUNK = 64 * 1024


def measure(run: Callable[[], tuple[float, ...]]) -> list[tuple[float, float, float]]:
    """(median, lowest, highest) of each figure `run` returns, over RUNS runs."""
    results = [run() for _ in range(RUNS)]
    return [(statistics.median(column), min(column), max(column)) for column in zip(*results)]


def leader_append_and_fetch() -> tuple[float, float]:
    """Single voter (appends commit at once); after each 10-record append an observer fetches the new batch."""
    ctx = build(0, [0])
    value = b"x" * 100
    appended = fetches = 0
    start = time.perf_counter()
    while time.perf_counter() - start < SECONDS:
        _, ready = ctx.core.append([value] * 10, ctx.now)
        ctx._run(ready)
        appended += 10
        request = messages.fetch_request(CLUSTER, ReplicaKey(5), 1, ctx.log.end_offset() - 10, 1, 0, 0, 1 << 20)
        ctx.core.handle_request("f", request, ctx.now)
        fetches += 1
        ctx.now += 1
    elapsed = time.perf_counter() - start
    return appended / elapsed, fetches / elapsed


def follower_replication() -> tuple[float]:
    """A follower handling Fetch answers of one 10-record batch each (and sending the next Fetch)."""
    ctx = build(0, [0, 1, 2], stored=ElectionState.with_elected_leader(1, 1))
    ctx.poll()
    template = bytearray(encode_batch([SimpleRecord(value=b"x" * 100)] * 10, base_offset=0, partition_leader_epoch=1,
                                      timestamp_ms=0))
    records = 0
    start = time.perf_counter()
    while time.perf_counter() - start < SECONDS:
        send = ctx.sent[-1]
        ctx.sent.clear()
        base = ctx.log.end_offset()
        set_base_offset(template, base)
        ctx.respond(send, messages.fetch_response(ErrorCode.none, high_watermark=base, leader_id=1, epoch=1,
                                                  records=bytes(template)))
        records += 10
    return (records / (time.perf_counter() - start),)


def snapshot_bytes(snapshot_id: OffsetAndEpoch, size: int) -> bytes:
    log = MemoryLog()
    writer = SnapshotWriter(log.create_new_snapshot_unchecked(snapshot_id), last_contained_log_time_ms=0, now_ms=0,
                            kraft_version=0, voters=None, on_frozen=log.on_snapshot_frozen)
    for _ in range(size // 10_000):
        writer.append([b"s" * 100] * 100)
    writer.freeze()
    return bytes(log.read_snapshot(snapshot_id).records())


def leader_snapshot_serving() -> tuple[float, float]:
    """A leader answering FetchSnapshot for 64 KiB chunks of a ~1 MiB snapshot, round and round."""
    snapshot_id = OffsetAndEpoch(100, 1)
    log = MemoryLog()
    raw = log.create_new_snapshot_unchecked(snapshot_id)
    raw.append(snapshot_bytes(snapshot_id, 1 << 20))
    raw.freeze()
    ctx = build(0, [0], log=log)
    size = log.read_snapshot(snapshot_id).size_in_bytes()
    served = requests = position = 0
    start = time.perf_counter()
    while time.perf_counter() - start < SECONDS:
        request = messages.fetch_snapshot_request(CLUSTER, ReplicaKey(5), ctx.epoch, snapshot_id, position, CHUNK)
        ctx.core.handle_request("s", request, ctx.now)
        served += min(CHUNK, size - position)
        position = position + CHUNK if position + CHUNK < size else 0
        requests += 1
    elapsed = time.perf_counter() - start
    return served / elapsed / 1e6, requests / elapsed


def follower_snapshot_download() -> tuple[float]:
    """A follower downloading and installing a ~1 MiB snapshot in 64 KiB chunks (a fresh follower each time)."""
    snapshot_id = OffsetAndEpoch(100_000, 1)
    data = snapshot_bytes(snapshot_id, 1 << 20)
    installed = 0
    elapsed = 0.0
    while elapsed < SECONDS:
        ctx = build(0, [0, 1, 2], stored=ElectionState.with_elected_leader(2, 1))
        ctx.poll()
        start = time.perf_counter()
        send = [s for s in ctx.sent if isinstance(s.request, FetchRequest)][-1]
        ctx.respond(send, messages.fetch_response(ErrorCode.none, leader_id=1, epoch=2, snapshot_id=snapshot_id))
        for position in range(0, len(data), CHUNK):
            send = [s for s in ctx.sent if isinstance(s.request, FetchSnapshotRequest)][-1]
            ctx.sent.clear()
            ctx.respond(send, messages.fetch_snapshot_response(
                ErrorCode.none, leader_id=1, epoch=2, snapshot_id=snapshot_id, size=len(data), position=position,
                records=data[position:position + CHUNK]))
        elapsed += time.perf_counter() - start
        assert ctx.log.start_offset() == snapshot_id.offset
        installed += len(data)
    return (installed / elapsed / 1e6,)


def show(label: str, figure: tuple[float, float, float], unit: str) -> None:
    median, low, high = figure
    print(f"{label:<34} {median:>12,.1f} {unit:<30} [{low:,.1f} .. {high:,.1f}]")


if __name__ == "__main__":
    appended, fetches = measure(leader_append_and_fetch)
    show("leader: append+commit", appended, "records/s (10 per append)")
    show("leader: observer Fetch", fetches, "requests/s (10 records each)")
    (replicated,) = measure(follower_replication)
    show("follower: Fetch answers applied", replicated, "records/s (10 per answer)")
    served, chunk_rate = measure(leader_snapshot_serving)
    show("leader: FetchSnapshot served", served, "MB/s (64 KiB chunks)")
    show("leader: FetchSnapshot requests", chunk_rate, "requests/s")
    (downloaded,) = measure(follower_snapshot_download)
    show("follower: snapshot downloaded", downloaded, "MB/s (1 MiB, 64 KiB chunks)")
