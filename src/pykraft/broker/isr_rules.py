"""The KIP-497 ISR rules for one partition a broker leads, as pure functions over explicit inputs.

Inputs the data plane provides (it will implement them later; tests give them directly):
`LeaderProgress` = the leader's own log end offset, the offset its leader epoch started at, and one
`FollowerProgress` per follower (its log end offset, the last time it had caught up to the leader's log end, and
the broker epoch its Fetch carried, -1 when unknown).

- shrink: an ISR follower is out of sync when it is not at the leader's log end offset and has not caught up
  for longer than replica.lag.time.max.ms (Kafka's `Partition.getOutOfSyncReplicas`);
- expand: a follower outside the ISR may join once its log end offset reached the high watermark and the start
  of the current leader epoch, and the metadata cache shows it eligible (KIP-841 on the broker side);
- high watermark: the minimum log end offset over the MAXIMAL ISR = committed ISR union the pending proposal
  (KIP-497): during an expansion the larger set (the newcomer may already count at the controller), during a
  shrink the old set (the removal is not committed yet). Any member without known progress holds it back.

`IsrManager` (isr_manager.py) owns the state and the AlterPartition traffic; this module only decides.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

from pykraft.controller.partitions import LeaderRecoveryState, PartitionRegistration

DEFAULT_REPLICA_LAG_TIME_MAX_MS = 30_000  # replica.lag.time.max.ms


@dataclass(frozen=True, slots=True)
class FollowerProgress:
    replica_id: int
    log_end_offset: int
    last_caught_up_ms: int
    broker_epoch: int = -1  # from the follower's Fetch; -1 when it did not say


@dataclass(frozen=True, slots=True)
class LeaderProgress:
    leader_epoch: int  # the epoch this was measured in: progress of an older leadership is ignored
    log_end_offset: int
    leader_epoch_start_offset: int
    followers: tuple[FollowerProgress, ...] = ()

    def follower(self, replica_id: int) -> FollowerProgress | None:
        for f in self.followers:
            if f.replica_id == replica_id:
                return f
        return None


@dataclass(frozen=True, slots=True)
class Committed:
    """A partition as committed at the controller, as far as this leader knows (metadata, or a newer answer)."""

    leader: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    leader_epoch: int
    partition_epoch: int
    recovery: LeaderRecoveryState

    @classmethod
    def of(cls, p: PartitionRegistration) -> Committed:
        return cls(p.leader, p.isr, p.replicas, p.leader_epoch, p.partition_epoch, p.leader_recovery_state)

    def is_older_than(self, other: Committed) -> bool:
        return (other.leader_epoch > self.leader_epoch or other.partition_epoch > self.partition_epoch)


class ProposalKind(enum.Enum):
    SHRINK = "shrink"
    EXPAND = "expand"
    # After an unclean election (unclean.leader.election.enable) the partition is RECOVERING with the new leader
    # alone in its ISR: the leader reports it RECOVERED (Kafka's Partition.makeLeader), then followers may join.
    RECOVER = "recover"


class ProposalState(enum.Enum):
    QUEUED = "queued"  # waiting for the next AlterPartition request (or for its retry backoff)
    IN_FLIGHT = "in_flight"
    # The controller said our view is stale (FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION, ...): never re-sent;
    # it still counts for the high watermark, on the safe side, until metadata newer than its base arrives.
    AWAITING_METADATA = "awaiting_metadata"


@dataclass(frozen=True, slots=True)
class Proposal:
    kind: ProposalKind
    isr: tuple[int, ...]
    member_epochs: tuple[tuple[int, int], ...]  # (broker id, broker epoch or -1) for NewIsrWithEpochs
    base: Committed  # what it was computed against (its epochs go in the request)
    state: ProposalState = ProposalState.QUEUED
    not_before_ms: int = 0
    # The cache's registration object of each added member when proposed: a refusal holds the member back only
    # while the cache still shows that very object (any replayed change, even one undone since, lets it retry).
    seen: tuple[tuple[int, object], ...] = ()

    @property
    def added(self) -> tuple[int, ...]:
        return tuple(b for b in self.isr if b not in self.base.isr)


def _lagging_since(committed: Committed, progress: LeaderProgress | None,
                   leader_since_ms: int) -> list[tuple[int, int]]:
    """(replica, last caught-up time) of the ISR followers not at the leader's log end. A follower we have no
    progress for counts as caught up when this leadership started (Kafka resets followers' state on becoming
    leader)."""
    lagging = []
    for replica in committed.isr:
        if replica == committed.leader:
            continue
        f = None if progress is None else progress.follower(replica)
        if f is not None and f.log_end_offset >= progress.log_end_offset:  # type: ignore[union-attr]
            continue
        lagging.append((replica, leader_since_ms if f is None else max(f.last_caught_up_ms, leader_since_ms)))
    return lagging


def out_of_sync(committed: Committed, progress: LeaderProgress | None, leader_since_ms: int, now_ms: int,
                lag_max_ms: int) -> tuple[int, ...]:
    """ISR followers that have not caught up for longer than the lag time."""
    return tuple(replica for replica, last in _lagging_since(committed, progress, leader_since_ms)
                 if now_ms - last > lag_max_ms)


def next_shrink_check_ms(committed: Committed, progress: LeaderProgress | None, leader_since_ms: int,
                         lag_max_ms: int) -> int | None:
    """The earliest time a follower now in the ISR would be out of sync if nothing changes."""
    times = [last + lag_max_ms + 1 for _, last in _lagging_since(committed, progress, leader_since_ms)]
    return min(times) if times else None


def can_join(committed: Committed, progress: LeaderProgress, high_watermark: int | None,
             eligible: Callable[[int, int], bool]) -> tuple[int, ...]:
    """Followers outside the ISR that may be proposed now (Kafka's `isFollowerInSync` + `isReplicaIsrEligible`).
    Nobody joins a partition recovering from an unclean election: its ISR must stay the leader alone."""
    if committed.recovery is not LeaderRecoveryState.RECOVERED or high_watermark is None:
        return ()
    joining = []
    for f in progress.followers:
        if f.replica_id in committed.isr or f.replica_id not in committed.replicas:
            continue
        if f.log_end_offset < high_watermark or f.log_end_offset < progress.leader_epoch_start_offset:
            continue
        if eligible(f.replica_id, f.broker_epoch):
            joining.append(f.replica_id)
    return tuple(joining)


def maximal_isr(committed: Committed, proposal: Proposal | None) -> tuple[int, ...]:
    if proposal is None:
        return committed.isr
    return committed.isr + tuple(b for b in proposal.isr if b not in committed.isr)


def isr_high_watermark(isr: tuple[int, ...], leader: int, progress: LeaderProgress | None) -> int | None:
    """Minimum log end offset over `isr` (the leader counts with its own); None when a member is unknown."""
    if progress is None:
        return None
    offsets = [progress.log_end_offset]
    for replica in isr:
        if replica == leader:
            continue
        f = progress.follower(replica)
        if f is None:
            return None
        offsets.append(f.log_end_offset)
    return min(offsets)


def member_epochs(isr: tuple[int, ...], leader: int, leader_epoch: int | None,
                  progress: LeaderProgress | None) -> tuple[tuple[int, int], ...]:
    """Broker epochs for NewIsrWithEpochs: ours from the metadata cache, a follower's from its last Fetch."""
    epochs = []
    for replica in isr:
        if replica == leader:
            epochs.append((replica, -1 if leader_epoch is None else leader_epoch))
            continue
        f = None if progress is None else progress.follower(replica)
        epochs.append((replica, -1 if f is None else f.broker_epoch))
    return tuple(epochs)

