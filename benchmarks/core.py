"""How many Fetch requests and appended records per second the pure raft core handles on one CPU.

Run: .venv/bin/python benchmarks/core.py   (prints figures; not a test)
"""

from __future__ import annotations

import sys
import time

sys.path.insert(0, "tests/raft")

from kio.schema.errors import ErrorCode  # noqa: E402

from pykraft.raft import messages  # noqa: E402
from pykraft.raft.log import OffsetAndEpoch  # noqa: E402
from pykraft.raft.voter_set import ReplicaKey  # noqa: E402
from raft_context import CLUSTER, build  # noqa: E402


def leader_side(seconds: float = 2.0) -> tuple[float, float]:
    ctx = build(0, [0])  # single voter: appends commit at once
    value = b"x" * 100
    appended = fetches = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        _, ready = ctx.core.append([value] * 10, ctx.now)
        ctx._run(ready)
        appended += 10
        request = messages.fetch_request(CLUSTER, ReplicaKey(5), 1, ctx.log.end_offset(), 1, 0, 0, 1 << 20)
        ctx.core.handle_request("f", request, ctx.now)
        fetches += 1
        ctx.now += 1
    elapsed = time.perf_counter() - start
    return appended / elapsed, fetches / elapsed


def follower_side(seconds: float = 2.0) -> float:
    from pykraft.raft.election import ElectionState
    from pykraft.records import SimpleRecord, encode_batch

    ctx = build(0, [0, 1, 2], stored=ElectionState.with_elected_leader(1, 1))
    ctx.poll()
    records = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        send = ctx.take_sent()[-1]
        base = ctx.log.end_offset()
        batch = encode_batch([SimpleRecord(value=b"x" * 100)] * 10, base_offset=base, partition_leader_epoch=1,
                             timestamp_ms=0)
        ctx.respond(send, messages.fetch_response(ErrorCode.none, high_watermark=base, leader_id=1, epoch=1,
                                                  records=batch))
        records += 10
    return records / (time.perf_counter() - start)


if __name__ == "__main__":
    appended, fetches = leader_side()
    print(f"leader:   {appended:,.0f} records/s appended+committed, {fetches:,.0f} observer Fetch requests/s (10 records per append)")
    print(f"follower: {follower_side():,.0f} records/s replicated (10-record batches of 100 bytes)")
