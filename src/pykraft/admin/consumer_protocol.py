"""The "consumer" embedded protocol of classic groups: what a member's JoinGroup metadata (its subscription) and its
SyncGroup assignment carry (Kafka's ConsumerProtocolSubscription / ConsumerProtocolAssignment: an int16 version,
then the struct of that version, never flexible).

Decoding accepts every version (a version above the newest we know is read as the newest, as Kafka's
ConsumerProtocol does: later versions only add fields at the end) and raises `ValueError` on bytes that are not one.
"""

from __future__ import annotations

import io
import struct
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from typing import Any

from kio.schema.consumer_protocol_assignment.v3 import data as assignment_v3
from kio.schema.consumer_protocol_subscription.v3 import data as subscription_v3
from kio.schema.types import TopicName
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i32

__all__ = ["decode_assignment", "decode_message", "decode_subscription", "encode_assignment", "encode_subscription",
           "range_assign"]

_VERSION = struct.Struct(">h")
NEWEST = 3


@cache
def _class(kind: str, version: int) -> type:
    import importlib

    return getattr(importlib.import_module(f"kio.schema.consumer_protocol_{kind}.v{version}.data"),
                   "ConsumerProtocolAssignment" if kind == "assignment" else "ConsumerProtocolSubscription")


def decode_message(kind: str, data: bytes | memoryview) -> Any:
    """The kio message of a subscription or assignment (`kind`); ValueError when the bytes are not one."""
    view = memoryview(bytes(data))
    if len(view) < _VERSION.size:
        raise ValueError(f"a consumer protocol {kind} of {len(view)} bytes")
    (version,) = _VERSION.unpack_from(view)
    if version < 0:
        raise ValueError(f"consumer protocol {kind} version {version}")
    try:
        message, _ = entity_reader(_class(kind, min(version, NEWEST)))(view[_VERSION.size:].toreadonly(), 0)
    except Exception as exc:  # noqa: BLE001 - kio raises several kinds on bad bytes
        raise ValueError(f"undecodable consumer protocol {kind}: {exc}") from None
    return message


def _encode(message: Any) -> bytes:
    buffer = io.BytesIO()
    buffer.write(_VERSION.pack(int(message.__version__)))
    entity_writer(type(message))(buffer, message)
    return buffer.getvalue()


def decode_assignment(data: bytes | memoryview) -> list[tuple[str, int]]:
    """The assigned (topic, partition) pairs, sorted; an empty value (a member without assignment) is none."""
    if not data:
        return []
    message = decode_message("assignment", data)
    return sorted((str(t.topic), int(p)) for t in message.assigned_partitions for p in t.partitions)


def decode_subscription(data: bytes | memoryview) -> list[str]:
    message = decode_message("subscription", data)
    return sorted(str(t) for t in message.topics)


def encode_subscription(topics: Iterable[str], owned: Iterable[tuple[str, int]] = (), generation: int = -1,
                        rack: str | None = None) -> bytes:
    return _encode(subscription_v3.ConsumerProtocolSubscription(
        topics=tuple(TopicName(t) for t in sorted(set(topics))), user_data=None,
        owned_partitions=_topic_partitions(subscription_v3.TopicPartition, owned),
        generation_id=i32(generation), rack_id=rack))


def encode_assignment(partitions: Iterable[tuple[str, int]]) -> bytes:
    return _encode(assignment_v3.ConsumerProtocolAssignment(
        assigned_partitions=_topic_partitions(assignment_v3.TopicPartition, partitions), user_data=None))


def _topic_partitions(cls: type, pairs: Iterable[tuple[str, int]]) -> tuple[Any, ...]:
    grouped: dict[str, list[int]] = {}
    for topic, index in pairs:
        grouped.setdefault(topic, []).append(index)
    return tuple(cls(topic=TopicName(t), partitions=tuple(i32(i) for i in sorted(p))) for t, p in sorted(grouped.items()))


def range_assign(subscriptions: Mapping[str, Sequence[str]], partition_counts: Mapping[str, int],
                 instance_ids: Mapping[str, str | None] | None = None) -> dict[str, list[tuple[str, int]]]:
    """Kafka's RangeAssignor: per topic, its partitions in order split into contiguous ranges over the members
    subscribed to it, the first `count % members` members getting one more. Members are ordered as Kafka's
    MemberInfo orders them: static members (a group instance id) first, by instance id, then the others by member
    id."""
    instances = instance_ids or {}

    def order(member: str) -> tuple[int, str]:
        instance = instances.get(member)
        return (0, instance) if instance is not None else (1, member)

    assignment: dict[str, list[tuple[str, int]]] = {member: [] for member in subscriptions}
    for topic in sorted({t for wanted in subscriptions.values() for t in wanted}):
        members = sorted((m for m, wanted in subscriptions.items() if topic in wanted), key=order)
        count = partition_counts.get(topic, 0)
        if not members or count <= 0:
            continue
        share, extra = divmod(count, len(members))
        start = 0
        for position, member in enumerate(members):
            size = share + (1 if position < extra else 0)
            assignment[member].extend((topic, p) for p in range(start, start + size))
            start += size
    return assignment
