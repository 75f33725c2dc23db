"""Which coordinator answers for a group or a transactional id on this broker: one rule for the group coordinator
(`__consumer_offsets`) and the transaction coordinator (`__transaction_state`), as Kafka's
GroupMetadataManager and TransactionStateManager share it.

The key hashes to a partition of the coordinator topic (records/group_records.partition_for). No topic yet (or
none the image knows): COORDINATOR_NOT_AVAILABLE; the partition still loading on this broker:
COORDINATOR_LOAD_IN_PROGRESS; a partition this broker does not lead: NOT_COORDINATOR.
"""

from __future__ import annotations

from collections.abc import Container, Mapping
from typing import TypeVar

from pykraft.broker.metadata_cache import MetadataCache
from pykraft.protocol.errors import ErrorCode
from pykraft.records.group_records import partition_for

C = TypeVar("C")


def partition_count(cache: MetadataCache, topic: str) -> int | None:
    """The number of partitions of `topic` in the broker's image, None when the image has no such topic."""
    topic_id = cache.topic_id(topic)
    info = None if topic_id is None else cache.replication.topics.get(topic_id)
    return None if info is None else len(info.partitions)


def coordinator_for(key: str, count: int | None, loading: Container[int], loaded: Mapping[int, C]) -> C | ErrorCode:
    """The loaded coordinator of `key`'s partition among `count` partitions, or the error a client is answered."""
    if not count:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    partition = partition_for(key, count)
    if partition in loading:
        return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    return loaded.get(partition, ErrorCode.NOT_COORDINATOR)
