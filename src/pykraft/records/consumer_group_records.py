"""The KIP-848 consumer group records of `__consumer_offsets` (Kafka's group-coordinator ConsumerGroup* schemas).

A key is an int16 "version" that is the record type, then its fields in the non-flexible encoding (int16-length
strings); a value is an int16 version (0 for all of them) then its fields in the flexible encoding (compact strings
and arrays, tagged fields). A null value is a tombstone. The types, as Kafka 4.0 writes them:

    3 ConsumerGroupMetadata (group)                    -> Epoch
    4 ConsumerGroupPartitionMetadata (group)           -> Topics [TopicId, TopicName, NumPartitions, PartitionMetadata]
    5 ConsumerGroupMemberMetadata (group, member)      -> InstanceId, RackId, ClientId, ClientHost, SubscribedTopicNames,
                                                          SubscribedTopicRegex, RebalanceTimeoutMs, ServerAssignor,
                                                          tag 0 ClassicMemberMetadata
    6 ConsumerGroupTargetAssignmentMetadata (group)    -> AssignmentEpoch
    7 ConsumerGroupTargetAssignmentMember (group, member) -> TopicPartitions [TopicId, Partitions]
    8 ConsumerGroupCurrentMemberAssignment (group, member) -> MemberEpoch, PreviousMemberEpoch, State,
                                                          AssignedPartitions, PartitionsPendingRevocation
   16 ConsumerGroupRegularExpression (group, regex)    -> Topics, Version, Timestamp

Tagged fields we do not know (later Kafka versions add some) are skipped on read, as Kafka's readers skip them.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass, field

from pykraft.records.group_records import GroupRecordError

METADATA, PARTITION_METADATA, MEMBER_METADATA = 3, 4, 5
TARGET_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT, REGULAR_EXPRESSION = 6, 7, 8, 16
CONSUMER_GROUP_KEY_TYPES = frozenset({3, 4, 5, 6, 7, 8, 16})
_GROUP_ONLY = {METADATA, PARTITION_METADATA, TARGET_METADATA}
VALUE_VERSION = 0

Partitions = dict[uuid.UUID, frozenset[int]]


@dataclass(frozen=True, slots=True)
class ConsumerGroupKey:
    """The key of every consumer group record: its type, the group and (member records) a member id or
    (regular expression records) the regex."""

    type: int
    group: str
    sub: str | None = None


@dataclass(frozen=True, slots=True)
class GroupEpochValue:
    epoch: int


@dataclass(frozen=True, slots=True)
class TopicMetadataValue:
    topic_id: uuid.UUID
    name: str
    partitions: int


@dataclass(frozen=True, slots=True)
class PartitionMetadataValue:
    topics: tuple[TopicMetadataValue, ...]


@dataclass(frozen=True, slots=True)
class ClassicProtocols:
    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]


@dataclass(frozen=True, slots=True)
class MemberMetadataValue:
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    rebalance_timeout_ms: int
    server_assignor: str | None
    classic: ClassicProtocols | None = None


@dataclass(frozen=True, slots=True)
class AssignmentEpochValue:
    epoch: int


@dataclass(frozen=True, slots=True)
class TargetMemberValue:
    partitions: Partitions = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CurrentAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned: Partitions
    pending_revocation: Partitions


@dataclass(frozen=True, slots=True)
class RegexValue:
    topics: tuple[str, ...]
    version: int
    timestamp_ms: int


ConsumerGroupValue = (GroupEpochValue | PartitionMetadataValue | MemberMetadataValue | AssignmentEpochValue
                      | TargetMemberValue | CurrentAssignmentValue | RegexValue)


# ---- writing -------------------------------------------------------------------------------------------------------
class _Writer:
    def __init__(self) -> None:
        self.out = bytearray(struct.pack(">h", VALUE_VERSION))

    def uvarint(self, value: int) -> None:
        while value >= 0x80:
            self.out.append((value & 0x7F) | 0x80)
            value >>= 7
        self.out.append(value)

    def int(self, fmt: str, value: int) -> None:
        self.out += struct.pack(fmt, value)

    def string(self, text: str | None) -> None:
        if text is None:
            self.uvarint(0)
            return
        data = text.encode()
        self.uvarint(len(data) + 1)
        self.out += data

    def raw_bytes(self, data: bytes) -> None:
        self.uvarint(len(data) + 1)
        self.out += data

    def strings(self, items: tuple[str, ...]) -> None:
        self.uvarint(len(items) + 1)
        for item in items:
            self.string(item)

    def topic_partitions(self, partitions: Partitions) -> None:
        self.uvarint(len(partitions) + 1)
        for topic_id, numbers in sorted(partitions.items(), key=lambda kv: str(kv[0])):
            self.out += topic_id.bytes
            self.uvarint(len(numbers) + 1)
            for number in sorted(numbers):
                self.int(">i", number)
            self.uvarint(0)  # no tagged fields

    def no_tags(self) -> bytes:
        self.uvarint(0)
        return bytes(self.out)


def encode_key(key: ConsumerGroupKey) -> bytes:
    assert key.type in CONSUMER_GROUP_KEY_TYPES, key
    out = struct.pack(">h", key.type) + _short_string(key.group)
    if key.type not in _GROUP_ONLY:
        out += _short_string(key.sub or "")
    return out


def _short_string(text: str) -> bytes:
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def encode_value(value: ConsumerGroupValue) -> bytes:
    w = _Writer()
    if isinstance(value, (GroupEpochValue, AssignmentEpochValue)):
        w.int(">i", value.epoch)
    elif isinstance(value, PartitionMetadataValue):
        w.uvarint(len(value.topics) + 1)
        for topic in value.topics:
            w.out += topic.topic_id.bytes
            w.string(topic.name)
            w.int(">i", topic.partitions)
            w.uvarint(1)  # PartitionMetadata (racks): not used since 4.0, written empty
            w.uvarint(0)
    elif isinstance(value, MemberMetadataValue):
        return _encode_member(w, value)
    elif isinstance(value, TargetMemberValue):
        w.topic_partitions(value.partitions)
    elif isinstance(value, CurrentAssignmentValue):
        w.int(">i", value.member_epoch)
        w.int(">i", value.previous_member_epoch)
        w.int(">b", value.state)
        w.topic_partitions(value.assigned)
        w.topic_partitions(value.pending_revocation)
    elif isinstance(value, RegexValue):
        w.strings(value.topics)
        w.int(">q", value.version)
        w.int(">q", value.timestamp_ms)
    else:  # pragma: no cover - programmer error
        raise AssertionError(f"not a consumer group value: {value!r}")
    return w.no_tags()


def _encode_member(w: _Writer, value: MemberMetadataValue) -> bytes:
    w.string(value.instance_id)
    w.string(value.rack_id)
    w.string(value.client_id)
    w.string(value.client_host)
    w.strings(value.subscribed_topic_names)
    w.string(value.subscribed_topic_regex)
    w.int(">i", value.rebalance_timeout_ms)
    w.string(value.server_assignor)
    if value.classic is None:
        return w.no_tags()
    tag = _Writer()
    tag.out.clear()
    tag.int(">i", value.classic.session_timeout_ms)
    tag.uvarint(len(value.classic.protocols) + 1)
    for name, metadata in value.classic.protocols:
        tag.string(name)
        tag.raw_bytes(metadata)
        tag.uvarint(0)
    tag.uvarint(0)
    w.uvarint(1)
    w.uvarint(0)
    w.uvarint(len(tag.out))
    w.out += tag.out
    return bytes(w.out)


# ---- reading -------------------------------------------------------------------------------------------------------
class _Reader:
    def __init__(self, data: bytes | memoryview, what: str) -> None:
        self.data, self.pos, self.what = bytes(data), 0, what

    def fail(self) -> GroupRecordError:
        return GroupRecordError(f"{self.what} is malformed at byte {self.pos}")

    def take(self, fmt: str) -> int:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise self.fail()
        value: int = struct.unpack_from(fmt, self.data, self.pos)[0]
        self.pos += size
        return value

    def raw(self, length: int) -> bytes:
        if length < 0 or self.pos + length > len(self.data):
            raise self.fail()
        self.pos += length
        return self.data[self.pos - length:self.pos]

    def uvarint(self) -> int:
        value = shift = 0
        while True:
            byte = self.take(">B")
            value |= (byte & 0x7F) << shift
            if byte < 0x80:
                return value
            shift += 7
            if shift > 28:
                raise self.fail()

    def string(self) -> str | None:
        length = self.uvarint()
        return None if length == 0 else self.raw(length - 1).decode("utf-8", errors="replace")

    def count(self) -> int:
        length = self.uvarint()
        if length == 0 or length - 1 > len(self.data) - self.pos:
            raise self.fail()  # none of these arrays is nullable
        return length - 1

    def strings(self) -> tuple[str, ...]:
        return tuple(self.string() or "" for _ in range(self.count()))

    def uuid(self) -> uuid.UUID:
        return uuid.UUID(bytes=self.raw(16))

    def tags(self) -> dict[int, bytes]:
        found = {}
        for _ in range(self.uvarint()):
            tag = self.uvarint()
            found[tag] = self.raw(self.uvarint())
        return found

    def topic_partitions(self) -> Partitions:
        result: dict[uuid.UUID, frozenset[int]] = {}
        for _ in range(self.count()):
            topic_id = self.uuid()
            result[topic_id] = frozenset(self.take(">i") for _ in range(self.count()))
            self.tags()
        return result

    def end(self) -> None:
        if self.pos != len(self.data):
            raise GroupRecordError(f"{self.what} has {len(self.data) - self.pos} bytes after its fields")


def decode_key(data: bytes | memoryview) -> ConsumerGroupKey:
    reader = _Reader(data, "consumer group record key")
    kind = reader.take(">h")
    if kind not in CONSUMER_GROUP_KEY_TYPES:
        raise GroupRecordError(f"__consumer_offsets key type {kind} is not a consumer group record")
    group = reader.raw(reader.take(">h")).decode("utf-8", errors="replace")
    sub = None if kind in _GROUP_ONLY else reader.raw(reader.take(">h")).decode("utf-8", errors="replace")
    reader.end()
    return ConsumerGroupKey(kind, group, sub)


def decode_value(kind: int, data: bytes | memoryview) -> ConsumerGroupValue:
    reader = _Reader(data, f"consumer group record value (type {kind})")
    version = reader.take(">h")
    if version != VALUE_VERSION:
        raise GroupRecordError(f"consumer group record type {kind} value version {version} is not one we read")
    value: ConsumerGroupValue
    if kind in (METADATA, TARGET_METADATA):
        epoch = reader.take(">i")
        value = GroupEpochValue(epoch) if kind == METADATA else AssignmentEpochValue(epoch)
    elif kind == PARTITION_METADATA:
        value = PartitionMetadataValue(tuple(_topic_metadata(reader) for _ in range(reader.count())))
    elif kind == MEMBER_METADATA:
        value = _decode_member(reader)
    elif kind == TARGET_MEMBER:
        value = TargetMemberValue(reader.topic_partitions())
    elif kind == CURRENT_ASSIGNMENT:
        value = CurrentAssignmentValue(reader.take(">i"), reader.take(">i"), reader.take(">b"),
                                       reader.topic_partitions(), reader.topic_partitions())
    elif kind == REGULAR_EXPRESSION:
        value = RegexValue(reader.strings(), reader.take(">q"), reader.take(">q"))
    else:
        raise GroupRecordError(f"__consumer_offsets key type {kind} is not a consumer group record")
    if not isinstance(value, MemberMetadataValue):
        reader.tags()
    reader.end()
    return value


def _topic_metadata(reader: _Reader) -> TopicMetadataValue:
    topic_id, name, partitions = reader.uuid(), reader.string() or "", reader.take(">i")
    for _ in range(reader.count()):  # PartitionMetadata: partition and racks, unused
        reader.take(">i")
        reader.strings()
        reader.tags()
    reader.tags()
    return TopicMetadataValue(topic_id, name, partitions)


def _decode_member(reader: _Reader) -> MemberMetadataValue:
    instance_id, rack_id = reader.string(), reader.string()
    client_id, client_host = reader.string() or "", reader.string() or ""
    names, regex = reader.strings(), reader.string()
    rebalance_timeout, assignor = reader.take(">i"), reader.string()
    classic = None
    tagged = reader.tags().get(0)
    if tagged is not None:
        inner = _Reader(tagged, "ClassicMemberMetadata")
        session = inner.take(">i")
        protocols = []
        for _ in range(inner.count()):
            name = inner.string() or ""
            length = inner.uvarint()
            protocols.append((name, inner.raw(length - 1) if length else b""))
            inner.tags()
        inner.tags()
        classic = ClassicProtocols(session, tuple(protocols))
    return MemberMetadataValue(instance_id, rack_id, client_id, client_host, names, regex, rebalance_timeout,
                               assignor, classic)


def key_type(data: bytes | memoryview) -> int:
    """The record type of a __consumer_offsets key (its leading int16), -1 when it has none."""
    return struct.unpack_from(">h", data)[0] if len(data) >= 2 else -1
