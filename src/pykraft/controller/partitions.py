"""One partition's replicated state (Kafka's PartitionRegistration) and how metadata records change it.

A PartitionRecord (v0-v2) carries the full state; a PartitionChangeRecord (v0-v2) carries only what changed:
a list left at None, a leader of NO_LEADER_CHANGE (-2) or a recovery state of -1 means "unchanged". Replaying a
change record always bumps the partition epoch, and bumps the leader epoch whenever the record sets the leader
field at all (even to the same broker: that is how a reassignment forces a new leader epoch).
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from kio.schema.types import BrokerId
from kio.static.primitive import i8, i32

from pykraft.records.metadata.schema.partition_change_record import (
    PartitionChangeRecordV0,
    PartitionChangeRecordV1,
    PartitionChangeRecordV2,
)
from pykraft.records.metadata.schema.partition_record import PartitionRecordV0, PartitionRecordV1, PartitionRecordV2

NO_LEADER = -1
NO_LEADER_CHANGE = -2

# Kafka's reserved directory ids (DirectoryId.java): a replica whose directory the controller does not know yet.
DIRECTORY_UNASSIGNED = uuid.UUID(int=0)
DIRECTORY_LOST = uuid.UUID(int=1)
# Replicas described by a record without directories (v0) are "migrating": placed before directories existed.
DIRECTORY_MIGRATING = uuid.UUID(int=2)

PartitionRecord = PartitionRecordV0 | PartitionRecordV1 | PartitionRecordV2
PartitionChangeRecord = PartitionChangeRecordV0 | PartitionChangeRecordV1 | PartitionChangeRecordV2


class LeaderRecoveryState(enum.IntEnum):
    """KIP-704: a leader elected uncleanly is RECOVERING until it reports RECOVERED through AlterPartition."""

    RECOVERED = 0
    RECOVERING = 1

    @classmethod
    def parse(cls, value: int) -> LeaderRecoveryState | None:
        """The state for a wire value, None for anything else (a peer's bad input, not an exception)."""
        try:
            return cls(value)
        except ValueError:
            return None


class PartitionRecordError(ValueError):
    """A partition record that cannot be applied (sizes that disagree, an unknown recovery state)."""


@dataclass(frozen=True, slots=True)
class PartitionRegistration:
    replicas: tuple[int, ...]
    directories: tuple[uuid.UUID, ...]
    isr: tuple[int, ...]
    removing_replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    leader: int = NO_LEADER
    leader_recovery_state: LeaderRecoveryState = LeaderRecoveryState.RECOVERED
    leader_epoch: int = 0
    partition_epoch: int = 0
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if len(self.directories) != len(self.replicas):
            raise PartitionRecordError(
                f"{len(self.directories)} directories for {len(self.replicas)} replicas")

    @classmethod
    def from_record(cls, record: PartitionRecord) -> PartitionRegistration:
        recovery = LeaderRecoveryState.parse(record.leader_recovery_state)
        if recovery is None:
            raise PartitionRecordError(f"unknown leader recovery state {record.leader_recovery_state}")
        replicas = _ints(record.replicas)
        directories = tuple(getattr(record, "directories", ()))
        return cls(
            replicas=replicas,
            directories=_directories_or_migrating(directories, len(replicas)),
            isr=_ints(record.isr),
            removing_replicas=_ints(record.removing_replicas),
            adding_replicas=_ints(record.adding_replicas),
            leader=int(record.leader),
            leader_recovery_state=recovery,
            leader_epoch=int(record.leader_epoch),
            partition_epoch=int(record.partition_epoch),
            elr=_ints(getattr(record, "eligible_leader_replicas", None) or ()),
            last_known_elr=_ints(getattr(record, "last_known_elr", None) or ()),
        )

    def merge(self, change: PartitionChangeRecord) -> PartitionRegistration:
        """The registration after replaying `change` (which must name this partition)."""
        replicas = self.replicas if change.replicas is None else _ints(change.replicas)
        recorded_dirs = getattr(change, "directories", None)
        if recorded_dirs is not None:
            directories = _directories_or_migrating(tuple(recorded_dirs), len(replicas))
        else:
            directories = self.directories_for(replicas)
        if change.leader == NO_LEADER_CHANGE:
            leader, leader_epoch = self.leader, self.leader_epoch
        else:
            leader, leader_epoch = int(change.leader), self.leader_epoch + 1
        if change.leader_recovery_state == -1:
            recovery = self.leader_recovery_state
        else:
            parsed = LeaderRecoveryState.parse(change.leader_recovery_state)
            if parsed is None:
                raise PartitionRecordError(f"unknown leader recovery state {change.leader_recovery_state}")
            recovery = parsed
        elr = getattr(change, "eligible_leader_replicas", None)
        last_known_elr = getattr(change, "last_known_elr", None)
        return PartitionRegistration(
            replicas=replicas,
            directories=directories,
            isr=self.isr if change.isr is None else _ints(change.isr),
            removing_replicas=_unless_none(change.removing_replicas, self.removing_replicas),
            adding_replicas=_unless_none(change.adding_replicas, self.adding_replicas),
            leader=leader,
            leader_recovery_state=recovery,
            leader_epoch=leader_epoch,
            partition_epoch=self.partition_epoch + 1,
            elr=_unless_none(elr, self.elr),
            last_known_elr=_unless_none(last_known_elr, self.last_known_elr),
        )

    def directories_for(self, replicas: tuple[int, ...]) -> tuple[uuid.UUID, ...]:
        """Directories after a replica change without explicit directories: a replica that stays keeps its
        directory, a new one is unassigned until its broker reports where it lives."""
        if replicas == self.replicas:
            return self.directories
        known = dict(zip(self.replicas, self.directories))
        return tuple(known.get(r, DIRECTORY_UNASSIGNED) for r in replicas)

    def to_record(self, topic_id: uuid.UUID, partition_id: int) -> PartitionRecordV2:
        return PartitionRecordV2(
            partition_id=i32(partition_id),
            topic_id=topic_id,
            replicas=_broker_ids(self.replicas),
            isr=tuple(i32(b) for b in self.isr),
            removing_replicas=_broker_ids(self.removing_replicas),
            adding_replicas=_broker_ids(self.adding_replicas),
            leader=BrokerId(self.leader),
            leader_recovery_state=i8(int(self.leader_recovery_state)),
            leader_epoch=i32(self.leader_epoch),
            partition_epoch=i32(self.partition_epoch),
            directories=self.directories,
            eligible_leader_replicas=_broker_ids(self.elr) if self.elr else None,
            last_known_elr=_broker_ids(self.last_known_elr) if self.last_known_elr else None,
        )

    @property
    def has_leader(self) -> bool:
        return self.leader >= 0

    @property
    def preferred_replica(self) -> int:
        return self.replicas[0] if self.replicas else NO_LEADER

    @property
    def has_preferred_leader(self) -> bool:
        return self.has_leader and self.leader == self.preferred_replica

    @property
    def is_reassigning(self) -> bool:
        return bool(self.removing_replicas or self.adding_replicas)


def new_partition(replicas: Sequence[int], isr: Sequence[int], leader: int) -> PartitionRegistration:
    """A partition as CreateTopics makes it: epochs 0, directories not yet assigned, recovered."""
    return PartitionRegistration(
        replicas=tuple(replicas),
        directories=(DIRECTORY_UNASSIGNED,) * len(replicas),
        isr=tuple(isr),
        leader=leader,
    )


def _ints(values: Sequence[int]) -> tuple[int, ...]:
    return tuple(int(v) for v in values)


def _unless_none(values: Sequence[int] | None, current: tuple[int, ...]) -> tuple[int, ...]:
    return current if values is None else _ints(values)


def _broker_ids(values: Sequence[int]) -> tuple[BrokerId, ...]:
    return tuple(BrokerId(v) for v in values)


def _directories_or_migrating(directories: tuple[uuid.UUID, ...], count: int) -> tuple[uuid.UUID, ...]:
    # Records written before directory assignment (and v0 records) carry none: every replica is migrating.
    if not directories:
        return (DIRECTORY_MIGRATING,) * count
    return tuple(DIRECTORY_UNASSIGNED if d is None else d for d in directories)
