"""The walk that guards kio's native reader (pykraft.protocol.wire_check), on its own and through its three users:
the protocol codec, the metadata record frame (more in tests/records/test_metadata_*.py) and control records.

It agrees with kio on every valid encoding, stops the array lengths that make kio 0.6.5 abort the process (it
allocates 8 bytes per announced element before checking the buffer), cuts unknown tagged fields out like Kafka
skips them, and rejects what Kafka's reader rejects (tags of other versions, nulls in non-nullable fields)."""

from __future__ import annotations

import dataclasses
import datetime
import io
import struct
import subprocess
import sys
import textwrap

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.index import load_request_schema, load_response_schema
from kio.schema.describe_quorum.v2.request import DescribeQuorumRequest
from kio.schema.fetch.v17.request import FetchRequest
from kio.schema.leader_change_message.v1 import LeaderChangeMessage
from kio.schema.metadata.v4.request import MetadataRequest as MetadataRequestV4
from kio.schema.vote.v2.request import VoteRequest
from kio.schema.voters_record.v0 import VotersRecord
from kio.serial import entity_reader, entity_writer

from pykraft.protocol.apis import KRAFT_NODE_APIS, ApiKey
from pykraft.protocol.codec import decode_request, decode_response
from pykraft.protocol.errors import MalformedRequestError, MalformedResponseError
from pykraft.protocol.wire_check import (
    TagRules,
    WireFormatError,
    apply_edits,
    guard_for,
    kio_input,
    read_uvarint,
    tag_rules,
    uvarint_bytes,
)
from pykraft.records.metadata.schema.partition_record import PartitionRecordV2

from .helpers import REQUEST_CLASSES, RESPONSE_CLASSES, class_id

uvarint = uvarint_bytes


def encoded(cls: type, message: object) -> bytes:
    buffer = io.BytesIO()
    entity_writer(cls)(buffer, message)
    return buffer.getvalue()


def walk(cls: type, data: bytes, start: int = 0, end: int | None = None) -> tuple[int, list]:
    return guard_for(cls).walk(memoryview(data), start, len(data) if end is None else end)


# --- agreement with kio on valid bytes --------------------------------------------------------------------

# Classes outside the registry: KIP-893 nullable structs and control records. (The registry's classes include
# legacy, non-flexible ones such as MetadataRequest v4.)
OTHER_CLASSES = [load_response_schema(68, 0), load_request_schema(75, 0), VotersRecord, LeaderChangeMessage]


@pytest.mark.parametrize("cls", REQUEST_CLASSES + RESPONSE_CLASSES + OTHER_CLASSES, ids=class_id)
@settings(max_examples=15, suppress_health_check=list(HealthCheck), deadline=None)
@given(data=st.data())
def test_walk_ends_exactly_where_kios_encoding_ends(cls: type, data: st.DataObject) -> None:
    raw = encoded(cls, data.draw(st.from_type(cls)))
    assert walk(cls, b"pad" + raw, 3) == (len(raw) + 3, [])
    cuts = range(3, len(raw) + 3)  # a proper prefix is reported as truncated: all of them, or 100 of a long one
    for cut in cuts if len(cuts) <= 200 else data.draw(st.lists(st.sampled_from(cuts), min_size=100, max_size=100)):
        with pytest.raises(WireFormatError) as caught:
            walk(cls, b"pad" + raw, 3, cut)
        assert caught.value.truncated


# --- hostile lengths ---------------------------------------------------------------------------------------


def test_legacy_null_array_and_huge_legacy_length() -> None:
    """MetadataRequest v4 is a non-flexible message: int32 array lengths, -1 for null."""
    assert walk(MetadataRequestV4, bytes.fromhex("ffffffff") + b"\x01") == (5, [])  # topics = null
    with pytest.raises(WireFormatError, match="array topics of 2147483647 elements cannot fit") as caught:
        walk(MetadataRequestV4, bytes.fromhex("7fffffff") + b"\x01")
    assert caught.value.truncated
    with pytest.raises(WireFormatError, match="invalid length -2") as caught:
        walk(MetadataRequestV4, bytes.fromhex("fffffffe") + b"\x01")
    assert not caught.value.truncated


def test_huge_compact_array_in_a_control_record() -> None:
    """VotersRecord v0: version int16, then the compact Voters array length (2^28 - 2 elements)."""
    with pytest.raises(WireFormatError, match="array voters of 268435454 elements") as caught:
        walk(VotersRecord, b"\x00\x00" + bytes.fromhex("ffffff7f"))
    assert caught.value.truncated
    with pytest.raises(WireFormatError, match="invalid length 4294967294") as caught:  # more than a Java int
        walk(VotersRecord, b"\x00\x00" + bytes.fromhex("ffffffff0f"))
    assert not caught.value.truncated


# Hostile frame bodies, each announcing an array far larger than the bytes that follow.
HOSTILE_REQUESTS = {
    # Metadata v1: legacy int32 array length 2^31-1 (kio asks for 16 GiB).
    "legacy-array": struct.pack(">hhih", 3, 1, 9, -1) + struct.pack(">i", 2**31 - 1),
    # DescribeQuorum v2: compact array length 2^32 + 4 (kio asks for 32 GiB).
    "compact-array": struct.pack(">hhih", 55, 2, 9, -1) + b"\x00" + uvarint(2**32 + 5),
    # Vote v2: one topic whose nested partitions array announces 2^34 elements.
    "nested-array": struct.pack(">hhih", 52, 2, 9, -1) + b"\x00" + b"\x00" + struct.pack(">i", 1)
    + uvarint(2) + uvarint(2) + b"x" + uvarint(2**34),
}  # fmt: skip
# Vote v2 response whose tagged NodeEndpoints (tag 0) announces 2^33 endpoints.
_TAGGED = uvarint(2**33) + b"\x00" * 4
HOSTILE_RESPONSE = struct.pack(">i", 9) + b"\x00" + struct.pack(">h", 0) + uvarint(1) + uvarint(1) + uvarint(0) \
    + uvarint(len(_TAGGED)) + _TAGGED  # fmt: skip
# Control record values (key: version 0, type) read by the raft core from logs and snapshots.
HOSTILE_CONTROL = {
    "voters": (6, b"\x00\x00" + uvarint(2**32 - 1)),  # VotersRecord v0, Voters array
    "leader-change-v0": (2, b"\x00\x00" + struct.pack(">i", 1) + bytes.fromhex("ffffff7f")),
    "leader-change-v1": (2, b"\x00\x01" + struct.pack(">i", 1) + uvarint(2**34)),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_REQUESTS))
def test_hostile_request_lengths_are_malformed(name: str) -> None:
    with pytest.raises(MalformedRequestError, match="array .* (cannot fit|invalid length)") as info:
        decode_request(HOSTILE_REQUESTS[name], KRAFT_NODE_APIS)
    assert info.value.correlation_id == 9


def test_hostile_length_inside_a_tagged_field_is_malformed() -> None:
    with pytest.raises(MalformedResponseError, match="node_endpoints has invalid length 8589934591"):
        decode_response(HOSTILE_RESPONSE, ApiKey.VOTE, 2)


_SUBPROCESS = textwrap.dedent(
    """
    import resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))  # a 2 GiB machine, whatever this one has
    from pykraft.protocol import KRAFT_NODE_APIS, decode_request, decode_response, ProtocolError
    from pykraft.records import Record, RecordsError
    from pykraft.records.control import decode_control_record
    from tests.protocol.test_wire_check import HOSTILE_CONTROL, HOSTILE_REQUESTS, HOSTILE_RESPONSE
    from kio.serial import entity_reader
    from kio.index import load_request_schema
    from kio.schema.voters_record.v0 import VotersRecord
    if sys.argv[1] == "raw-kio":
        frame = HOSTILE_REQUESTS["legacy-array"] if sys.argv[2] == "request" else HOSTILE_CONTROL["voters"][1]
        cls = load_request_schema(3, 1) if sys.argv[2] == "request" else VotersRecord
        try:
            entity_reader(cls)(frame, 10 if sys.argv[2] == "request" else 0)
        except Exception as exc:
            print("kio raised", type(exc).__name__)
        sys.exit(0)
    for name, frame in sorted(HOSTILE_REQUESTS.items()):
        try:
            decode_request(frame, KRAFT_NODE_APIS)
        except ProtocolError as exc:
            print(name, type(exc).__name__)
    try:
        decode_response(HOSTILE_RESPONSE, 52, 2)
    except ProtocolError as exc:
        print("tagged", type(exc).__name__)
    for name, (kind, value) in sorted(HOSTILE_CONTROL.items()):
        key = memoryview(kind.to_bytes(4, "big"))
        try:
            decode_control_record(Record(0, 0, key, memoryview(value), ()))
        except RecordsError as exc:
            print(name, type(exc).__name__)
    """
)


def _run_limited(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _SUBPROCESS, *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_hostile_frames_and_control_records_do_not_kill_a_memory_limited_process() -> None:
    result = _run_limited("pykraft")
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.splitlines() == [
        "compact-array MalformedRequestError",
        "legacy-array MalformedRequestError",
        "nested-array MalformedRequestError",
        "tagged MalformedResponseError",
        "leader-change-v0 InvalidControlRecordError",
        "leader-change-v1 InvalidControlRecordError",
        "voters InvalidControlRecordError",
    ]


@pytest.mark.parametrize("what", ["request", "control"])
def test_raw_kio_aborts_on_the_same_bytes(what: str) -> None:
    # Why wire_check.py exists. If this starts failing, kio checks lengths itself now and the walk could go.
    result = _run_limited("raw-kio", what)
    assert result.returncode != 0
    assert "memory allocation" in result.stderr


# --- tagged fields -----------------------------------------------------------------------------------------


def _describe_quorum(tags: bytes, correlation_id: int = 4) -> bytes:
    """A DescribeQuorum v2 request frame body with no topics and the given top-level tag section."""
    return struct.pack(">hhih", 55, 2, correlation_id, -1) + b"\x00" + uvarint(1) + tags


def test_unknown_tagged_fields_are_skipped_like_kafka_does() -> None:
    # Changed from bounds.py, which rejected them: Kafka skips unknown tags, so a newer peer's message decodes.
    frame = _describe_quorum(uvarint(2) + uvarint(9) + uvarint(1) + b"\x00" + uvarint(30) + uvarint(2) + b"ab")
    decoded = decode_request(frame, KRAFT_NODE_APIS)
    assert decoded.message == DescribeQuorumRequest(topics=())
    assert decoded.correlation_id == 4


def test_unknown_tag_inside_a_known_tagged_struct_is_cut_and_the_size_fixed() -> None:
    """FetchRequest v17: ReplicaState is the tagged field 1; an unknown tag 7 inside it shrinks it."""
    message = FetchRequest(max_wait=datetime.timedelta(milliseconds=5), min_bytes=1, topics=(),
                           forgotten_topics_data=(), rack_id="")  # fmt: skip
    plain = encoded(FetchRequest, message)
    assert plain[-1:] == b"\x00"  # no tagged fields: add ReplicaState(replica_id 3, epoch 4) with tag 7 inside
    replica_state = struct.pack(">iq", 3, 4) + uvarint(1) + uvarint(7) + uvarint(3) + b"new"
    body = plain[:-1] + uvarint(1) + uvarint(1) + uvarint(len(replica_state)) + replica_state
    end, edits = walk(FetchRequest, body)
    assert end == len(body) and len(edits) == 3  # the cut entry, its count, the enclosing size
    source, offset, stop = kio_input(memoryview(body), 0, end, edits)
    decoded, size = entity_reader(FetchRequest)(source, offset)
    assert size == stop - offset == len(body) - 5
    assert (decoded.replica_state.replica_id, decoded.replica_state.replica_epoch) == (3, 4)


def test_tag_of_another_version_is_not_valid() -> None:
    """Fetch v17's FetchPartition has tag 0 only; tag 1 (HighWatermark) exists from v18: Kafka rejects it."""
    rules = tag_rules(FetchRequest, [load_request_schema(1, v) for v in range(4, 19)])
    assert rules.of("topics").of("partitions") == TagRules(frozenset({1}))
    assert rules.invalid == frozenset()  # v17 already has ClusterId (0) and ReplicaState (1)
    partition = struct.pack(">iiqiqi", 0, -1, 0, -1, -1, 100) + uvarint(1) + uvarint(1) + uvarint(8) + bytes(8)
    topic = bytes(16) + uvarint(2) + partition + b"\x00"
    fetch = struct.pack(">iii", 500, 1, 1000) + b"\x00" + struct.pack(">ii", 0, -1)
    tail = uvarint(1) + uvarint(1) + b"\x00"  # no forgotten topics, rack "", no tags
    frame = struct.pack(">hhih", 1, 17, 5, -1) + b"\x00" + fetch + uvarint(2) + topic + tail
    with pytest.raises(MalformedRequestError, match="tag 1 is not valid for this version"):
        decode_request(frame, KRAFT_NODE_APIS)


def _with_future_tag(cls: type) -> type:
    """`cls` as a newer Kafka would have it: one more tagged string field, tag 90."""
    future = dataclasses.field(default="", metadata={"kafka_type": "string", "tag": 90})
    specs = [(f.name, f.type, f) for f in dataclasses.fields(cls)] + [("future", str, future)]
    newer = dataclasses.make_dataclass(cls.__name__, specs, frozen=True, slots=True, kw_only=True)
    for name in ("__type__", "__version__", "__flexible__", "__api_key__"):
        if hasattr(cls, name):
            setattr(newer, name, getattr(cls, name))
    return newer


@pytest.mark.parametrize("cls", [VotersRecord, LeaderChangeMessage, VoteRequest, FetchRequest, PartitionRecordV2],
                         ids=class_id)  # fmt: skip
@settings(max_examples=25, suppress_health_check=list(HealthCheck), deadline=None)
@given(data=st.data(), extra=st.text(max_size=40))
def test_a_newer_peers_tagged_field_is_skipped(cls: type, data: st.DataObject, extra: str) -> None:
    message = data.draw(st.from_type(cls))
    newer = _with_future_tag(cls)
    raw = encoded(newer, newer(**{f.name: getattr(message, f.name) for f in dataclasses.fields(cls)}, future=extra))
    end, edits = walk(cls, raw)
    assert end == len(raw) and bool(edits) == bool(extra)
    source, offset, stop = kio_input(memoryview(raw), 0, end, edits)
    assert entity_reader(cls)(source, offset) == (message, stop - offset)


def test_known_tagged_field_must_fill_its_declared_size() -> None:
    # Vote v2 response: error code, no topics, then tag 0 (NodeEndpoints) of 5 bytes holding an empty array.
    with pytest.raises(WireFormatError, match="tagged field 0 declares 5 bytes but holds 1"):
        walk(load_response_schema(52, 2), struct.pack(">h", 0) + uvarint(1) + uvarint(1) + uvarint(0)
             + uvarint(5) + uvarint(1) + bytes(4))  # fmt: skip


# --- what Kafka's reader refuses ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "message"),
    [(b"\x80\x80\x80\x80\x80\x01", "longer than 5 bytes"), (b"\x80\x80", "past the end"),
     (uvarint(2) + uvarint(11) + b"ab", r"field topic_name \(10 bytes\) runs past the end"),
     (uvarint(5) + b"ab", "array topics of 4 elements cannot fit in the 2 bytes"),
     (uvarint(0) + b"\x00", "non-nullable field topics was serialized as null"),
     (uvarint(2) + uvarint(0), "non-nullable field topic_name was serialized as null"),
     (uvarint(2) + uvarint(0x8001) + bytes(0x8000) + uvarint(1) + b"\x00\x00", "topic_name has invalid length 32768"),
     (uvarint(1) + uvarint(1) + uvarint(0) + uvarint(5) + b"x", r"tagged field 0 \(5 bytes\) runs past the end"),
     (uvarint(1) + uvarint(3), "3 tagged fields cannot fit in the 0 bytes")],
)  # fmt: skip
def test_walk_rejects_bad_lengths_and_nulls(body: bytes, message: str) -> None:
    # DescribeQuorum v2 request body: topics (compact array of {topic_name, partitions, tags}), then tags.
    with pytest.raises(WireFormatError, match=message):
        walk(DescribeQuorumRequest, body)


def test_strings_up_to_kafkas_limit_pass() -> None:
    body = uvarint(2) + uvarint(0x8000) + bytes(0x7FFF) + uvarint(1) + b"\x00" + b"\x00"
    assert walk(DescribeQuorumRequest, body) == (len(body), [])


def test_nullable_struct_marker_must_be_minus_one_or_one() -> None:
    cls = load_request_schema(75, 0)  # DescribeTopicPartitions v0: topics, limit, nullable cursor
    head = uvarint(1) + struct.pack(">i", 10)
    assert walk(cls, head + b"\xff" + b"\x00") == (len(head) + 2, [])  # null cursor
    cursor = uvarint(2) + b"t" + struct.pack(">i", 3) + b"\x00"
    assert walk(cls, head + b"\x01" + cursor + b"\x00") == (len(head) + len(cursor) + 2, [])
    # Kafka reads any negative marker as null, kio only -1: the others are refused so both agree with the walk.
    for marker, shown in ((b"\x00", "0"), (b"\x80", "-128"), (b"\x02", "2")):
        with pytest.raises(WireFormatError, match=f"marker {shown}"):
            walk(cls, head + marker + cursor + b"\x00")


# --- helpers -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("encoded_value", "value"), [
    (b"\x00", 0), (b"\x7f", 127), (b"\x80\x01", 128), (b"\xff\x7f", 16383),
    (b"\xff\xff\xff\xff\x0f", 2**32 - 1), (b"\x80\x80\x80\x80\x00", 0),  # non-minimal, as Java accepts
])  # fmt: skip
def test_read_uvarint(encoded_value: bytes, value: int) -> None:
    data = memoryview(encoded_value + b"\xaa")
    assert read_uvarint(data, 0, len(data)) == (value, len(encoded_value))


def test_read_uvarint_errors() -> None:
    with pytest.raises(WireFormatError) as caught:
        read_uvarint(memoryview(b"\x80\x80"), 0, 2)
    assert caught.value.truncated
    with pytest.raises(WireFormatError) as caught:
        read_uvarint(memoryview(b"\x05"), 1, 1)
    assert caught.value.truncated and caught.value.position == 1
    with pytest.raises(WireFormatError, match="longer than 5 bytes") as caught:
        read_uvarint(memoryview(b"\x80\x80\x80\x80\x80\x00"), 0, 6)
    assert not caught.value.truncated


@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_uvarint_bytes_round_trip(value: int) -> None:
    data = uvarint_bytes(value)
    assert read_uvarint(memoryview(data), 0, len(data)) == (value, len(data))


def test_apply_edits_and_kio_input() -> None:
    data = memoryview(b"0123456789")
    assert apply_edits(data, 2, 9, [(6, 8, b""), (2, 3, b"ab")]) == b"ab3458"
    assert apply_edits(data, 0, 10, []) == b"0123456789"
    assert kio_input(data, 2, 9, []) == (data, 2, 9)
    assert kio_input(data, 2, 9, [(6, 8, b"")]) == (b"23458", 0, 5)
