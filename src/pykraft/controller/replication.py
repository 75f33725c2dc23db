"""Topics and partitions of the metadata image (Kafka's ReplicationControlManager), rebuilt by replay.

State: topics by name and by id, each topic's partitions, and two indexes kept in step with every replayed
record: broker -> partitions whose ISR holds it, and leader (or -1) -> partitions it leads. The request handlers
and the fencing side effects live in topics.py, alter_partition.py and elections.py; they read this state and
return records, and only `replay` changes it (the active controller replays its own records at once).
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from kio.schema.types import TopicName

from pykraft.records.metadata.schema.partition_change_record import (
    PartitionChangeRecordV0,
    PartitionChangeRecordV1,
    PartitionChangeRecordV2,
)
from pykraft.records.metadata.schema.partition_record import PartitionRecordV0, PartitionRecordV1, PartitionRecordV2
from pykraft.records.metadata.schema.remove_topic_record import RemoveTopicRecordV0
from pykraft.records.metadata.schema.topic_record import TopicRecordV0

from . import alter_partition, elections, reassignments, topics
from .eligibility import BrokerEligibility
from .partitions import NO_LEADER, PartitionRecordError, PartitionRegistration
from .result import ControllerResult

TopicPartition = tuple[uuid.UUID, int]

_PARTITION_RECORDS = (PartitionRecordV0, PartitionRecordV1, PartitionRecordV2)
_CHANGE_RECORDS = (PartitionChangeRecordV0, PartitionChangeRecordV1, PartitionChangeRecordV2)
REPLAYED_TYPES = (TopicRecordV0, RemoveTopicRecordV0, *_PARTITION_RECORDS, *_CHANGE_RECORDS)


class MetadataReplayError(ValueError):
    """A committed record that does not fit the image (a partition of an unknown topic, a change to an unknown
    partition, ...). The log is ours, so this means a bug or a damaged log: the caller counts it
    (MetadataErrorCount) and keeps going; the image is left exactly as it was before the record."""


@dataclass(slots=True)
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    partitions: dict[int, PartitionRegistration] = field(default_factory=dict)


def collision_key(name: str) -> str:
    """'.' and '_' collide in metric names, so Kafka refuses two topics that differ only there."""
    return name.replace(".", "_")


class ReplicationControl:
    def __init__(
        self,
        rng: random.Random,
        *,
        default_num_partitions: int = 1,
        default_replication_factor: int = 1,
        unclean_election_enabled: Callable[[str], bool] = lambda topic_name: False,
    ) -> None:
        self.rng = rng  # topic ids and the replica placement start, so tests and the simulator are repeatable
        self.default_num_partitions = default_num_partitions
        self.default_replication_factor = default_replication_factor
        self.unclean_election_enabled = unclean_election_enabled  # per topic (unclean.leader.election.enable)
        self.topics_by_name: dict[str, uuid.UUID] = {}
        self.topics: dict[uuid.UUID, TopicInfo] = {}
        self._collisions: dict[str, str] = {}
        self._isr_index: dict[int, set[TopicPartition]] = {}
        self._leader_index: dict[int, set[TopicPartition]] = {}

    # ---- replay -----------------------------------------------------------------------------------------------

    def replay(self, record: object) -> None:
        """Apply one committed (or, on the active controller, just written) record of the types in REPLAYED_TYPES."""
        if isinstance(record, TopicRecordV0):
            self._replay_topic(record)
        elif isinstance(record, _PARTITION_RECORDS):
            self._replay_partition(record)
        elif isinstance(record, _CHANGE_RECORDS):
            self._replay_change(record)
        elif isinstance(record, RemoveTopicRecordV0):
            self._replay_remove_topic(record)
        else:
            raise TypeError(f"ReplicationControl does not replay {type(record).__name__}")

    def _replay_topic(self, record: TopicRecordV0) -> None:
        if record.topic_id is None:
            raise MetadataReplayError(f"topic {record.name} has the zero topic id")
        if record.topic_id in self.topics or record.name in self.topics_by_name:
            raise MetadataReplayError(f"topic {record.name} ({record.topic_id}) already exists")
        self.topics_by_name[record.name] = record.topic_id
        self.topics[record.topic_id] = TopicInfo(record.name, record.topic_id)
        self._collisions[collision_key(record.name)] = record.name

    def _replay_partition(self, record: PartitionRecordV0 | PartitionRecordV1 | PartitionRecordV2) -> None:
        topic = None if record.topic_id is None else self.topics.get(record.topic_id)
        if topic is None:
            raise MetadataReplayError(f"partition {record.partition_id} of unknown topic id {record.topic_id}")
        try:
            new = PartitionRegistration.from_record(record)
        except PartitionRecordError as exc:
            raise MetadataReplayError(f"bad PartitionRecord for {topic.name}-{record.partition_id}: {exc}") from exc
        self._put(topic, int(record.partition_id), new)

    def _replay_change(self, record: PartitionChangeRecordV0 | PartitionChangeRecordV1 | PartitionChangeRecordV2) -> None:
        topic = None if record.topic_id is None else self.topics.get(record.topic_id)
        old = None if topic is None else topic.partitions.get(int(record.partition_id))
        if topic is None or old is None:
            raise MetadataReplayError(f"change to unknown partition {record.topic_id}:{record.partition_id}")
        try:
            new = old.merge(record)
        except PartitionRecordError as exc:
            raise MetadataReplayError(f"bad PartitionChangeRecord for {topic.name}-{record.partition_id}: {exc}") from exc
        self._put(topic, int(record.partition_id), new)

    def _replay_remove_topic(self, record: RemoveTopicRecordV0) -> None:
        topic = None if record.topic_id is None else self.topics.pop(record.topic_id, None)
        if topic is None:
            raise MetadataReplayError(f"cannot remove unknown topic id {record.topic_id}")
        del self.topics_by_name[topic.name]
        self._collisions.pop(collision_key(topic.name), None)
        for partition_id, partition in topic.partitions.items():
            self._unindex((topic.topic_id, partition_id), partition)

    def _put(self, topic: TopicInfo, partition_id: int, new: PartitionRegistration) -> None:
        key = (topic.topic_id, partition_id)
        old = topic.partitions.get(partition_id)
        if old is not None:
            self._unindex(key, old)
        topic.partitions[partition_id] = new
        for broker in new.isr:
            self._isr_index.setdefault(broker, set()).add(key)
        self._leader_index.setdefault(new.leader if new.leader >= 0 else NO_LEADER, set()).add(key)

    def _unindex(self, key: TopicPartition, partition: PartitionRegistration) -> None:
        for broker in partition.isr:
            _discard(self._isr_index, broker, key)
        _discard(self._leader_index, partition.leader if partition.leader >= 0 else NO_LEADER, key)

    # ---- snapshots --------------------------------------------------------------------------------------------

    def snapshot_records(self) -> Iterator[object]:
        """Every record needed to rebuild this image: each topic, then its partitions in id order."""
        for topic in self.topics.values():
            yield TopicRecordV0(name=TopicName(topic.name), topic_id=topic.topic_id)
            for partition_id in sorted(topic.partitions):
                yield topic.partitions[partition_id].to_record(topic.topic_id, partition_id)

    # ---- queries ----------------------------------------------------------------------------------------------

    def partition(self, topic_id: uuid.UUID, partition_id: int) -> PartitionRegistration | None:
        topic = self.topics.get(topic_id)
        return None if topic is None else topic.partitions.get(partition_id)

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        topic = self.topics.get(topic_id)
        return None if topic is None else topic.name

    def colliding_topic(self, name: str) -> str | None:
        """An existing topic whose name differs from `name` only by '.' versus '_'."""
        other = self._collisions.get(collision_key(name))
        return other if other is not None and other != name else None

    def partitions_with_broker_in_isr(self, broker_id: int) -> list[TopicPartition]:
        return self._ordered(self._isr_index.get(broker_id, ()))

    def partitions_led_by(self, broker_id: int) -> int:
        return len(self._leader_index.get(broker_id, ())) if broker_id >= 0 else 0

    def leaderless_partitions(self) -> list[TopicPartition]:
        return self._ordered(self._leader_index.get(NO_LEADER, ()))

    def offline_partition_count(self) -> int:
        return len(self._leader_index.get(NO_LEADER, ()))

    def topic_count(self) -> int:
        return len(self.topics)

    def partition_count(self) -> int:
        return sum(len(t.partitions) for t in self.topics.values())

    def imbalanced_partitions(self) -> list[TopicPartition]:
        """Partitions whose leader is not their first replica (PreferredReplicaImbalanceCount counts these)."""
        return [(t.topic_id, pid) for t in self.topics.values() for pid in sorted(t.partitions)
                if not t.partitions[pid].has_preferred_leader]

    def preferred_replica_imbalance_count(self) -> int:
        return len(self.imbalanced_partitions())

    def _ordered(self, keys: Iterable[TopicPartition]) -> list[TopicPartition]:
        # Deterministic order (topic name, partition): the records produced from it are too.
        return sorted(keys, key=lambda k: (self.topics[k[0]].name, k[1]))

    # ---- requests and side effects (records to append; nothing here changes the image) -------------------------

    def handle_create_topics(self, request: Any, brokers: BrokerEligibility, now_ms: int = 0,
                             effective: topics.EffectiveConfigs | None = None) -> ControllerResult:
        return topics.create_topics(self, request, brokers, effective)

    def handle_delete_topics(self, request: Any, now_ms: int = 0) -> ControllerResult:
        return topics.delete_topics(self, request)

    def handle_alter_partition(self, request: Any, version: int, brokers: BrokerEligibility) -> ControllerResult:
        return alter_partition.alter_partition(self, request, version, brokers)

    def handle_elect_leaders(self, request: Any, brokers: BrokerEligibility, now_ms: int = 0) -> ControllerResult:
        return elections.elect_leaders(self, request, brokers)

    def handle_alter_reassignments(self, request: Any, brokers: BrokerEligibility) -> ControllerResult:
        return reassignments.alter_partition_reassignments(self, request, brokers)

    def handle_list_reassignments(self, request: Any) -> ControllerResult:
        return reassignments.list_partition_reassignments(self, request)

    def records_for_fence(self, broker_id: int, brokers: BrokerEligibility) -> list[object]:
        return elections.records_removing_broker(self, broker_id, brokers)

    def records_for_controlled_shutdown(self, broker_id: int, brokers: BrokerEligibility) -> list[object]:
        return elections.records_removing_broker(self, broker_id, brokers)

    def records_for_unregister(self, broker_id: int, brokers: BrokerEligibility) -> list[object]:
        return elections.records_removing_broker(self, broker_id, brokers)

    def records_for_unfence(self, broker_id: int, brokers: BrokerEligibility) -> list[object]:
        return elections.records_for_unfence(self, broker_id, brokers)

    def records_for_unclean_recovery(self, brokers: BrokerEligibility) -> list[object]:
        return elections.records_for_unclean_recovery(self, brokers)

    def records_for_preferred_balance(self, brokers: BrokerEligibility, max_partitions: int) -> list[object]:
        return elections.records_for_preferred_balance(self, brokers, max_partitions)


def _discard(index: dict[int, set[TopicPartition]], broker: int, key: TopicPartition) -> None:
    members = index.get(broker)
    if members is not None:
        members.discard(key)
        if not members:
            del index[broker]
