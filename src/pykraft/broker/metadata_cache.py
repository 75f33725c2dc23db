"""The broker's view of the cluster, replayed from committed metadata records and snapshots.

This is deliberately NOT a second replay: the broker feeds the very classes every controller replica uses
(`ClusterControl` for registrations, `ReplicationControl` / `PartitionRegistration` for topics and partitions,
`FeatureControl` for finalized features), so a broker and a controller that replayed the same log hold the same
image by construction. This module only adds the dispatch (as `QuorumController.replay` does), the offset
bookkeeping, and the queries a broker asks: KIP-841 ISR eligibility (Kafka's `Partition.isReplicaIsrEligible`),
which partitions this broker leads, and the last applied offset that heartbeats report.

Replay never raises: a record that does not fit the image (a damaged log, a bug) is counted in
`apply_errors` (Kafka's metadata-apply-error-count) and leaves the image as it was.
"""

from __future__ import annotations

import itertools
import random
import uuid
from collections.abc import Iterable, Iterator
from typing import Any

from pykraft.controller import cluster as cluster_records
from pykraft.controller.acl_control import AclControl, AclReplayError
from pykraft.controller.cluster import BrokerRegistration, ClusterControl, ReplayError
from pykraft.controller.configs import ConfigControl
from pykraft.controller.controller import SECURITY_RECORDS, replay_security
from pykraft.controller.features import FEATURE_LEVEL_RECORD, FeatureControl
from pykraft.controller.partitions import PartitionRecordError, PartitionRegistration
from pykraft.controller.replication import MetadataReplayError, ReplicationControl
from pykraft.controller.scram_control import ScramControl, ScramReplayError
from pykraft.records.metadata.written_versions import each_as_written

TopicPartition = tuple[uuid.UUID, int]

# Topic, Partition, PartitionChange, RemoveTopic: the records ReplicationControl replays.
_REPLICATION_RECORDS = frozenset({2, 3, 5, 9})
_REPLAY_ERRORS = (ReplayError, MetadataReplayError, PartitionRecordError, AclReplayError, ScramReplayError)
# A Fetch that carries no broker epoch (older followers, or before registration) skips the epoch check.
NO_BROKER_EPOCH = -1


class MetadataCache:
    def __init__(self) -> None:
        self.apply_errors = 0  # kept across snapshot loads: the counter only grows
        self._reset()

    def _reset(self) -> None:
        self.cluster = ClusterControl()
        # Replay never draws from this generator (only CreateTopics placement does, on the controller).
        self.replication = ReplicationControl(random.Random(0))
        self.features = FeatureControl(node_id=-1)
        self.configs = ConfigControl()
        self.acls = AclControl()  # what this broker's authorizer reads
        self.scram = ScramControl()  # what its SASL/SCRAM listeners authenticate against
        self.last_applied_offset = -1

    # ---- replay ------------------------------------------------------------------------------------------------
    def replay(self, record: Any, offset: int) -> None:
        """Apply one committed metadata record at `offset`. Types a broker does not model (quotas, delegation
        tokens, ...) and NoOpRecords only move the offset."""
        key = int(record.__api_key__)
        try:
            self.configs.replay_side(key, record, self.replication)
            if key in cluster_records.RECORD_TYPES:
                self.cluster.replay(record, offset)
            elif key in _REPLICATION_RECORDS:
                self.replication.replay(record)
            elif key == FEATURE_LEVEL_RECORD:
                self.features.replay(record)
            elif key in SECURITY_RECORDS:
                replay_security(self.acls, self.scram, key, record)
        except _REPLAY_ERRORS:
            self.apply_errors += 1
        self.last_applied_offset = max(self.last_applied_offset, offset)

    def replay_all(self, records: Iterable[tuple[int, Any]]) -> None:
        """Replay (offset, record) pairs in log order."""
        for offset, record in records:
            self.replay(record, offset)

    def load_snapshot(self, records: Iterable[Any], last_contained_offset: int) -> None:
        """Replace the whole image with a snapshot's."""
        self._reset()
        for record in records:
            self.replay(record, last_contained_offset)
        self.last_applied_offset = last_contained_offset

    def snapshot_records(self) -> Iterator[Any]:
        records = itertools.chain(self.features.snapshot_records(), self.cluster.snapshot_records(),
                                  self.replication.snapshot_records(), self.configs.snapshot_records(),
                                  self.scram.snapshot_records(), self.acls.snapshot_records())
        yield from each_as_written(records, self.features.metadata_version)  # Kafka's versions, as in the log

    # ---- brokers -----------------------------------------------------------------------------------------------
    def registration(self, broker_id: int) -> BrokerRegistration | None:
        return self.cluster.registration(broker_id)

    def broker_epoch(self, broker_id: int) -> int | None:
        return self.cluster.broker_epoch(broker_id)

    def is_active(self, broker_id: int) -> bool:
        """Registered, unfenced and not in controlled shutdown."""
        return self.cluster.is_active(broker_id)

    def is_isr_eligible(self, broker_id: int, broker_epoch_from_fetch: int) -> bool:
        """KIP-841 on the leader: may this follower be proposed for the ISR? Registered, not fenced, not in
        controlled shutdown, and the broker epoch its Fetch carried is the registered one (or -1: unknown), so
        a follower fetching from an older incarnation is not counted as the new one (KIP-903)."""
        registration = self.cluster.registration(broker_id)
        if registration is None or registration.fenced or registration.in_controlled_shutdown:
            return False
        return broker_epoch_from_fetch == NO_BROKER_EPOCH or broker_epoch_from_fetch == registration.epoch

    # ---- partitions --------------------------------------------------------------------------------------------
    def partition(self, topic_id: uuid.UUID, partition_id: int) -> PartitionRegistration | None:
        return self.replication.partition(topic_id, partition_id)

    def topic_id(self, name: str) -> uuid.UUID | None:
        return self.replication.topics_by_name.get(name)

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        return self.replication.topic_name(topic_id)

    def partitions_led_by(self, broker_id: int) -> dict[TopicPartition, PartitionRegistration]:
        """Every partition whose current leader is `broker_id`, in (topic name, partition) order."""
        led = {(t.topic_id, pid): p for t in self.replication.topics.values() for pid, p in t.partitions.items()
               if p.leader == broker_id}
        return dict(sorted(led.items(), key=lambda item: (self.topic_name(item[0][0]) or "", item[0][1])))

    def partitions_with_replica(self, broker_id: int) -> list[TopicPartition]:
        """Partitions that have `broker_id` among their replicas (leader or follower)."""
        return sorted(((t.topic_id, pid) for t in self.replication.topics.values()
                       for pid, p in t.partitions.items() if broker_id in p.replicas),
                      key=lambda k: (self.topic_name(k[0]) or "", k[1]))
