"""`__consumer_offsets` keys and values in Kafka's byte layout, and the coordinator partition of a group id."""

from __future__ import annotations

import struct

import pytest

from pykraft.records.group_records import (
    GroupKey, GroupRecordError, GroupValue, MemberValue, OffsetKey, OffsetValue, decode_group_value, decode_key,
    decode_offset_value, encode_group_value, encode_key, encode_offset_value, java_string_hash, partition_for,
)


def test_offset_key_layout_is_kafkas():
    raw = encode_key(OffsetKey("g", "t", 3))
    assert raw == struct.pack(">hh", 1, 1) + b"g" + struct.pack(">h", 1) + b"t" + struct.pack(">i", 3)
    assert decode_key(raw) == OffsetKey("g", "t", 3)
    assert decode_key(struct.pack(">hh", 2, 2) + b"gg") == GroupKey("gg")


def test_values_round_trip_and_old_versions_read():
    value = OffsetValue(42, 7, "meta", 1234)
    assert decode_offset_value(encode_offset_value(value)) == value
    v1 = struct.pack(">hq", 1, 9) + struct.pack(">h", 0) + struct.pack(">qq", 5, -1)
    assert decode_offset_value(v1) == OffsetValue(9, -1, "", 5)
    group = GroupValue("consumer", 4, "range", "m1", 99, (
        MemberValue("m1", None, "cid", "/h", 30000, 10000, b"sub", b"asg"),
        MemberValue("m2", "static", "cid", "/h", 30000, 10000, b"", b""),))
    assert decode_group_value(encode_group_value(group)) == group


@pytest.mark.parametrize("raw", [b"", struct.pack(">h", 9), encode_offset_value(OffsetValue(1, 1, "", 1))[:-1],
                                 encode_offset_value(OffsetValue(1, 1, "", 1)) + b"x", struct.pack(">h", 4)])
def test_bad_values_are_refused_with_a_clear_error(raw):
    with pytest.raises(GroupRecordError):
        decode_offset_value(raw)


def test_java_string_hash_and_partition():
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322  # Java: "hello".hashCode()
    assert java_string_hash("polygenelubricants") == -(1 << 31)  # Integer.MIN_VALUE: Kafka's abs gives 0
    assert partition_for("polygenelubricants", 50) == 0
    assert partition_for("my-group", 50) == abs(java_string_hash("my-group")) % 50
