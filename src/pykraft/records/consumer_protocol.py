"""The "consumer" embedded protocol of classic groups (shared by the admin tools and the coordinator's online
migration of groups, broker/group_migration.py): what a member's JoinGroup metadata (its subscription) and its
SyncGroup assignment carry (Kafka's ConsumerProtocolSubscription / ConsumerProtocolAssignment: an int16 version,
then the struct of that version, never flexible).

Decoding accepts every version (a version above the newest we know is read as the newest, as Kafka's
ConsumerProtocol does: later versions only add fields at the end) and raises `ValueError` on bytes that are not one.
"""

from __future__ import annotations

import importlib
import io
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any

from kio.schema.consumer_protocol_subscription.v3 import data as subscription_v3
from kio.schema.types import TopicName
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i32

__all__ = ["Subscription", "decode_assignment", "decode_message", "decode_subscription", "encode_assignment",
           "encode_subscription", "read_subscription", "version_of"]

_VERSION = struct.Struct(">h")
NEWEST = 3


@cache
def _class(kind: str, version: int) -> type:
    cls: type = getattr(importlib.import_module(f"kio.schema.consumer_protocol_{kind}.v{version}.data"),
                        "ConsumerProtocolAssignment" if kind == "assignment" else "ConsumerProtocolSubscription")
    return cls


def decode_message(kind: str, data: bytes | memoryview) -> Any:
    """The kio message of a subscription or assignment (`kind`); ValueError when the bytes are not one."""
    view = memoryview(bytes(data))
    if len(view) < _VERSION.size:
        raise ValueError(f"a consumer protocol {kind} of {len(view)} bytes")
    (version,) = _VERSION.unpack_from(view)
    if version < 0:
        raise ValueError(f"consumer protocol {kind} version {version}")
    message: Any
    try:
        message, _ = entity_reader(_class(kind, min(version, NEWEST)))(view[_VERSION.size:].toreadonly(), 0)
    except Exception as exc:  # kio raises several kinds on bad bytes
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


def encode_assignment(partitions: Iterable[tuple[str, int]], version: int = NEWEST) -> bytes:
    """At `version` (Kafka answers a member in the version of its subscription; every version has the same
    fields)."""
    cls = _class("assignment", max(0, min(version, NEWEST)))
    module = importlib.import_module(cls.__module__)
    return _encode(cls(assigned_partitions=_topic_partitions(module.TopicPartition, partitions), user_data=None))


@dataclass(frozen=True, slots=True)
class Subscription:
    version: int
    topics: tuple[str, ...]
    owned: tuple[tuple[str, int], ...]
    rack: str | None


def version_of(data: bytes | memoryview) -> int:
    """The version of a subscription or an assignment; ValueError when too short."""
    if len(data) < _VERSION.size:
        raise ValueError("a consumer protocol message without its version")
    version: int = _VERSION.unpack_from(bytes(data[:_VERSION.size]))[0]
    return version


def read_subscription(data: bytes | memoryview) -> Subscription:
    """Everything a subscription says (owned partitions from v1, the rack from v3); ValueError when malformed."""
    message = decode_message("subscription", data)
    owned = tuple(sorted((str(t.topic), int(p)) for t in getattr(message, "owned_partitions", ()) or ()
                         for p in t.partitions))
    return Subscription(version_of(data), tuple(str(t) for t in message.topics), owned,
                        getattr(message, "rack_id", None))


def _topic_partitions(cls: type, pairs: Iterable[tuple[str, int]]) -> tuple[Any, ...]:
    grouped: dict[str, list[int]] = {}
    for topic, index in pairs:
        grouped.setdefault(topic, []).append(index)
    return tuple(cls(topic=TopicName(t), partitions=tuple(i32(i) for i in sorted(p))) for t, p in sorted(grouped.items()))
