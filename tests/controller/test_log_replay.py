"""controller/log_replay.py: metadata records out of encoded batches, the replayed-ahead ranges, the rebuild."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from kio.schema.k_raft_version_record.v0 import KRaftVersionRecord
from kio.static.primitive import i16

from pykraft.controller.log_replay import (IncompleteLogError, ReplayedAhead, decode_value, load_committed,
                                          metadata_records)
from pykraft.raft.log import OffsetAndEpoch
from pykraft.records import SimpleRecord, encode_batch
from pykraft.records.control import encode_control_batch
from pykraft.records.metadata.frame import encode_metadata_record
from pykraft.records.metadata.schema.feature_level_record import FeatureLevelRecordV0


def level(n: int) -> FeatureLevelRecordV0:
    return FeatureLevelRecordV0(name="metadata.version", feature_level=i16(n))


def batch(base: int, *values: bytes) -> bytes:
    return encode_batch([SimpleRecord(v) for v in values], base_offset=base, partition_leader_epoch=1,
                        timestamp_ms=1)


def test_metadata_records_skip_control_batches_and_report_values_that_are_not_metadata() -> None:
    bad = []
    data = (encode_control_batch([KRaftVersionRecord(version=i16(0), k_raft_version=i16(1))], base_offset=0,
                                 partition_leader_epoch=1, timestamp_ms=1)
            + batch(1, encode_metadata_record(level(20)), b'{"json": 1}', encode_metadata_record(level(21))))
    found = list(metadata_records(data, on_undecodable=bad.append))
    assert found == [(1, level(20)), (3, level(21))] and sum(bad) == 1
    assert decode_value(b"") is None and decode_value(None) is None


def test_skip_is_asked_before_decoding_and_up_to_ends_the_walk() -> None:
    data = batch(0, encode_metadata_record(level(20)), b"\x01garbage", encode_metadata_record(level(22)))
    data += batch(3, encode_metadata_record(level(23)))
    bad = []
    found = list(metadata_records(data, on_undecodable=bad.append, skip=lambda o: o == 1, up_to=2))
    assert found == [(0, level(20)), (2, level(22))] and bad == []  # offset 1 never decoded, offset 3 never read


def test_replayed_ahead_covers_its_ranges_once_in_log_order() -> None:
    ahead = ReplayedAhead()
    ahead.add(5, 7)
    ahead.add(10, 10)
    assert [o for o in range(4, 12) if ahead.covers(o)] == [5, 6, 7, 10]
    assert not ahead


def test_replayed_ahead_does_not_stall_on_a_gap_in_the_committed_offsets() -> None:
    ahead = ReplayedAhead()
    ahead.add(2, 3)
    ahead.add(8, 9)
    assert not ahead.covers(5) and ahead.covers(8) and ahead.covers(9) and not ahead


@dataclass
class _Read:
    records: bytes


@dataclass
class _Reader:
    data: bytes

    def records(self) -> bytes:
        return self.data


@dataclass
class _Log:
    """The RaftLog reads load_committed uses: a snapshot ending before offset 2, the log from `start` (2 unless
    the records before the snapshot are still there)."""

    snapshot: bytes
    log: bytes
    start: int = 2

    def latest_snapshot_id(self) -> OffsetAndEpoch:
        return OffsetAndEpoch(2, 1)

    def read_snapshot(self, _id: OffsetAndEpoch) -> _Reader:
        return _Reader(self.snapshot)

    def start_offset(self) -> int:
        return self.start

    def read(self, start: int, _max: int) -> _Read:
        assert start == self.start
        return _Read(self.log)


class _Target:
    def __init__(self) -> None:
        self.loaded: tuple[list, int] | None = None
        self.replayed: list[tuple[int, object]] = []

    def load_snapshot(self, records, last_contained_offset: int) -> None:
        self.loaded = (list(records), last_contained_offset)

    def replay(self, record, offset: int) -> None:
        self.replayed.append((offset, record))


def test_load_committed_is_the_snapshot_then_the_committed_records_only() -> None:
    log = _Log(snapshot=batch(0, encode_metadata_record(level(7)), encode_metadata_record(level(8))),
               log=batch(2, encode_metadata_record(level(9)), encode_metadata_record(level(10)))
               + batch(4, encode_metadata_record(level(11))))
    target = _Target()
    load_committed(target, log, committed_offset=3)
    assert target.loaded == ([level(7), level(8)], 1)
    assert target.replayed == [(2, level(9)), (3, level(10))]  # offset 4 is not committed


def test_load_committed_ignores_a_snapshot_beyond_the_committed_offset() -> None:
    log = _Log(snapshot=batch(0, encode_metadata_record(level(7)), encode_metadata_record(level(8))),
               log=batch(0, encode_metadata_record(level(7)), encode_metadata_record(level(8))), start=0)
    target = _Target()
    load_committed(target, log, committed_offset=0)
    assert target.loaded == ([], -1) and target.replayed == [(0, level(7))]  # from the log, up to offset 0


def test_load_committed_refuses_to_rebuild_without_the_records_before_the_log_start() -> None:
    """metadata_swarm seed 6006749: committed offset 21, snapshot at 23, log from 23; the rebuild was empty."""
    log = _Log(snapshot=batch(0, encode_metadata_record(level(7)), encode_metadata_record(level(8))), log=b"")
    target = _Target()
    with pytest.raises(IncompleteLogError, match="log starts at 2"):
        load_committed(target, log, committed_offset=0)


def test_on_batch_sees_every_batch_header_control_batches_included() -> None:
    data = (encode_control_batch([KRaftVersionRecord(version=i16(0), k_raft_version=i16(1))], base_offset=0,
                                 partition_leader_epoch=1, timestamp_ms=1)
            + batch(1, encode_metadata_record(level(20))))
    seen = []
    found = list(metadata_records(data, on_batch=lambda b: seen.append(b.base_offset)))
    assert seen == [0, 1] and found == [(1, level(20))]
