"""The bounds walk that guards kio's native reader (pykraft.records.metadata.wire_check).

It is exercised on every metadata record by the other test files; here it is checked on its own: on kio's own
message classes (flexible and legacy encodings, a tagged struct in FetchRequest v17, nullable arrays), on
hostile lengths, and in its small helpers."""

from __future__ import annotations

import io

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.fetch.v17.request import FetchRequest
from kio.schema.leader_change_message.v1 import LeaderChangeMessage
from kio.schema.metadata.v4.request import MetadataRequest as MetadataRequestV4
from kio.schema.metadata.v12.response import MetadataResponse
from kio.schema.voters_record.v0 import VotersRecord
from kio.serial import entity_writer

from pykraft.records.metadata.wire_check import (
    WireFormatError,
    apply_edits,
    read_uvarint,
    uvarint_bytes,
    walk_entity,
)

KIO_CLASSES = [VotersRecord, LeaderChangeMessage, MetadataRequestV4, MetadataResponse, FetchRequest]


def _kio_encode(cls: type, value: object) -> bytes:
    out = io.BytesIO()
    entity_writer(cls)(out, value)
    return out.getvalue()


@pytest.mark.parametrize("cls", KIO_CLASSES, ids=lambda c: f"{c.__module__.split('.')[-2]}.{c.__name__}")
@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_walk_ends_exactly_where_kio_encodings_end(cls: type, data: st.DataObject) -> None:
    value = data.draw(st.from_type(cls))
    encoded = _kio_encode(cls, value)
    end, edits = walk_entity(cls, memoryview(encoded), 0, len(encoded))
    assert (end, edits) == (len(encoded), [])
    for cut in range(len(encoded)):
        with pytest.raises(WireFormatError) as caught:
            walk_entity(cls, memoryview(encoded), 0, cut)
        assert caught.value.truncated


def test_legacy_null_array_and_huge_legacy_length() -> None:
    """MetadataRequest v4 is a non-flexible message: int32 array lengths, -1 for null."""
    null_topics = bytes.fromhex("ffffffff") + b"\x01"  # topics = null, allow_auto_topic_creation = true
    assert walk_entity(MetadataRequestV4, memoryview(null_topics), 0, len(null_topics)) == (5, [])
    huge = bytes.fromhex("7fffffff") + b"\x01"
    with pytest.raises(WireFormatError, match="array topics of 2147483647 elements") as caught:
        walk_entity(MetadataRequestV4, memoryview(huge), 0, len(huge))
    assert caught.value.truncated
    negative = bytes.fromhex("fffffffe") + b"\x01"
    with pytest.raises(WireFormatError, match="invalid length -2"):
        walk_entity(MetadataRequestV4, memoryview(negative), 0, len(negative))


def test_huge_compact_array_in_a_kio_control_record() -> None:
    """VotersRecord v0 (a KRaft control record): version int16, then the compact Voters array length."""
    value = b"\x00\x00" + bytes.fromhex("ffffff7f")
    with pytest.raises(WireFormatError) as caught:
        walk_entity(VotersRecord, memoryview(value), 0, len(value))
    assert caught.value.truncated


@pytest.mark.parametrize(("encoded", "value"), [
    (b"\x00", 0), (b"\x7f", 127), (b"\x80\x01", 128), (b"\xff\x7f", 16383),
    (b"\xff\xff\xff\xff\x0f", 2**32 - 1), (b"\x80\x80\x80\x80\x00", 0),  # non-minimal, as Java accepts
])
def test_read_uvarint(encoded: bytes, value: int) -> None:
    assert read_uvarint(memoryview(encoded + b"\xaa"), 0, len(encoded) + 1) == (value, len(encoded))


def test_read_uvarint_errors() -> None:
    with pytest.raises(WireFormatError) as caught:
        read_uvarint(memoryview(b"\x80\x80"), 0, 2)
    assert caught.value.truncated
    with pytest.raises(WireFormatError, match="longer than 5 bytes") as caught:
        read_uvarint(memoryview(b"\x80\x80\x80\x80\x80\x00"), 0, 6)
    assert not caught.value.truncated


@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_uvarint_bytes_round_trip(value: int) -> None:
    encoded = uvarint_bytes(value)
    assert read_uvarint(memoryview(encoded), 0, len(encoded)) == (value, len(encoded))


def test_apply_edits() -> None:
    data = memoryview(b"0123456789")
    assert apply_edits(data, 2, 9, [(6, 8, b""), (2, 3, b"ab")]) == b"ab3458"
    assert apply_edits(data, 0, 10, []) == b"0123456789"
