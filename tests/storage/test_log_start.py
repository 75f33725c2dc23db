"""DeleteRecords' side of a partition log: the log start moved into a segment, its checkpoint, the epochs cut at
it, retention deleting the segments wholly below it, and a reopen finding it again."""

from __future__ import annotations

import os
import uuid

import pytest

from pykraft.storage.files import LOG_START_CHECKPOINT
from pykraft.storage.log_manager import PartitionLogs
from pykraft.storage.log_start import LogStartBeyondHighWatermarkError, truncate_epochs_from_start
from pykraft.storage.offset_checkpoints import read_offsets
from pykraft.storage.retention import delete_expired_segments

from .helpers import SMALL, batch

TOPIC_ID = uuid.UUID("0f4f2a4e-3c61-4d55-8d0b-6e3d2b0d5a77")


def _filled(directory: str, batches: int) -> tuple[PartitionLogs, object]:
    logs = PartitionLogs((directory,), lambda topic: SMALL)
    log = logs.get_or_create("t", 0, TOPIC_ID)
    for i in range(batches):
        epoch = 1 if i < batches // 2 else 3
        log.append_as_follower(batch(log.end_offset(), epoch, 2, timestamp_ms=1000, size=50), epoch)
    log.update_high_watermark(log.end_offset())
    return logs, log


def test_epochs_cut_at_the_start_keep_the_covering_epoch() -> None:
    epochs = [(1, 0), (3, 10), (5, 20)]
    assert truncate_epochs_from_start(epochs, 0) == epochs
    assert truncate_epochs_from_start(epochs, 15) == [(3, 15), (5, 20)]
    assert truncate_epochs_from_start(epochs, 20) == [(5, 20)]
    assert truncate_epochs_from_start(epochs, 25) == [(5, 25)]


def test_start_moves_into_a_segment_up_to_the_high_watermark(tmp_path) -> None:
    logs, log = _filled(str(tmp_path), 12)
    end = log.end_offset()
    bases = log.segment_base_offsets()
    assert len(bases) > 2
    middle = bases[1] + 1  # inside the second segment (batches of 2 records)
    assert log.increment_log_start(middle) is True
    assert log.start_offset() == middle and log.segment_base_offsets() == bases  # nothing deleted yet
    assert log.increment_log_start(middle - 1) is False and log.start_offset() == middle  # never backwards
    assert log.epoch_entries()[0][1] == middle
    with pytest.raises(LogStartBeyondHighWatermarkError):
        log.increment_log_start(end + 1)
    assert log.start_offset() == middle
    # A read at the start returns the batch that holds it (its first record lies below the start, as in Kafka).
    assert log.read(middle, 1 << 20).start_offset == middle - 1
    logs.close()


def test_retention_deletes_the_segments_wholly_below_and_a_reopen_keeps_the_start(tmp_path) -> None:
    directory = str(tmp_path)
    logs, log = _filled(directory, 12)
    bases = log.segment_base_offsets()
    start = bases[2] + 1
    log.increment_log_start(start)
    logs.checkpoint()
    assert read_offsets(os.path.join(directory, LOG_START_CHECKPOINT)) == {("t", 0): start}
    # No retention by time or size: only the log start makes segments go, and never the one holding it.
    assert delete_expired_segments(log, now_ms=2000, retention_ms=-1, retention_bytes=-1) == 2
    assert log.segment_base_offsets()[0] == bases[2] and log.start_offset() == start
    logs.close()

    again = PartitionLogs((directory,), lambda topic: SMALL)
    again.load()
    reopened = again.get("t", 0)
    assert reopened.start_offset() == start
    assert reopened.epoch_entries()[0][1] == start
    again.close()


def test_a_deleted_partition_leaves_no_log_start_entry(tmp_path) -> None:
    directory = str(tmp_path)
    logs, log = _filled(directory, 6)
    log.increment_log_start(3)
    logs.checkpoint()
    assert ("t", 0) in read_offsets(os.path.join(directory, LOG_START_CHECKPOINT))
    logs.delete("t", 0)
    assert ("t", 0) not in read_offsets(os.path.join(directory, LOG_START_CHECKPOINT))
    logs.close()
