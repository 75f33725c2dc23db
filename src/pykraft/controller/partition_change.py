"""The smallest PartitionChangeRecord that moves a partition to a target state (Kafka's PartitionChangeBuilder).

Rules (reference §8.1, §8.4; KIP-841):
- only fields that differ from the current registration are set; nothing differs -> no record at all;
- the leader field is set when the elected leader differs from the current one (replay bumps the leader epoch),
  or, with the leader unchanged, when replicas are removed by a completed reassignment (so followers that lost
  their replica see a new leader epoch). An ISR shrink alone does not bump the leader epoch (metadata.version
  3.6+ behaviour);
- every record bumps the partition epoch on replay;
- a leader must be acceptable (KIP-841 invariant 2: registered, unfenced, not in controlled shutdown) and, for a
  clean election, in the target ISR;
- an empty target ISR is never written: when the last ISR member is removed (fenced, shutting down, unregistered)
  it stays the sole ISR member and, being unacceptable, stops leading (leader -1). Kafka does the same with
  eligible leader replicas disabled, so the one broker known to hold every committed record is still recorded
  and becomes leader again, cleanly, when it returns;
- UNCLEAN may pick an acceptable replica outside the ISR: the ISR becomes [leader] and the recovery state
  RECOVERING until the new leader reports RECOVERED;
- eligible leader replicas (KIP-966) are not enabled here: a registration carrying them has them cleared.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from kio.schema.types import BrokerId
from kio.static.primitive import i8, i32

from pykraft.records.metadata.schema.partition_change_record import PartitionChangeRecordV2

from .partitions import NO_LEADER, LeaderRecoveryState, PartitionRegistration


class Election(enum.Enum):
    PREFERRED = "preferred"  # the first replica if it can lead, else keep the partition online
    ONLINE = "online"  # keep the current leader if it can lead, else the first replica in the ISR that can
    UNCLEAN = "unclean"  # as ONLINE, then any acceptable replica even outside the ISR (possible data loss)


@dataclass(frozen=True, slots=True)
class ElectionOutcome:
    leader: int
    unclean: bool


@dataclass(frozen=True, slots=True)
class _Targets:
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    removing: tuple[int, ...]
    adding: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class PartitionChangeBuilder:
    """What a caller wants for one partition; `build()` turns it into the minimal record (or None).

    Targets left at None keep the current value. `is_acceptable_leader` is usually `brokers.is_active`, possibly
    with a broker excluded (being fenced) or included (being unfenced)."""

    partition: PartitionRegistration
    topic_id: uuid.UUID
    partition_id: int
    is_acceptable_leader: Callable[[int], bool]
    election: Election = Election.ONLINE
    target_isr: tuple[int, ...] | None = None
    target_replicas: tuple[int, ...] | None = None
    target_removing: tuple[int, ...] | None = None
    target_adding: tuple[int, ...] | None = None
    target_recovery: LeaderRecoveryState | None = None

    def with_isr(self, isr: tuple[int, ...]) -> PartitionChangeBuilder:
        return replace(self, target_isr=tuple(isr))

    def with_election(self, election: Election) -> PartitionChangeBuilder:
        return replace(self, election=election)

    def build(self) -> PartitionChangeRecordV2 | None:
        current = self.partition
        targets = _complete_reassignment(self._targets())
        outcome = self.elect(targets)
        fields: dict[str, Any] = {}
        if outcome.leader != current.leader:
            fields["leader"] = BrokerId(outcome.leader)
            if outcome.unclean:
                fields["isr"] = (BrokerId(outcome.leader),)
                if current.leader_recovery_state != LeaderRecoveryState.RECOVERING:
                    fields["leader_recovery_state"] = i8(int(LeaderRecoveryState.RECOVERING))
        elif not set(current.replicas) <= set(targets.replicas):
            # Replicas left the partition: re-stating the same leader bumps the leader epoch on replay.
            fields["leader"] = BrokerId(current.leader)
        if "isr" not in fields and targets.isr and targets.isr != current.isr:
            fields["isr"] = _broker_ids(targets.isr)
        self._assignment_changes(targets, fields)
        if (self.target_recovery is not None and "leader_recovery_state" not in fields
                and self.target_recovery != current.leader_recovery_state):
            fields["leader_recovery_state"] = i8(int(self.target_recovery))
        if current.elr:
            fields["eligible_leader_replicas"] = ()
        if current.last_known_elr:
            fields["last_known_elr"] = ()
        if not fields:
            return None
        return PartitionChangeRecordV2(partition_id=i32(self.partition_id), topic_id=self.topic_id, **fields)

    def elect(self, targets: _Targets | None = None) -> ElectionOutcome:
        """The leader this builder's election kind picks (exposed for tests and for ElectLeaders)."""
        targets = targets or _complete_reassignment(self._targets())
        isr = set(targets.isr)
        current = self.partition.leader

        def valid(replica: int) -> bool:
            return replica >= 0 and replica in isr and self.is_acceptable_leader(replica)

        if self.election is Election.PREFERRED and targets.replicas and valid(targets.replicas[0]):
            return ElectionOutcome(targets.replicas[0], unclean=False)
        if valid(current):
            return ElectionOutcome(current, unclean=False)
        for replica in targets.replicas:
            if valid(replica):
                return ElectionOutcome(replica, unclean=False)
        if self.election is Election.UNCLEAN:
            for replica in targets.replicas:
                if self.is_acceptable_leader(replica):
                    return ElectionOutcome(replica, unclean=True)
        return ElectionOutcome(NO_LEADER, unclean=False)

    def _targets(self) -> _Targets:
        p = self.partition
        return _Targets(
            isr=p.isr if self.target_isr is None else self.target_isr,
            replicas=p.replicas if self.target_replicas is None else self.target_replicas,
            removing=p.removing_replicas if self.target_removing is None else self.target_removing,
            adding=p.adding_replicas if self.target_adding is None else self.target_adding,
        )

    def _assignment_changes(self, targets: _Targets, fields: dict[str, Any]) -> None:
        current = self.partition
        if targets.replicas and targets.replicas != current.replicas:
            fields["replicas"] = _broker_ids(targets.replicas)
            fields["directories"] = current.directories_for(targets.replicas)
        if targets.removing != current.removing_replicas:
            fields["removing_replicas"] = _broker_ids(targets.removing)
        if targets.adding != current.adding_replicas:
            fields["adding_replicas"] = _broker_ids(targets.adding)


def _complete_reassignment(targets: _Targets) -> _Targets:
    """A reassignment completes once the ISR, without the removing replicas, holds every target replica (Kafka's
    PartitionReassignmentReplicas.maybeCompleteReassignment): the removing replicas then leave both the replica
    list and the ISR, and adding/removing are cleared. It never completes into an empty ISR or replica list, and
    a target replica that fell out of the ISR (not only an adding one) holds it back."""
    if not targets.removing and not targets.adding:
        return targets
    removing = set(targets.removing)
    isr = tuple(r for r in targets.isr if r not in removing)
    replicas = tuple(r for r in targets.replicas if r not in removing)
    if not isr or not replicas or not set(replicas) <= set(isr):
        return targets
    return _Targets(isr=isr, replicas=replicas, removing=(), adding=())


def _broker_ids(values: tuple[int, ...]) -> tuple[BrokerId, ...]:
    return tuple(BrokerId(v) for v in values)
