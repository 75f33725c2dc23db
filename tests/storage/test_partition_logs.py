"""Partition logs on a broker: one storage layer with the metadata log (open_file_log), Kafka's layout, recovery,
deletion, checkpoints and retention."""

from __future__ import annotations

import os
import uuid

import pytest

from pykraft.storage import CorruptLogError, LogLayoutError, open_file_log
from pykraft.storage.file_log import LogConfig
from pykraft.storage.files import LOG_START_CHECKPOINT, REPLICATION_CHECKPOINT
from pykraft.storage.log_manager import PartitionLogs, read_topic_id
from pykraft.storage.offset_checkpoints import read_offsets
from pykraft.storage.retention import delete_expired_segments

from .helpers import SMALL, batch

TOPIC_ID = uuid.UUID("5b1b6c53-8e3a-4b43-9a43-4a2a1f0c9d11")


def _logs(*dirs: str) -> PartitionLogs:
    return PartitionLogs(tuple(dirs), lambda topic: SMALL)


def _fill(log, count: int, epoch: int = 1, timestamp_ms: int = 1000) -> None:
    for _ in range(count):
        log.append_as_follower(batch(log.end_offset(), epoch, 2, timestamp_ms=timestamp_ms, size=50), epoch)


def test_partition_log_layout_and_reload(tmp_path) -> None:
    d = str(tmp_path / "d1")
    logs = _logs(d)
    log = logs.get_or_create("orders", 3, TOPIC_ID)
    _fill(log, 6)
    log.update_high_watermark(8)
    log.flush()
    logs.close()
    part = os.path.join(d, "orders-3")
    names = set(os.listdir(part))
    assert {"partition.metadata", "leader-epoch-checkpoint", "00000000000000000000.log",
            "00000000000000000000.index", "00000000000000000000.timeindex"} <= names
    assert len([n for n in names if n.endswith(".log")]) > 1  # SMALL segments rolled
    assert read_topic_id(part) == TOPIC_ID
    assert read_offsets(os.path.join(d, REPLICATION_CHECKPOINT)) == {("orders", 3): 8}
    assert read_offsets(os.path.join(d, "recovery-point-offset-checkpoint")) == {("orders", 3): 12}

    again = _logs(d)
    reports = again.load()
    assert [key for key, _ in reports] == [("orders", 3)]
    reopened = again.get("orders", 3)
    assert reopened.end_offset() == 12 and reopened.high_watermark() == 8
    assert reopened.epoch_entries() == [(1, 0)]
    again.close()


def test_metadata_log_and_partition_logs_share_a_directory(tmp_path) -> None:
    """metadata.log.dir defaults to the first of log.dirs: the checkpoint files keep both kinds of entries."""
    d = str(tmp_path)
    meta, _ = open_file_log(d, SMALL)
    logs = PartitionLogs((d,), lambda topic: SMALL, held_locks={d: meta._lock})
    log = logs.get_or_create("t", 0, TOPIC_ID)
    _fill(log, 6)
    log.update_high_watermark(log.end_offset())
    delete_expired_segments(log, now_ms=10**12, retention_ms=1, retention_bytes=-1)
    assert log.start_offset() > 0
    from pykraft.storage.retention import write_log_start

    write_log_start(meta, 0)
    entries = read_offsets(os.path.join(d, LOG_START_CHECKPOINT))
    assert entries == {("__cluster_metadata", 0): 0, ("t", 0): log.start_offset()}
    logs.close()
    meta.close()


def test_corrupt_middle_refuses_to_load_and_changes_nothing(tmp_path) -> None:
    d = str(tmp_path)
    logs = PartitionLogs((d,), lambda topic: LogConfig(index_interval_bytes=100))
    log = logs.get_or_create("t", 0, TOPIC_ID)
    _fill(log, 3)
    log.flush()
    logs.close()
    path = os.path.join(d, "t-0", "00000000000000000000.log")
    with open(path, "r+b") as f:
        f.seek(70)  # inside the first batch's records: its CRC fails, valid batches follow
        byte = f.read(1)
        f.seek(70)
        f.write(bytes([byte[0] ^ 0xFF]))
    before = open(path, "rb").read()
    again = _logs(d)
    with pytest.raises(CorruptLogError, match="corrupt partition log.*fetches the partition again"):
        again.load()
    again.close()
    assert open(path, "rb").read() == before


def test_torn_tail_of_a_partition_log_is_cut(tmp_path) -> None:
    d = str(tmp_path)
    logs = PartitionLogs((d,), lambda topic: LogConfig())
    _fill(logs.get_or_create("t", 0, TOPIC_ID), 3)
    logs.close()
    path = os.path.join(d, "t-0", "00000000000000000000.log")
    size = os.path.getsize(path)
    os.truncate(path, size - 10)
    again = _logs(d)
    [(key, report)] = again.load()
    assert report.torn_tail is not None and again.get("t", 0).end_offset() == 4
    again.close()


def test_delete_removes_directory_and_checkpoint_entries(tmp_path) -> None:
    d = str(tmp_path)
    logs = _logs(d)
    _fill(logs.get_or_create("t", 0, TOPIC_ID), 2)
    _fill(logs.get_or_create("t", 1, TOPIC_ID), 2)
    logs.checkpoint()
    assert logs.delete("t", 0) and not logs.delete("t", 0)
    assert not os.path.exists(os.path.join(d, "t-0"))
    assert set(read_offsets(os.path.join(d, REPLICATION_CHECKPOINT))) == {("t", 1)}
    logs.close()
    # A deletion interrupted after the rename is finished on the next load.
    os.rename(os.path.join(d, "t-1"), os.path.join(d, "t-1.abc-delete"))
    again = _logs(d)
    assert again.load() == [] and os.listdir(d).count("t-1.abc-delete") == 0
    again.close()


def test_recreated_topic_replaces_the_old_log_and_a_stray_directory_is_refused(tmp_path) -> None:
    d = str(tmp_path)
    logs = _logs(d)
    _fill(logs.get_or_create("t", 0, TOPIC_ID), 2)
    fresh = logs.get_or_create("t", 0, uuid.uuid4())
    assert fresh.end_offset() == 0
    logs.close()
    with pytest.raises(LogLayoutError, match="another topic id"):
        open_file_log(d, SMALL, topic="t", partition=0, topic_id=TOPIC_ID)


def test_new_partitions_spread_over_log_dirs(tmp_path) -> None:
    dirs = [str(tmp_path / "a"), str(tmp_path / "b")]
    logs = _logs(*dirs)
    for p in range(4):
        logs.get_or_create("t", p, TOPIC_ID)
    assert sorted(len([n for n in os.listdir(d) if n.startswith("t-")]) for d in dirs) == [2, 2]
    logs.close()


def test_retention_by_bytes_and_time_stops_at_the_high_watermark(tmp_path) -> None:
    logs = _logs(str(tmp_path))
    log = logs.get_or_create("t", 0, TOPIC_ID)
    _fill(log, 8, timestamp_ms=1000)
    segments = log.segment_base_offsets()
    assert len(segments) >= 3
    log.update_high_watermark(segments[1])  # only the first segment is wholly committed
    assert delete_expired_segments(log, now_ms=10**9, retention_ms=1, retention_bytes=-1) == 1
    assert log.start_offset() == segments[1]
    log.update_high_watermark(log.end_offset())
    assert delete_expired_segments(log, now_ms=0, retention_ms=-1, retention_bytes=-1) == 0
    deleted = delete_expired_segments(log, now_ms=0, retention_ms=-1, retention_bytes=1)
    assert deleted == len(segments) - 2 and log.segment_base_offsets() == [segments[-1]]
    assert log.epoch_entries() == [(1, segments[-1])]
    logs.close()
    again = _logs(str(tmp_path))
    again.load()
    assert again.get("t", 0).start_offset() == segments[-1]
    again.close()
