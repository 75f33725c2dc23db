"""The leader's state of one partition: follower fetch progress, acks=all waiters, produce admission, and the
DeleteRecords waiters released by the low watermark.

Pure: times are passed in. The node's partition host (node/hosts/partitions.py) calls it on every follower Fetch and
append, hands `progress()` to the ISR manager (KIP-497 decides ISR changes and the high watermark from the
maximal ISR there) and releases the acks=all waiters once the high watermark passes their batch.

Follower progress follows Kafka's `Replica.updateFetchState`: a Fetch at offset >= the leader's log end offset
means caught up now; a Fetch at offset >= the leader's log end offset at the follower's previous Fetch means it
was caught up at that previous Fetch. A follower whose Fetch carries another leader epoch's view is not counted.

The low watermark (Kafka's `Partition.lowWatermarkIfLeader`) is the smallest log start offset among the leader and
every other replica whose broker is alive, as each follower's last Fetch reported it (-1 until it fetched in this
leadership, so a DeleteRecords answer waits for it): a DeleteRecords answer waits until it reaches the new start.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from pykraft.protocol.errors import ErrorCode

from .isr_rules import FollowerProgress, LeaderProgress
from pykraft.raft.purgatory import ThresholdPurgatory

T = TypeVar("T")
DEFAULT_MIN_INSYNC_REPLICAS = 1  # min.insync.replicas


@dataclass(slots=True)
class _Follower:
    log_end_offset: int = -1  # unknown until its first Fetch in this leadership
    last_caught_up_ms: int = -1
    last_fetch_leader_leo: int = -1
    last_fetch_ms: int = -1
    broker_epoch: int = -1
    log_start_offset: int = -1  # as its last Fetch reported it (Kafka's UNKNOWN_OFFSET until then)


@dataclass(slots=True)
class LeaderState(Generic[T]):
    """One leadership (a leader epoch) of one partition on this broker."""

    leader_epoch: int
    epoch_start_offset: int
    replicas: tuple[int, ...]
    leader_id: int
    _followers: dict[int, _Follower] = field(default_factory=dict)
    # acks=all: threshold = the batch's last offset + 1, against the high watermark
    _waiters: ThresholdPurgatory[T] = field(default_factory=ThresholdPurgatory)
    # DeleteRecords: threshold = the new log start, against the low watermark
    _deletions: ThresholdPurgatory[T] = field(default_factory=ThresholdPurgatory)

    def on_follower_fetch(self, replica_id: int, fetch_offset: int, broker_epoch: int, leader_leo: int,
                          now_ms: int, log_start_offset: int = -1) -> bool:
        """Record a follower's Fetch; False for a broker that is not a follower of this partition."""
        if replica_id == self.leader_id or replica_id not in self.replicas:
            return False
        f = self._followers.setdefault(replica_id, _Follower())
        if fetch_offset >= leader_leo:
            f.last_caught_up_ms = max(f.last_caught_up_ms, now_ms)
        elif f.last_fetch_leader_leo >= 0 and fetch_offset >= f.last_fetch_leader_leo:
            f.last_caught_up_ms = max(f.last_caught_up_ms, f.last_fetch_ms)
        f.last_fetch_leader_leo = leader_leo
        f.last_fetch_ms = now_ms
        f.log_end_offset = fetch_offset
        f.broker_epoch = broker_epoch
        f.log_start_offset = log_start_offset
        return True

    def reassigned(self, replicas: tuple[int, ...]) -> None:
        """The replica set changed within this leader epoch (a reassignment added replicas, or one completed
        without a new epoch): new followers are accepted from their first Fetch, removed ones are forgotten."""
        self.replicas = tuple(replicas)
        for replica_id in [r for r in self._followers if r not in self.replicas]:
            del self._followers[replica_id]

    def follower_log_end_offset(self, replica_id: int) -> int:
        f = self._followers.get(replica_id)
        return -1 if f is None else f.log_end_offset

    def progress(self, leader_leo: int) -> LeaderProgress:
        """The ISR manager's input; followers that have not fetched in this leadership are left out (the ISR
        manager then holds the high watermark back for an ISR member, and times it out as lagging)."""
        followers = tuple(FollowerProgress(r, f.log_end_offset, max(f.last_caught_up_ms, 0), f.broker_epoch)
                          for r, f in sorted(self._followers.items()) if f.log_end_offset >= 0)
        return LeaderProgress(self.leader_epoch, leader_leo, self.epoch_start_offset, followers)

    def follower_log_start_offset(self, replica_id: int) -> int:
        f = self._followers.get(replica_id)
        return -1 if f is None else f.log_start_offset

    def low_watermark(self, leader_log_start: int, alive: Callable[[int], bool]) -> int:
        """The smallest log start among this leader and the other replicas on alive brokers."""
        low = leader_log_start
        for replica_id in self.replicas:
            if replica_id != self.leader_id and alive(replica_id):
                low = min(low, self.follower_log_start_offset(replica_id))
        return low

    # ---- DeleteRecords -----------------------------------------------------------------------------------------
    def add_deletion_waiter(self, new_log_start: int, token: T) -> None:
        self._deletions.add(new_log_start, token, self.leader_epoch)

    def release_deletions(self, low_watermark: int) -> list[T]:
        """The DeleteRecords waiters whose new log start every alive replica has reached."""
        return self._deletions.complete(low_watermark)

    def forget_deletions(self, gone: Callable[[T], bool]) -> None:
        """Drop the waiters whose request stopped waiting (timed out): nothing will read their answer."""
        self._deletions.forget(gone)

    def abandon_deletions(self) -> list[T]:
        """The leadership ended: the waiting DeleteRecords answer NOT_LEADER_OR_FOLLOWER (Kafka's
        DelayedDeleteRecords finds the leader gone)."""
        return self._deletions.drain()

    # ---- acks=all ----------------------------------------------------------------------------------------------
    def add_waiter(self, required_offset: int, token: T) -> None:
        self._waiters.add(required_offset, token, self.leader_epoch)

    def release(self, high_watermark: int, isr_size: int, min_insync: int) -> list[tuple[T, ErrorCode]]:
        """Waiters the high watermark now covers, with their answer: NONE, or NOT_ENOUGH_REPLICAS_AFTER_APPEND
        when the ISR shrank below min.insync.replicas meanwhile (Kafka's rule at that moment)."""
        done = self._waiters.complete(high_watermark)
        error = ErrorCode.NONE if isr_size >= min_insync else ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        return [(token, error) for token in done]

    def abandon(self) -> list[T]:
        """The leadership ended: every waiter gets NOT_LEADER_OR_FOLLOWER (the producer retries elsewhere;
        idempotence makes the retry safe)."""
        return self._waiters.drain()

    @property
    def waiting(self) -> int:
        return len(self._waiters)


def admit_produce(acks: int, isr_size: int, min_insync: int) -> ErrorCode:
    """Before appending: acks must be -1, 0 or 1; acks=all needs the ISR at min.insync.replicas."""
    if acks not in (-1, 0, 1):
        return ErrorCode.INVALID_REQUIRED_ACKS
    if acks == -1 and isr_size < min_insync:
        return ErrorCode.NOT_ENOUGH_REPLICAS
    return ErrorCode.NONE
