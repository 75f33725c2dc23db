"""Snapshot files: naming, atomic freeze, slices, Kafka's header/footer layout, bootstrap, corruption, retention."""

from __future__ import annotations

import os
import uuid

import pytest
from kio.schema.voters_record.v0.data import Endpoint, KRaftVersionFeature, Voter, VotersRecord
from kio.static.primitive import i16, i32, u16

from pykraft.raft.log import OffsetAndEpoch
from pykraft.records import SimpleRecord, iter_batches
from pykraft.records.control import ControlRecordType, decode_control_record
from pykraft.storage import CorruptSnapshotError, LogConfig, maybe_clean, open_file_log
from pykraft.storage.snapshot_content import SnapshotBuilder, write_bootstrap_snapshot

from .helpers import SMALL, batch, fill, open_log, partition_dir

VOTERS = VotersRecord(
    version=i16(0),
    voters=(
        Voter(
            voter_id=i32(1),
            voter_directory_id=uuid.UUID(int=7),
            endpoints=(Endpoint(name="CONTROLLER", host="localhost", port=u16(9093)),),
            k_raft_version_feature=KRaftVersionFeature(min_supported_version=i16(0), max_supported_version=i16(1)),
        ),
    ),
)


def control_types(data) -> list[list[ControlRecordType]]:
    out = []
    for b in iter_batches(data):
        out.append([decode_control_record(r).type for r in b.records()] if b.is_control else ["data"] * b.record_count)
    return out


def test_bootstrap_snapshot_layout_and_name(tmp_path) -> None:
    log = open_log(tmp_path)
    write_bootstrap_snapshot(log, VOTERS, now_ms=1234)
    assert os.path.exists(os.path.join(partition_dir(tmp_path), "00000000000000000000-0000000000.checkpoint"))
    reader = log.read_snapshot(OffsetAndEpoch(0, 0))
    assert reader is not None
    batches = list(iter_batches(reader.records()))
    assert [b.base_offset for b in batches] == [0, 3] and all(b.partition_leader_epoch == 0 for b in batches)
    assert control_types(reader.records()) == [
        [ControlRecordType.SNAPSHOT_HEADER, ControlRecordType.KRAFT_VERSION, ControlRecordType.KRAFT_VOTERS],
        [ControlRecordType.SNAPSHOT_FOOTER],
    ]
    voters = [decode_control_record(r).message for r in batches[0].records()][2]
    assert voters == VOTERS
    log.close()


def test_snapshot_with_data_and_kraft_version_0(tmp_path) -> None:
    log = fill(open_log(tmp_path), (2, 3))
    log.update_high_watermark(3)
    writer = log.create_new_snapshot(OffsetAndEpoch(3, 2))
    assert writer is not None
    builder = SnapshotBuilder(writer, last_contained_log_timestamp=99, now_ms=5, kraft_version=0)
    builder.append([SimpleRecord(value=b"a"), SimpleRecord(value=b"b")])
    builder.freeze()
    reader = log.read_snapshot(OffsetAndEpoch(3, 2))
    assert reader is not None
    assert control_types(reader.records()) == [
        [ControlRecordType.SNAPSHOT_HEADER], ["data", "data"], [ControlRecordType.SNAPSHOT_FOOTER]
    ]
    assert [b.base_offset for b in iter_batches(reader.records())] == [0, 1, 3]
    # FetchSnapshot reads unaligned slices; concatenated they give the file back.
    total = reader.size_in_bytes()
    pieces = b"".join(bytes(reader.read(p, 7)) for p in range(0, total, 7))
    assert pieces == bytes(reader.records()) == open(reader.path, "rb").read()
    log.close()


def test_snapshot_is_invisible_until_frozen_and_survives_reopen(tmp_path) -> None:
    log = open_log(tmp_path)
    writer = log.create_new_snapshot_unchecked(OffsetAndEpoch(50, 4))
    assert writer is not None
    for chunk in (batch(0, 4, 2)[:30], batch(0, 4, 2)[30:]):  # received in unaligned chunks
        writer.append(chunk)
    names = os.listdir(partition_dir(tmp_path))
    assert any(n.endswith(".checkpoint.part") for n in names) and not any(n.endswith(".checkpoint") for n in names)
    writer.freeze()
    log.close()
    log = open_log(tmp_path)
    # The log was behind the snapshot: opening truncates to it (Kafka does the same on start).
    assert log.latest_snapshot_id() == OffsetAndEpoch(50, 4)
    assert (log.start_offset(), log.end_offset()) == (50, 50)
    log.close()


def test_corrupt_frozen_snapshot_refuses_to_start(tmp_path) -> None:
    log = fill(open_log(tmp_path), (1, 4))
    writer = log.create_new_snapshot_unchecked(OffsetAndEpoch(4, 1))
    assert writer is not None
    writer.append(batch(0, 1, 4))
    writer.freeze()
    log.close()
    path = os.path.join(partition_dir(tmp_path), "00000000000000000004-0000000001.checkpoint")
    data = bytearray(open(path, "rb").read())
    data[-2] ^= 0x10
    open(path, "wb").write(bytes(data))
    with pytest.raises(CorruptSnapshotError, match="00000000000000000004-0000000001.checkpoint"):
        open_file_log(str(tmp_path), SMALL)


def freeze_with_header(log, snapshot_id: OffsetAndEpoch, timestamp: int) -> None:
    writer = log.create_new_snapshot(snapshot_id)
    assert writer is not None
    builder = SnapshotBuilder(writer, last_contained_log_timestamp=timestamp, now_ms=timestamp)
    builder.append([SimpleRecord(value=b"s" * 100)])
    builder.freeze()


def test_retention_by_bytes_keeps_the_latest_snapshot(tmp_path) -> None:
    config = LogConfig(segment_bytes=400, index_interval_bytes=100, retention_bytes=1, retention_ms=-1)
    log, _ = open_file_log(str(tmp_path), config)
    fill(log, *[(1, 2)] * 20)
    log.update_high_watermark(40)
    for offset in (10, 20, 30):
        freeze_with_header(log, OffsetAndEpoch(offset, 1), timestamp=0)
    segments_before = len(log.segment_base_offsets())
    assert maybe_clean(log, now_ms=0)
    assert log.snapshot_ids() == [OffsetAndEpoch(30, 1)]
    assert log.start_offset() == 30 and len(log.segment_base_offsets()) < segments_before
    assert min(log.segment_base_offsets()) <= 30
    assert not maybe_clean(log, now_ms=0)
    log.close()
    log, _ = open_file_log(str(tmp_path), config)
    assert log.start_offset() == 30 and log.end_offset() == 40
    log.close()


def test_retention_by_time_uses_the_snapshot_header_timestamp(tmp_path) -> None:
    config = LogConfig(segment_bytes=400, index_interval_bytes=100, retention_bytes=-1, retention_ms=1000)
    log, _ = open_file_log(str(tmp_path), config)
    fill(log, *[(1, 2)] * 10)
    log.update_high_watermark(20)
    freeze_with_header(log, OffsetAndEpoch(6, 1), timestamp=100)
    freeze_with_header(log, OffsetAndEpoch(12, 1), timestamp=5000)
    freeze_with_header(log, OffsetAndEpoch(18, 1), timestamp=6000)
    assert not maybe_clean(log, now_ms=1100)  # oldest is exactly 1000 ms old: kept
    assert maybe_clean(log, now_ms=1101)
    assert log.snapshot_ids() == [OffsetAndEpoch(12, 1), OffsetAndEpoch(18, 1)]
    assert maybe_clean(log, now_ms=10**6)
    assert log.snapshot_ids() == [OffsetAndEpoch(18, 1)] and log.start_offset() == 18
    log.close()
