"""KRaft control records: key layout, round trips through kio's schemas, and decode errors."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.schema.k_raft_version_record.v0 import KRaftVersionRecord
from kio.schema.leader_change_message.v0 import LeaderChangeMessage as LeaderChangeV0
from kio.schema.leader_change_message.v0.data import Voter as VoterV0
from kio.schema.leader_change_message.v1 import LeaderChangeMessage as LeaderChangeV1
from kio.schema.snapshot_footer_record.v0 import SnapshotFooterRecord
from kio.schema.snapshot_header_record.v0 import SnapshotHeaderRecord
from kio.schema.voters_record.v0 import VotersRecord
from kio.static.primitive import i16, i32

from pykraft.records import Record, RecordsError, SimpleRecord, iter_batches
from pykraft.records.control import (
    ControlRecordType,
    InvalidControlRecordError,
    decode_control_record,
    encode_control_batch,
    encode_control_record,
)

CASES = [
    (LeaderChangeV0, ControlRecordType.LEADER_CHANGE, 0),
    (LeaderChangeV1, ControlRecordType.LEADER_CHANGE, 1),
    (SnapshotHeaderRecord, ControlRecordType.SNAPSHOT_HEADER, 0),
    (SnapshotFooterRecord, ControlRecordType.SNAPSHOT_FOOTER, 0),
    (KRaftVersionRecord, ControlRecordType.KRAFT_VERSION, 0),
    (VotersRecord, ControlRecordType.KRAFT_VOTERS, 0),
]


def with_version(cls, version):
    # The messages carry their own schema version as the first field; Kafka keeps it equal to the schema's.
    return st.from_type(cls).map(lambda m: __import__("dataclasses").replace(m, version=i16(version)))


@pytest.mark.parametrize("cls,kind,version", CASES, ids=[c[0].__name__ + f"v{c[2]}" for c in CASES])
@given(data=st.data())
def test_control_records_round_trip_through_a_control_batch(cls, kind, version, data):
    message = data.draw(with_version(cls, version))
    raw = encode_control_batch([message], base_offset=4, partition_leader_epoch=2, timestamp_ms=99)
    (batch,) = list(iter_batches(raw))
    assert batch.is_control
    (record,) = list(batch.records())
    assert bytes(record.key) == struct.pack(">hh", 0, kind)
    decoded = decode_control_record(record)
    assert (decoded.type, decoded.message) == (kind, message)


def test_leader_change_v0_bytes_match_kafkas_layout():
    message = LeaderChangeV0(version=i16(0), leader_id=i32(1), voters=(VoterV0(voter_id=i32(1)),), granting_voters=())
    value = encode_control_record(message).value
    # version int16 0 | leader id int32 1 | compact array of 1 voter {id 1, no tags} | empty array | no tags
    assert value == bytes.fromhex("0000" "00000001" "02" "00000001" "00" "01" "00")


def test_start_of_epoch_batch_keeps_record_order():
    messages = [
        LeaderChangeV0(version=i16(0), leader_id=i32(3), voters=(), granting_voters=()),
        KRaftVersionRecord(version=i16(0), k_raft_version=i16(1)),
        VotersRecord(version=i16(0), voters=()),
    ]
    (batch,) = list(iter_batches(encode_control_batch(messages, base_offset=0, partition_leader_epoch=1, timestamp_ms=0)))
    assert [decode_control_record(r).message for r in batch.records()] == messages


def record(key, value):
    return Record(0, 0, None if key is None else memoryview(key), None if value is None else memoryview(value), ())


def test_unknown_control_type_is_reported_not_decoded():
    decoded = decode_control_record(record(struct.pack(">hh", 0, 42), b"\x00\x00"))
    assert decoded.type is ControlRecordType.UNKNOWN and decoded.type_id == 42 and decoded.message is None


def test_transaction_markers_are_recognised_without_decoding():
    assert decode_control_record(record(struct.pack(">hh", 0, 1), b"\x00\x00\x00\x00\x00\x00")).type is ControlRecordType.COMMIT


@pytest.mark.parametrize(
    "key,value",
    [
        (None, b"\x00\x00"),
        (b"\x00\x00\x00", b"\x00\x00"),
        (struct.pack(">hh", -1, 2), b"\x00\x00"),
        (struct.pack(">hh", 0, 2), None),
        (struct.pack(">hh", 0, 2), b"\x00"),
        (struct.pack(">hh", 0, 2), b"\x00\x07"),  # LeaderChange version 7
        (struct.pack(">hh", 0, 2), b"\x00\x00\x00\x00"),  # truncated body
        (struct.pack(">hh", 0, 4), b"\x00\x00\x00\xff"),  # footer with trailing byte
    ],
)
def test_bad_control_records_raise_invalid_control_record(key, value):
    with pytest.raises(InvalidControlRecordError):
        decode_control_record(record(key, value))


@given(key=st.binary(min_size=4, max_size=4), value=st.one_of(st.none(), st.binary(max_size=80)))
def test_random_control_records_raise_only_records_errors(key, value):
    try:
        decode_control_record(record(key, value))
    except RecordsError:
        pass


def test_encode_refuses_non_control_messages():
    with pytest.raises(TypeError):
        encode_control_record(SimpleRecord(b"x"))


def test_control_records_decode_from_a_writable_buffer_as_a_log_read_from_disk_gives_them():
    """A file log reads segments into a bytearray; kio refuses writable buffers, so the decoder must not pass one
    on (this lost every VotersRecord of a restarted observer's log: it could not find its controllers)."""
    message = KRaftVersionRecord(version=i16(0), k_raft_version=i16(1))
    raw = encode_control_batch([message], base_offset=7, partition_leader_epoch=1, timestamp_ms=5)
    (batch,) = iter_batches(memoryview(bytearray(raw)), verify_crc=False)
    (record,) = batch.records()
    assert decode_control_record(record).message == message


# ---- pykraft's quorum reassignment target, a tagged field of a VotersRecord ---------------------------------------
@given(data=st.data())
def test_a_voters_record_with_a_target_round_trips_and_reads_as_a_plain_voters_record(data):
    from pykraft.records.control import PYKRAFT_TARGET_VOTERS_TAG, VotersRecordWithTarget

    voters = data.draw(with_version(VotersRecord, 0))
    target = data.draw(with_version(VotersRecord, 0))
    raw = encode_control_batch([VotersRecordWithTarget(voters, target)], base_offset=0, partition_leader_epoch=1,
                               timestamp_ms=0)
    (record,) = list(next(iter_batches(raw)).records())
    decoded = decode_control_record(record)
    assert (decoded.type, decoded.message, decoded.voters_target) == (ControlRecordType.KRAFT_VOTERS, voters, target)
    # Kafka's layout: the plain record's bytes up to its (empty) tagged section, then one tagged field.
    plain = encode_control_record(voters).value
    value = bytes(record.value)
    assert value[:len(plain) - 1] == plain[:-1] and value[len(plain) - 1] == 1
    tag = value[len(plain):len(plain) + 2]
    assert tag == bytes([0x80 | (PYKRAFT_TARGET_VOTERS_TAG & 0x7F), PYKRAFT_TARGET_VOTERS_TAG >> 7])


def test_a_voters_record_without_the_tag_has_no_target_and_an_empty_target_is_kept_empty():
    from pykraft.records.control import VotersRecordWithTarget

    voters = VotersRecord(version=i16(0), voters=())
    plain, cleared = (list(next(iter_batches(encode_control_batch(
        [m], base_offset=0, partition_leader_epoch=1, timestamp_ms=0))).records())[0]
        for m in (voters, VotersRecordWithTarget(voters, voters)))
    assert decode_control_record(plain).voters_target is None
    assert decode_control_record(cleared).voters_target == voters
