"""The KIP-848 records of `__consumer_offsets` (records/consumer_group_records.py) against Kafka's own schemas.

The oracle is independent of the codec: a reader driven by Kafka's JSON schemas (kafka-schemas/group-coordinator,
copied from Kafka's group-coordinator module) that knows only Kafka's generic encoding rules (non-flexible keys,
flexible values: compact strings and arrays, tagged fields). Every record we write must read back through it with
the values we meant, and what it encodes from a schema's fields must decode through our codec.
"""

from __future__ import annotations

import json
import re
import struct
import uuid
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykraft.records import consumer_group_records as rec
from pykraft.records.group_records import GroupRecordError

SCHEMAS = Path(__file__).resolve().parents[2] / "kafka-schemas" / "group-coordinator"
NAMES = {3: "ConsumerGroupMetadata", 4: "ConsumerGroupPartitionMetadata", 5: "ConsumerGroupMemberMetadata",
         6: "ConsumerGroupTargetAssignmentMetadata", 7: "ConsumerGroupTargetAssignmentMember",
         8: "ConsumerGroupCurrentMemberAssignment", 16: "ConsumerGroupRegularExpression"}


def schema(name: str) -> dict:
    text = re.sub(r"^\s*//.*$", "", (SCHEMAS / f"{name}.json").read_text(), flags=re.M)
    return json.loads(text)


class SchemaReader:
    """Kafka's generated reader, generically: fields in order, tagged fields by tag, nested structs."""

    def __init__(self, data: bytes, flexible: bool) -> None:
        self.data, self.pos, self.flexible = data, 0, flexible

    def take(self, fmt: str) -> int:
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return value

    def uvarint(self) -> int:
        value = shift = 0
        while True:
            byte = self.take(">B")
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value
            shift += 7

    def length(self, fmt: str) -> int:
        return self.uvarint() - 1 if self.flexible else self.take(fmt)

    def value(self, kind: str, field: dict, common: dict) -> object:
        if kind.startswith("[]"):
            count = self.length(">i")
            return None if count < 0 else [self.value(kind[2:], field, common) for _ in range(count)]
        simple = {"int8": ">b", "int16": ">h", "int32": ">i", "int64": ">q"}
        if kind in simple:
            return self.take(simple[kind])
        if kind == "uuid":
            self.pos += 16
            return uuid.UUID(bytes=self.data[self.pos - 16:self.pos])
        if kind in ("string", "bytes"):
            size = self.length(">h" if kind == "string" else ">i")
            if size < 0:
                return None
            self.pos += size
            raw = self.data[self.pos - size:self.pos]
            return raw.decode() if kind == "string" else raw
        return self.struct(field.get("fields") or common[kind], common)

    def struct(self, fields: list[dict], common: dict) -> dict:
        out = {}
        for field in fields:
            if "taggedVersions" in field:
                out[field["name"]] = None
                continue
            out[field["name"]] = self.value(field["type"], field, common)
        if self.flexible:
            for _ in range(self.uvarint()):
                tag, size = self.uvarint(), self.uvarint()
                field = next(f for f in fields if f.get("tag") == tag)
                inner = SchemaReader(self.data[self.pos:self.pos + size], True)
                out[field["name"]] = inner.value(field["type"], field, common)
                self.pos += size
        return out


def read_with_schema(name: str, data: bytes, key: bool) -> dict:
    spec = schema(name + ("Key" if key else "Value"))
    reader = SchemaReader(data, flexible=not key)
    version = reader.take(">h")
    assert str(version) in spec["validVersions"].split("-"), (name, version)
    common = {c["name"]: c["fields"] for c in spec.get("commonStructs", [])}
    fields = reader.struct(spec["fields"], common)
    assert reader.pos == len(data), f"{name}: {len(data) - reader.pos} bytes left"
    return {"version": version, **fields}


TOPIC = uuid.UUID("5c7c4d58-7b0d-4d8f-9a3b-1c2d3e4f5a6b")
OTHER = uuid.UUID("0e3f9a2b-1111-4222-8333-944455556666")


def test_keys_are_the_record_type_and_kafkas_key_fields():
    for kind, name in NAMES.items():
        sub = None if kind in (3, 4, 6) else ("member-1" if kind != 16 else "topic-.*")
        data = rec.encode_key(rec.ConsumerGroupKey(kind, "group-a", sub))
        fields = read_with_schema(name, data, key=True)
        assert fields["version"] == kind and fields["GroupId"] == "group-a"
        if sub is not None:
            assert sub in fields.values()
        assert rec.decode_key(data) == rec.ConsumerGroupKey(kind, "group-a", sub)
        assert rec.key_type(data) == kind


def test_member_metadata_value_reads_back_through_kafkas_schema():
    value = rec.MemberMetadataValue("instance-1", None, "client", "/10.0.0.1", ("a", "b"), "t-.*", 45000, "range")
    fields = read_with_schema("ConsumerGroupMemberMetadata", rec.encode_value(value), key=False)
    assert fields == {"version": 0, "InstanceId": "instance-1", "RackId": None, "ClientId": "client",
                      "ClientHost": "/10.0.0.1", "SubscribedTopicNames": ["a", "b"], "SubscribedTopicRegex": "t-.*",
                      "RebalanceTimeoutMs": 45000, "ServerAssignor": "range", "ClassicMemberMetadata": None}
    classic = rec.MemberMetadataValue(None, "rack", "c", "/h", (), None, -1, None,
                                      rec.ClassicProtocols(10000, (("range", b"\x00\x01"),)))
    fields = read_with_schema("ConsumerGroupMemberMetadata", rec.encode_value(classic), key=False)
    assert fields["ClassicMemberMetadata"] == {"SessionTimeoutMs": 10000,
                                               "SupportedProtocols": [{"Name": "range", "Metadata": b"\x00\x01"}]}
    assert rec.decode_value(5, rec.encode_value(classic)) == classic


def test_assignment_values_read_back_through_kafkas_schema():
    current = rec.CurrentAssignmentValue(7, 6, 1, {TOPIC: frozenset({0, 2})}, {OTHER: frozenset({5})})
    fields = read_with_schema("ConsumerGroupCurrentMemberAssignment", rec.encode_value(current), key=False)
    assert (fields["MemberEpoch"], fields["PreviousMemberEpoch"], fields["State"]) == (7, 6, 1)
    assert fields["AssignedPartitions"] == [{"TopicId": TOPIC, "Partitions": [0, 2]}]
    assert fields["PartitionsPendingRevocation"] == [{"TopicId": OTHER, "Partitions": [5]}]
    target = rec.TargetMemberValue({TOPIC: frozenset({1}), OTHER: frozenset({0, 3})})
    fields = read_with_schema("ConsumerGroupTargetAssignmentMember", rec.encode_value(target), key=False)
    assert {t["TopicId"]: t["Partitions"] for t in fields["TopicPartitions"]} == {TOPIC: [1], OTHER: [0, 3]}


def test_group_level_values_read_back_through_kafkas_schema():
    assert read_with_schema("ConsumerGroupMetadata", rec.encode_value(rec.GroupEpochValue(12)), False)["Epoch"] == 12
    assert read_with_schema("ConsumerGroupTargetAssignmentMetadata", rec.encode_value(rec.AssignmentEpochValue(11)),
                            False)["AssignmentEpoch"] == 11
    metadata = rec.PartitionMetadataValue((rec.TopicMetadataValue(TOPIC, "orders", 6),))
    fields = read_with_schema("ConsumerGroupPartitionMetadata", rec.encode_value(metadata), False)
    assert fields["Topics"] == [{"TopicId": TOPIC, "TopicName": "orders", "NumPartitions": 6, "PartitionMetadata": []}]
    regex = rec.RegexValue(("t-1", "t-2"), 41, 1700000000000)
    assert read_with_schema("ConsumerGroupRegularExpression", rec.encode_value(regex), False) == {
        "version": 0, "Topics": ["t-1", "t-2"], "Version": 41, "Timestamp": 1700000000000}


def test_unknown_tagged_fields_are_skipped_and_bad_bytes_refused():
    data = bytearray(rec.encode_value(rec.GroupEpochValue(3)))
    data[-1:] = bytes([1, 1, 8]) + struct.pack(">q", 99)  # one tag (1: CreationTimeMs of a later Kafka)
    assert rec.decode_value(3, bytes(data)) == rec.GroupEpochValue(3)
    with pytest.raises(GroupRecordError):
        rec.decode_value(8, rec.encode_value(rec.GroupEpochValue(3)))
    with pytest.raises(GroupRecordError):
        rec.decode_value(3, b"\x00\x01" + b"\x00" * 5)  # value version 1: not one Kafka 4.0 writes
    with pytest.raises(GroupRecordError):
        rec.decode_key(b"\x00\x02\x00\x01g")  # a classic group key is not ours


partitions = st.dictionaries(st.uuids(), st.frozensets(st.integers(0, 2**31 - 1), max_size=5), max_size=4)
text = st.text(max_size=20)


@settings(max_examples=150, deadline=None)
@given(st.one_of(
    st.builds(rec.GroupEpochValue, st.integers(-2**31, 2**31 - 1)),
    st.builds(rec.AssignmentEpochValue, st.integers(-2**31, 2**31 - 1)),
    st.builds(rec.TargetMemberValue, partitions),
    st.builds(rec.CurrentAssignmentValue, st.integers(-2, 2**31 - 1), st.integers(-2, 2**31 - 1),
              st.sampled_from([0, 1, 2, 127]), partitions, partitions),
    st.builds(rec.MemberMetadataValue, st.none() | text, st.none() | text, text, text,
              st.lists(text, max_size=4).map(tuple), st.none() | text, st.integers(-1, 2**31 - 1), st.none() | text),
    st.builds(rec.RegexValue, st.lists(text, max_size=4).map(tuple), st.integers(0, 2**62), st.integers(0, 2**62)),
    st.builds(rec.PartitionMetadataValue, st.lists(st.builds(rec.TopicMetadataValue, st.uuids(), text,
                                                             st.integers(0, 10000)), max_size=3).map(tuple))))
def test_every_value_round_trips_and_reads_through_kafkas_schema(value):
    kind = {rec.GroupEpochValue: 3, rec.PartitionMetadataValue: 4, rec.MemberMetadataValue: 5,
            rec.AssignmentEpochValue: 6, rec.TargetMemberValue: 7, rec.CurrentAssignmentValue: 8,
            rec.RegexValue: 16}[type(value)]
    data = rec.encode_value(value)
    assert rec.decode_value(kind, data) == value
    read_with_schema(NAMES[kind], data, key=False)  # Kafka's layout: no byte left over, every field in place
