"""The bounds walk that runs before kio: it agrees with kio on valid bytes and stops the array lengths that
make kio 0.6.5 abort the process (it allocates 8 bytes per announced element before checking the buffer)."""

from __future__ import annotations

import io
import struct
import subprocess
import sys
import textwrap

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_writer

from pykraft.protocol.apis import KRAFT_NODE_APIS, ApiKey
from pykraft.protocol.bounds import BoundsError, check_bounds
from pykraft.protocol.codec import decode_request, decode_response
from pykraft.protocol.errors import MalformedRequestError, MalformedResponseError

from .helpers import REQUEST_CLASSES, RESPONSE_CLASSES, class_id


def uvarint(value: int) -> bytes:
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def encoded(message: object) -> bytes:
    buffer = io.BytesIO()
    entity_writer(type(message))(buffer, message)
    return buffer.getvalue()


# Classes outside the registry that have KIP-893 nullable structs, to cover that rule of the walk too.
NULLABLE_STRUCT_CLASSES = [load_response_schema(68, 0), load_request_schema(75, 0)]


@pytest.mark.parametrize("cls", REQUEST_CLASSES + RESPONSE_CLASSES + NULLABLE_STRUCT_CLASSES, ids=class_id)
@settings(max_examples=15, suppress_health_check=list(HealthCheck), deadline=None)
@given(data=st.data())
def test_walk_ends_exactly_where_kios_encoding_ends(cls: type, data: st.DataObject) -> None:
    raw = encoded(data.draw(st.from_type(cls)))
    assert check_bounds(cls, memoryview(b"pad" + raw), 3) == len(raw) + 3


# Hostile frame bodies, each announcing an array far larger than the bytes that follow.
HOSTILE_REQUESTS = {
    # Metadata v1: legacy int32 array length 2^31-1 (kio asks for 16 GiB).
    "legacy-array": struct.pack(">hhih", 3, 1, 9, -1) + struct.pack(">i", 2**31 - 1),
    # DescribeQuorum v2: compact array length 2^32 + 4 (kio asks for 32 GiB).
    "compact-array": struct.pack(">hhih", 55, 2, 9, -1) + b"\x00" + uvarint(2**32 + 5),
    # Vote v2: one topic whose nested partitions array announces 2^34 elements.
    "nested-array": struct.pack(">hhih", 52, 2, 9, -1) + b"\x00" + b"\x00" + struct.pack(">i", 1)
    + uvarint(2) + uvarint(2) + b"x" + uvarint(2**34),
}
# Vote v2 response whose tagged NodeEndpoints (tag 0) announces 2^33 endpoints.
_TAGGED = uvarint(2**33) + b"\x00" * 4
HOSTILE_RESPONSE = struct.pack(">i", 9) + b"\x00" + struct.pack(">h", 0) + uvarint(1) + uvarint(1) + uvarint(0) \
    + uvarint(len(_TAGGED)) + _TAGGED  # fmt: skip


@pytest.mark.parametrize("name", sorted(HOSTILE_REQUESTS))
def test_hostile_request_lengths_are_malformed(name: str) -> None:
    with pytest.raises(MalformedRequestError, match="cannot fit") as info:
        decode_request(HOSTILE_REQUESTS[name], KRAFT_NODE_APIS)
    assert info.value.correlation_id == 9


def test_hostile_length_inside_a_tagged_field_is_malformed() -> None:
    with pytest.raises(MalformedResponseError, match="cannot fit"):
        decode_response(HOSTILE_RESPONSE, ApiKey.VOTE, 2)


_SUBPROCESS = textwrap.dedent(
    """
    import resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))  # a 2 GiB machine, whatever this one has
    from pykraft.protocol import KRAFT_NODE_APIS, decode_request, decode_response, ProtocolError
    from tests.protocol.test_bounds import HOSTILE_REQUESTS, HOSTILE_RESPONSE
    from kio.serial import entity_reader
    from kio.index import load_request_schema
    if sys.argv[1] == "raw-kio":
        frame = HOSTILE_REQUESTS["legacy-array"]
        try:
            entity_reader(load_request_schema(3, 1))(frame, 10)
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
    """
)


def _run_limited(mode: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _SUBPROCESS, mode], capture_output=True, text=True, timeout=120, check=False
    )


def test_hostile_frames_do_not_kill_a_memory_limited_process() -> None:
    result = _run_limited("pykraft")
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split("\n")[:4] == [
        "compact-array MalformedRequestError",
        "legacy-array MalformedRequestError",
        "nested-array MalformedRequestError",
        "tagged MalformedResponseError",
    ]


def test_raw_kio_aborts_on_the_same_bytes() -> None:
    # Why bounds.py exists. If this starts failing, kio checks lengths itself now and the walk could go.
    result = _run_limited("raw-kio")
    assert result.returncode != 0
    assert "memory allocation" in result.stderr


def test_unknown_tagged_field_names_the_tag() -> None:
    frame = struct.pack(">hhih", 55, 2, 4, -1) + b"\x00" + uvarint(1) + uvarint(1) + uvarint(9) + uvarint(1) + b"\x00"
    with pytest.raises(MalformedRequestError, match="tagged field 9 .* unknown to kio"):
        decode_request(frame, KRAFT_NODE_APIS)


@pytest.mark.parametrize(
    ("body", "message"),
    [(b"\x80\x80\x80\x80\x80\x01", "longer than 5 bytes"), (b"\x80\x80", "past the end"),
     (uvarint(2) + uvarint(11) + b"ab", "string or bytes of 10 bytes .* overruns"),
     (uvarint(5) + b"ab", "array of 4 elements .* cannot fit"),
     (uvarint(1) + uvarint(1) + uvarint(0) + uvarint(5) + b"x", "tagged field 0 of 5 bytes .* overruns")],
)  # fmt: skip
def test_walk_rejects_bad_lengths(body: bytes, message: str) -> None:
    # DescribeQuorum v2 request body: topics (compact array), then tagged fields.
    with pytest.raises(BoundsError, match=message):
        check_bounds(load_request_schema(55, 2), memoryview(body))


def test_nullable_struct_marker_must_be_minus_one_or_one() -> None:
    cls = load_request_schema(75, 0)  # DescribeTopicPartitions v0: topics, limit, nullable cursor
    head = uvarint(1) + struct.pack(">i", 10)
    assert check_bounds(cls, memoryview(head + b"\xff" + b"\x00")) == len(head) + 2  # null cursor
    with pytest.raises(BoundsError, match="marker 0"):
        check_bounds(cls, memoryview(head + b"\x00" + b"\x00"))
