"""DescribeTopicPartitions (KIP-966, what Kafka 4's kafka-topics and Admin.describeTopics use): which topics and
partitions one answer holds, and where the next page starts. Pure: reads a metadata cache.

Kafka's `DescribeTopicPartitionsRequestHandler` and `KRaftMetadataCache.getTopicMetadataForDescribeTopicResponse`:
- Topics: the named ones, or every topic when the list is empty; only names >= the cursor's topic; sorted by name.
  A cursor naming a topic that the list does not contain, or a negative partition, is INVALID_REQUEST.
- At most `limit` partitions per answer: min(ResponsePartitionLimit, max.request.partition.size.limit), at least 1.
  The cursor's topic starts at the cursor's partition, every other at 0. A topic cut short sets NextCursor to its
  next partition and ends the answer; a topic reached with no room left sets NextCursor to (topic, 0).
- An unknown named topic answers UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC_EXCEPTION for an invalid name); in an
  all-topics listing there are none.
- Per partition: leader (-1 when none), leader epoch, replicas and ISR as recorded, ELR and last known ELR
  (empty lists when none, as Kafka's `Replicas.toList`), offline replicas (not registered, fenced, or placed in a
  directory the broker does not list as online).
- On the listener the request came in on (`listener`, Kafka's `request.context.listenerName`): a leader that is not
  registered or has no endpoint on it is -1, and a replica without an endpoint on it is offline, as a client there
  cannot reach it.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

from pykraft.controller.partitions import DIRECTORY_LOST, DIRECTORY_MIGRATING, DIRECTORY_UNASSIGNED, PartitionRegistration
from pykraft.protocol.errors import ErrorCode

from .metadata_cache import MetadataCache

DEFAULT_PARTITION_SIZE_LIMIT = 2000  # max.request.partition.size.limit
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})
_LEGAL_NAME = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")


@dataclass(frozen=True, slots=True)
class PartitionView:
    index: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    elr: tuple[int, ...]
    last_known_elr: tuple[int, ...]
    offline: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TopicView:
    name: str
    error: ErrorCode
    topic_id: uuid.UUID | None
    is_internal: bool
    partitions: tuple[PartitionView, ...] = ()


@dataclass(frozen=True, slots=True)
class Page:
    topics: tuple[TopicView, ...]
    next_cursor: tuple[str, int] | None = None
    error: ErrorCode = ErrorCode.NONE  # INVALID_REQUEST: a bad cursor (every named topic answers it)


def describe(cache: MetadataCache, names: list[str], cursor: tuple[str, int] | None, requested_limit: int,
             size_limit: int = DEFAULT_PARTITION_SIZE_LIMIT, listener: str | None = None) -> Page:
    all_topics = not names
    start_name = cursor[0] if cursor is not None else ""
    pool = cache.replication.topics_by_name.keys() if all_topics else names
    chosen = sorted({n for n in pool if n >= start_name})
    if cursor is not None and (cursor[1] < 0 or (not all_topics and cursor[0] not in chosen)):
        return Page(tuple(TopicView(n, ErrorCode.INVALID_REQUEST, None, n in INTERNAL_TOPICS) for n in names),
                    error=ErrorCode.INVALID_REQUEST)
    remaining = max(min(size_limit, requested_limit), 1)
    found: list[TopicView] = []
    for name in chosen:
        if remaining <= 0:
            return Page(tuple(found), (name, 0))
        topic_id = cache.topic_id(name)
        if topic_id is None:
            if not all_topics:
                error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if _LEGAL_NAME.match(name) and name not in (".", "..") \
                    else ErrorCode.INVALID_TOPIC_EXCEPTION
                found.append(TopicView(name, error, None, name in INTERNAL_TOPICS))
            continue
        first = cursor[1] if cursor is not None and name == cursor[0] else 0
        count = len(cache.replication.topics[topic_id].partitions)
        upper = min(count, first + remaining)
        views = tuple(_partition(cache, index, p, listener) for index in range(first, upper)
                      if (p := cache.partition(topic_id, index)) is not None)
        found.append(TopicView(name, ErrorCode.NONE, topic_id, name in INTERNAL_TOPICS, views))
        if upper < count:
            return Page(tuple(found), (name, upper))
        remaining -= len(views)
    return Page(tuple(found))


def _partition(cache: MetadataCache, index: int, p: PartitionRegistration, listener: str | None) -> PartitionView:
    leader = p.leader if listener is None or _on_listener(cache, p.leader, listener) else -1
    return PartitionView(index, leader, p.leader_epoch, tuple(p.replicas), tuple(p.isr), tuple(p.elr),
                         tuple(p.last_known_elr), _offline(cache, p, listener))


def _on_listener(cache: MetadataCache, broker_id: int, listener: str) -> bool:
    registration = cache.registration(broker_id)
    return registration is not None and any(e.name == listener for e in registration.listeners)


def _offline(cache: MetadataCache, p: PartitionRegistration, listener: str | None) -> tuple[int, ...]:
    offline = []
    directories = dict(zip(p.replicas, p.directories))
    for broker_id in p.replicas:
        registration = cache.registration(broker_id)
        if registration is None or registration.fenced or (
                listener is not None and not _on_listener(cache, broker_id, listener)):
            offline.append(broker_id)
            continue
        directory = directories.get(broker_id, DIRECTORY_UNASSIGNED)
        if directory in (DIRECTORY_UNASSIGNED, DIRECTORY_MIGRATING):
            continue
        if directory == DIRECTORY_LOST or (registration.log_dirs and directory not in registration.log_dirs):
            offline.append(broker_id)
    return tuple(offline)
