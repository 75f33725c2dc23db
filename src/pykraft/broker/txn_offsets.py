"""Offsets committed inside transactions (TxnOffsetCommit, KIP-98/KIP-447), per `__consumer_offsets` partition,
pure: they are written to the partition as a transactional batch of the producer, but count as committed only once
the transaction's COMMIT marker is written there (an ABORT drops them). Kafka's GroupMetadata
pendingTransactionalOffsetCommits. Until then an OffsetFetch with RequireStable answers UNSTABLE_OFFSET_COMMIT for
those partitions, so a read_committed consumer never starts from offsets of an open transaction.
The same rules replay the partition when a coordinator loads it (group_host.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .group_state import OffsetEntry

TopicPartitionName = tuple[str, int]


@dataclass(slots=True)
class PendingTxnOffsets:
    # producer id -> group id -> partition -> offset
    by_producer: dict[int, dict[str, dict[TopicPartitionName, OffsetEntry]]] = field(default_factory=dict)

    def add(self, producer_id: int, group_id: str, offsets: dict[TopicPartitionName, OffsetEntry]) -> None:
        self.by_producer.setdefault(producer_id, {}).setdefault(group_id, {}).update(offsets)

    def complete(self, producer_id: int, commit: bool) -> dict[str, dict[TopicPartitionName, OffsetEntry]]:
        """The producer's transaction ended: its offsets by group if it committed ({} if it aborted)."""
        pending = self.by_producer.pop(producer_id, {})
        return pending if commit else {}

    def is_pending(self, group_id: str, partition: TopicPartitionName) -> bool:
        return any(partition in groups.get(group_id, {}) for groups in self.by_producer.values())
