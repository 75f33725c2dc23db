"""The record keys and values of `__consumer_offsets` (Kafka's group-coordinator schemas, kafka-schemas/group-coordinator).

Each key and value starts with an int16 version: keys 0-1 are OffsetCommitKey (group, topic, partition), key 2 a
GroupMetadataKey (group). We write OffsetCommitKey v1 / OffsetCommitValue v3 and GroupMetadataValue v3, the
newest non-flexible versions (Kafka reads them all), and read values v0-v3; a null value is a tombstone (offsets
or group deleted). Flexible v4 values (written by Kafka 3.x+ only with new features) are refused with a clear
error, never guessed at.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
OFFSET_COMMIT_VALUE_VERSION = 3
GROUP_METADATA_VALUE_VERSION = 3


class GroupRecordError(ValueError):
    """A __consumer_offsets key or value we cannot read."""


@dataclass(frozen=True, slots=True)
class OffsetKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupKey:
    group: str


@dataclass(frozen=True, slots=True)
class OffsetValue:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int


@dataclass(frozen=True, slots=True)
class MemberValue:
    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    state_timestamp_ms: int
    members: tuple[MemberValue, ...]


# ---- writing -------------------------------------------------------------------------------------------------------
def _string(text: str | None) -> bytes:
    if text is None:
        return struct.pack(">h", -1)
    data = text.encode()
    return struct.pack(">h", len(data)) + data


def _bytes(data: bytes) -> bytes:
    return struct.pack(">i", len(data)) + data


def encode_key(key: OffsetKey | GroupKey) -> bytes:
    if isinstance(key, OffsetKey):
        return (struct.pack(">h", OFFSET_COMMIT_KEY_VERSION) + _string(key.group) + _string(key.topic)
                + struct.pack(">i", key.partition))
    return struct.pack(">h", GROUP_METADATA_KEY_VERSION) + _string(key.group)


def encode_offset_value(value: OffsetValue) -> bytes:
    return (struct.pack(">hqi", OFFSET_COMMIT_VALUE_VERSION, value.offset, value.leader_epoch)
            + _string(value.metadata) + struct.pack(">q", value.commit_timestamp_ms))


def encode_group_value(value: GroupValue) -> bytes:
    out = bytearray(struct.pack(">h", GROUP_METADATA_VALUE_VERSION))
    out += _string(value.protocol_type) + struct.pack(">i", value.generation)
    out += _string(value.protocol) + _string(value.leader) + struct.pack(">qi", value.state_timestamp_ms,
                                                                         len(value.members))
    for m in value.members:
        out += _string(m.member_id) + _string(m.instance_id) + _string(m.client_id) + _string(m.client_host)
        out += struct.pack(">ii", m.rebalance_timeout_ms, m.session_timeout_ms)
        out += _bytes(m.subscription) + _bytes(m.assignment)
    return bytes(out)


# ---- reading -------------------------------------------------------------------------------------------------------
class _Reader:
    def __init__(self, data: bytes | memoryview, what: str) -> None:
        self.data, self.pos, self.what = bytes(data), 0, what

    def take(self, fmt: str) -> int:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise GroupRecordError(f"{self.what} is truncated at byte {self.pos}")
        value: int = struct.unpack_from(fmt, self.data, self.pos)[0]
        self.pos += size
        return value

    def raw(self, length: int) -> bytes:
        if length < 0 or self.pos + length > len(self.data):
            raise GroupRecordError(f"{self.what} is truncated at byte {self.pos}")
        self.pos, start = self.pos + length, self.pos
        return self.data[start:self.pos]

    def string(self, nullable: bool = False) -> str | None:
        length = self.take(">h")
        if length == -1 and nullable:
            return None
        return self.raw(length).decode("utf-8", errors="replace")

    def end(self) -> None:
        if self.pos != len(self.data):
            raise GroupRecordError(f"{self.what} has {len(self.data) - self.pos} bytes after its fields")


def decode_key(data: bytes | memoryview) -> OffsetKey | GroupKey:
    reader = _Reader(data, "__consumer_offsets key")
    version = reader.take(">h")
    if version in (0, 1):
        key: OffsetKey | GroupKey = OffsetKey(reader.string() or "", reader.string() or "", reader.take(">i"))
    elif version == 2:
        key = GroupKey(reader.string() or "")
    else:
        raise GroupRecordError(f"__consumer_offsets key version {version} is not one we read")
    reader.end()
    return key


def decode_offset_value(data: bytes | memoryview) -> OffsetValue:
    reader = _Reader(data, "OffsetCommitValue")
    version = reader.take(">h")
    if not 0 <= version <= 3:
        raise GroupRecordError(f"OffsetCommitValue version {version} is not one we read")
    offset = reader.take(">q")
    epoch = reader.take(">i") if version >= 3 else -1
    metadata = reader.string() or ""
    timestamp = reader.take(">q")
    if version == 1:
        reader.take(">q")  # expireTimestamp: offsets do not expire here
    reader.end()
    return OffsetValue(offset, epoch, metadata, timestamp)


def decode_group_value(data: bytes | memoryview) -> GroupValue:
    reader = _Reader(data, "GroupMetadataValue")
    version = reader.take(">h")
    if not 0 <= version <= 3:
        raise GroupRecordError(f"GroupMetadataValue version {version} is not one we read")
    protocol_type = reader.string() or ""
    generation = reader.take(">i")
    protocol, leader = reader.string(True), reader.string(True)
    timestamp = reader.take(">q") if version >= 2 else -1
    members = []
    for _ in range(reader.take(">i")):
        member_id = reader.string() or ""
        instance_id = reader.string(True) if version >= 3 else None
        client_id, client_host = reader.string() or "", reader.string() or ""
        rebalance = reader.take(">i") if version >= 1 else -1
        session = reader.take(">i")
        subscription, assignment = reader.raw(reader.take(">i")), reader.raw(reader.take(">i"))
        members.append(MemberValue(member_id, instance_id, client_id, client_host, rebalance, session,
                                   subscription, assignment))
    reader.end()
    return GroupValue(protocol_type, generation, protocol, leader, timestamp, tuple(members))


def subscribed_topics(subscription: bytes) -> set[str] | None:
    """The topics of a "consumer" protocol member's subscription (ConsumerProtocolSubscription: int16 version,
    then the topic names in every version); None when the bytes are not one."""
    try:
        reader = _Reader(subscription, "ConsumerProtocolSubscription")
        reader.take(">h")
        return {reader.string() or "" for _ in range(reader.take(">i"))}
    except GroupRecordError:
        return None


def java_string_hash(text: str) -> int:
    """Java's String.hashCode (UTF-16 code units, 32-bit wrap), signed."""
    value = 0
    data = text.encode("utf-16-be")
    for i in range(0, len(data), 2):
        value = (31 * value + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def partition_for(group_id: str, partitions: int) -> int:
    """Kafka's coordinator partition: Utils.abs(groupId.hashCode) % partitions (abs of MIN_VALUE is 0 there)."""
    value = java_string_hash(group_id)
    return (0 if value == -(1 << 31) else abs(value)) % partitions
