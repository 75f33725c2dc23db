"""FileLog against MemoryLog under random operation sequences, including close-and-reopen of the file log.

After every step both logs must agree on everything the raft core can observe.
"""

from __future__ import annotations

import random

import pytest

from pykraft.raft.log import InvalidSnapshotIdError, OffsetAndEpoch
from pykraft.raft.memory_log import MemoryLog
from pykraft.records import iter_batches
from pykraft.storage import FileLog

from .helpers import batch, open_log


def observe(log) -> tuple:
    end = log.end_offset()
    start = log.start_offset()
    data = []
    offset = start
    while offset < end:
        got = list(iter_batches(log.read(offset, 150).records))
        data += [bytes(b.buffer) for b in got]
        offset = got[-1].next_offset
    epochs = [log.end_offset_for_epoch(e) for e in range(0, 12)]
    checks = [log.validate_offset_and_epoch(o, e) for o in range(max(0, start - 2), end + 2) for e in range(0, 12, 3)]
    return (start, end, log.last_fetched_epoch(), log.latest_snapshot_id(), log.earliest_snapshot_id(),
            epochs, checks, data)


def step(rng: random.Random, memory: MemoryLog, file: FileLog, epoch: list[int]) -> str:
    op = rng.random()
    end = memory.end_offset()
    if op < 0.5:
        if rng.random() < 0.15:
            epoch[0] += rng.randint(1, 2)
        spec = [rng.randint(1, 4) for _ in range(rng.randint(1, 3))]
        records = b""
        offset = end
        for count in spec:
            records += batch(offset, epoch[0], count, size=rng.randint(0, 120))
            offset += count
        memory.append_as_follower(records, epoch[0])
        file.append_as_follower(records, epoch[0])
        return f"append {spec}@{epoch[0]}"
    if op < 0.62 and end > memory.start_offset():
        # The core never truncates below the HWM, and snapshots only cover committed data.
        latest = memory.latest_snapshot_id()
        floor = max(memory.start_offset(), memory.high_watermark(), latest.offset if latest else 0)
        if floor > end:
            return "noop"
        offset = rng.randint(floor, end)
        memory.truncate_to(offset)
        file.truncate_to(offset)
        epoch[0] = max(epoch[0], memory.last_fetched_epoch())
        return f"truncate {offset}"
    if op < 0.7:
        epoch[0] += 1
        memory.initialize_leader_epoch(epoch[0])
        file.initialize_leader_epoch(epoch[0])
        return f"init epoch {epoch[0]}"
    if op < 0.8:
        memory.flush()
        file.flush()
        return "flush"
    if op < 0.9 and end > memory.start_offset():
        # A snapshot at a batch boundary below the end, then maybe delete before it.
        bounds = [b.next_offset for b in iter_batches(memory.read(memory.start_offset(), 10**9).records)]
        offset = rng.choice(bounds)
        memory.update_high_watermark(max(offset, memory.high_watermark()))
        file.update_high_watermark(max(offset, file.high_watermark()))
        last = list(iter_batches(memory.read(offset - 1, 1).records))[0]
        sid = OffsetAndEpoch(offset, last.partition_leader_epoch)
        outcomes = []
        for log in (memory, file):
            try:
                writer = log.create_new_snapshot(sid)
            except InvalidSnapshotIdError:
                outcomes.append("invalid")
                continue
            outcomes.append("exists" if writer is None else "new")
            if writer is not None:
                writer.append(batch(0, sid.epoch, 1))
                writer.freeze()
                writer.close()
        assert outcomes[0] == outcomes[1]
        if rng.random() < 0.7:
            assert memory.delete_before_snapshot(sid) == file.delete_before_snapshot(sid)
        return f"snapshot {sid}"
    return "noop"


@pytest.mark.parametrize("seed", range(25))
def test_file_log_matches_memory_log(tmp_path, seed: int) -> None:
    rng = random.Random(seed)
    memory = MemoryLog()
    file = open_log(tmp_path)
    epoch = [1]
    history = []
    try:
        for _ in range(60):
            history.append(step(rng, memory, file, epoch))
            if rng.random() < 0.1:
                memory.flush()
                file.close()
                file = open_log(tmp_path)
                history.append("reopen")
                # The HWM is not persisted (the core re-learns it); align the reference.
                memory.update_high_watermark(file.high_watermark())
            assert observe(file) == observe(memory), history
    finally:
        file.close()
