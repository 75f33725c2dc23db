"""A replica's move between log directories on the storage side: the `-future` log, the swap, an abandoned move,
and a restart in the middle of the swap."""

from __future__ import annotations

import os
import uuid

from pykraft.storage.files import LOG_START_CHECKPOINT
from pykraft.storage.log_manager import PartitionLogs
from pykraft.storage.offset_checkpoints import read_offsets

from .helpers import SMALL, batch

TOPIC_ID = uuid.UUID("9e0f1c2d-0b3a-4c5d-8e6f-7a8b9c0d1e2f")


def _logs(a: str, b: str) -> PartitionLogs:
    return PartitionLogs((a, b), lambda topic: SMALL)


def _copy_all(current, future) -> None:
    future.truncate_fully_and_start_at(current.read(current.start_offset(), 1).start_offset)
    while future.end_offset() < current.end_offset():
        future.append_as_follower(current.read(max(future.end_offset(), current.start_offset()), 1 << 20).records, 0)


def test_a_future_log_swaps_in_with_the_same_records_start_and_epochs(tmp_path) -> None:
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    os.makedirs(a)
    os.makedirs(b)
    logs = _logs(a, b)
    log = logs.get_or_create("t", 0, TOPIC_ID)
    assert logs.dir_of("t", 0) == a  # the least loaded (first) directory
    for i in range(10):
        log.append_as_follower(batch(log.end_offset(), 1 + i // 5, 2, size=40), 1)
    log.update_high_watermark(log.end_offset())
    log.initialize_leader_epoch(7)  # a leader's epoch without a batch yet: carried over too
    log.increment_log_start(5)
    future = logs.create_future("t", 0, b)
    assert logs.future_dir_of("t", 0) == b and logs.future_logs() == {("t", 0): future}
    _copy_all(log, future)
    future.update_high_watermark(log.high_watermark())
    future.increment_log_start(log.start_offset())
    expected = bytes(log.read(log.start_offset(), 1 << 20).records)
    moved = logs.promote_future("t", 0)
    assert logs.dir_of("t", 0) == b and logs.get("t", 0) is moved and logs.future_logs() == {}
    assert moved.start_offset() == 5 and moved.end_offset() == 20 and moved.high_watermark() == 20
    assert bytes(moved.read(5, 1 << 20).records) == expected
    assert moved.epoch_entries()[-1] == (7, 20) and moved.epoch_entries()[0][1] == 5
    assert sorted(os.listdir(a)) == sorted(n for n in os.listdir(a) if not n.startswith("t-0"))
    assert ("t", 0) not in read_offsets(os.path.join(a, LOG_START_CHECKPOINT))
    logs.close()
    again = _logs(a, b)
    again.load()
    assert again.dir_of("t", 0) == b and again.get("t", 0).start_offset() == 5
    again.close()


def test_an_abandoned_move_leaves_the_replica_and_no_trace(tmp_path) -> None:
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    os.makedirs(a)
    os.makedirs(b)
    logs = _logs(a, b)
    log = logs.get_or_create("t", 0, TOPIC_ID)
    log.append_as_follower(batch(0, 1, 3, size=40), 1)
    future = logs.create_future("t", 0, b)
    future.truncate_fully_and_start_at(0)
    assert logs.abandon_future("t", 0) is True
    assert os.listdir(b) == [] or all(not n.startswith("t-0") for n in os.listdir(b))
    assert ("t", 0) not in read_offsets(os.path.join(b, LOG_START_CHECKPOINT))
    logs.create_future("t", 0, b)
    logs.close()  # a restart does not resume a move
    again = _logs(a, b)
    again.load()
    assert again.dir_of("t", 0) == a and again.get("t", 0).end_offset() == 3
    assert not [n for n in os.listdir(b) if n.endswith("-future")]
    again.close()


def test_a_swap_interrupted_between_its_renames_promotes_the_future_log(tmp_path) -> None:
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    os.makedirs(a)
    os.makedirs(b)
    logs = _logs(a, b)
    log = logs.get_or_create("t", 0, TOPIC_ID)
    log.append_as_follower(batch(0, 1, 4, size=40), 1)
    future = logs.create_future("t", 0, b)
    _copy_all(log, future)
    log.flush(force_active_segment=True)
    future.flush(force_active_segment=True)
    # The crash: the current directory already renamed for deletion, the future one not yet renamed live.
    os.rename(os.path.join(a, "t-0"), os.path.join(a, "t-0." + "0" * 32 + "-delete"))
    logs._release()  # the process is gone: only its directory locks go with it
    again = _logs(a, b)
    again.load()
    assert again.dir_of("t", 0) == b and again.get("t", 0).end_offset() == 4
    assert os.listdir(a) == [".lock"] or all(not n.startswith("t-0") for n in os.listdir(a))
    again.close()
