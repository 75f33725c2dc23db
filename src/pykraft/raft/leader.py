"""LeaderState: replica progress, the high watermark, check-quorum and BeginQuorumEpoch heartbeats."""

from __future__ import annotations

from dataclasses import dataclass, field

from pykraft.raft.accumulator import BatchAccumulator
from pykraft.raft.config import CAUGHT_UP_WINDOW_MS, OBSERVER_SESSION_TIMEOUT_MS, QuorumConfig
from pykraft.raft.election import ElectionState
from pykraft.raft.states import Role
from pykraft.raft.voter_set import Endpoints, ReplicaKey, VoterSet, majority_of


@dataclass(slots=True)
class ReplicaProgress:
    key: ReplicaKey
    end_offset: int | None = None
    last_fetch_ms: int = -1
    last_fetch_leader_leo: int = -1
    last_caught_up_ms: int = -1
    listeners: Endpoints = Endpoints()
    told_high_watermark: int | None = None  # an observer's: that of the last Fetch answer it was sent

    def record_fetch(self, fetch_offset: int, leader_leo: int, now_ms: int) -> None:
        # Caught up: reached the leader's LEO now, or (as of the previous fetch) the LEO the leader had then.
        if fetch_offset >= leader_leo:
            self.last_caught_up_ms = max(self.last_caught_up_ms, now_ms)
        elif self.last_fetch_leader_leo > 0 and fetch_offset >= self.last_fetch_leader_leo:
            self.last_caught_up_ms = max(self.last_caught_up_ms, self.last_fetch_ms)
        self.end_offset = fetch_offset
        self.last_fetch_ms = max(self.last_fetch_ms, now_ms)
        self.last_fetch_leader_leo = leader_leo


@dataclass(slots=True)
class LeaderState:
    epoch: int
    local_key: ReplicaKey
    epoch_start_offset: int
    voters: VoterSet
    accumulator: BatchAccumulator
    granting_voters: frozenset[ReplicaKey]
    check_quorum_deadline_ms: int
    begin_quorum_next_ms: int
    config: QuorumConfig
    voter_progress: dict[int, ReplicaProgress] = field(default_factory=dict)
    observer_progress: dict[ReplicaKey, ReplicaProgress] = field(default_factory=dict)
    fetched_voters: set[int] = field(default_factory=set)
    acked_begin_epoch: set[int] = field(default_factory=set)
    high_watermark: int | None = None
    role: Role = field(default=Role.LEADER, init=False)

    def __post_init__(self) -> None:
        self.update_voters(self.voters)

    def election_state(self) -> ElectionState:
        return ElectionState.with_elected_leader(self.epoch, self.local_key.id, self.local_key)

    @property
    def leader_id(self) -> int:
        return self.local_key.id

    # ---- EpochState (states.py) ---------------------------------------------------------------------------
    @property
    def voted_key(self) -> ReplicaKey:
        return self.local_key  # it voted for itself as a candidate

    @property
    def leader_endpoints(self) -> Endpoints | None:
        return None  # the local endpoints: the core answers with its own

    def can_grant_vote(self, candidate: ReplicaKey, is_log_up_to_date: bool, is_pre_vote: bool) -> bool:
        return False

    def deadlines(self) -> tuple[int | None, ...]:
        return (self.check_quorum_deadline_ms, self.begin_quorum_next_ms)

    # ---- replica bookkeeping -----------------------------------------------------------------------------
    def update_voters(self, voters: VoterSet) -> None:
        """Re-partition replicas when the last (possibly uncommitted) voter set changes."""
        self.voters = voters
        everyone = {p.key.id: p for p in [*self.voter_progress.values(), *self.observer_progress.values()]}
        self.voter_progress = {}
        for node in voters.voters.values():
            progress = everyone.pop(node.key.id, None) or ReplicaProgress(node.key)
            progress.key = node.key
            progress.listeners = node.endpoints
            self.voter_progress[node.key.id] = progress
        self.observer_progress = {p.key: p for p in everyone.values()}
        self.fetched_voters &= set(voters.ids())

    def is_local_voter(self) -> bool:
        return self.voters.is_voter(self.local_key)

    def progress_of(self, key: ReplicaKey) -> ReplicaProgress:
        node = self.voters.node(key.id)
        if node is not None and node.matches(key):
            return self.voter_progress[key.id]
        progress = self.observer_progress.get(key)
        if progress is None:
            progress = self.observer_progress[key] = ReplicaProgress(key)
        return progress

    def record_fetch(self, key: ReplicaKey, fetch_offset: int, leader_leo: int, now_ms: int) -> bool:
        """Returns whether the high watermark advanced."""
        progress = self.progress_of(key)
        progress.record_fetch(fetch_offset, leader_leo, now_ms)
        if key.id in self.voter_progress and self.voters.is_voter(key):
            self.fetched_voters.add(key.id)
            self.acked_begin_epoch.add(key.id)
            self._maybe_reset_check_quorum(now_ms)
        return self._maybe_advance_high_watermark()

    def record_fetch_snapshot(self, key: ReplicaKey, now_ms: int) -> None:
        """A FetchSnapshot shows the voter follows this leader (check-quorum, heartbeat) but says nothing about
        its log end, so replica progress and the high watermark are left alone."""
        if key.id in self.voter_progress and self.voters.is_voter(key):
            self.fetched_voters.add(key.id)
            self.acked_begin_epoch.add(key.id)
            self._maybe_reset_check_quorum(now_ms)

    def record_local_end(self, flushed_end_offset: int, now_ms: int) -> bool:
        progress = self.voter_progress.get(self.local_key.id)
        if progress is None:
            progress = self.observer_progress.setdefault(self.local_key, ReplicaProgress(self.local_key))
        progress.end_offset = flushed_end_offset
        progress.last_fetch_ms = progress.last_caught_up_ms = now_ms
        return self._maybe_advance_high_watermark()

    def is_replica_caught_up(self, key: ReplicaKey, now_ms: int) -> bool:
        progress = self.voter_progress.get(key.id) or self.observer_progress.get(key)
        return (progress is not None and progress.last_caught_up_ms > 0
                and now_ms - progress.last_fetch_ms <= CAUGHT_UP_WINDOW_MS)

    def caught_up_within(self, key: ReplicaKey, now_ms: int, window_ms: int) -> bool:
        """Stricter than `is_replica_caught_up`, for a reassignment: the replica was at the leader's log end within
        the last `window_ms` (a paused or lagging replica stops qualifying once the window passes)."""
        progress = self.voter_progress.get(key.id) if self.voters.is_voter(key) else self.observer_progress.get(key)
        return progress is not None and progress.last_caught_up_ms > 0 and now_ms - progress.last_caught_up_ms <= window_ms

    def newest_observer(self, node_id: int) -> ReplicaProgress | None:
        """The progress of the observer `node_id` that fetched last (a replaced disk leaves an older key behind)."""
        found = [p for p in self.observer_progress.values() if p.key.id == node_id and p.key != self.local_key]
        return max(found, key=lambda p: p.last_fetch_ms) if found else None

    def live_observers(self, now_ms: int) -> list[ReplicaProgress]:
        return [p for p in self.observer_progress.values()
                if p.key != self.local_key and now_ms - p.last_fetch_ms < OBSERVER_SESSION_TIMEOUT_MS]

    # ---- high watermark ----------------------------------------------------------------------------------
    def _maybe_advance_high_watermark(self) -> bool:
        # The leader counts itself only while it is a voter (a removed leader keeps serving but does not vote).
        offsets = sorted((p.end_offset if p.end_offset is not None else -1 for p in self.voter_progress.values()),
                         reverse=True)
        if not offsets:
            return False
        candidate = offsets[majority_of(len(offsets)) - 1]  # the highest offset a majority has reached
        # Only once a record of this epoch commits, and never backwards (a voter-set change can lower it).
        if candidate > self.epoch_start_offset and (self.high_watermark is None or candidate > self.high_watermark):
            self.high_watermark = candidate
            return True
        return False

    # ---- check-quorum ------------------------------------------------------------------------------------
    def _maybe_reset_check_quorum(self, now_ms: int) -> None:
        needed = self.voters.majority() - (1 if self.is_local_voter() else 0)
        if len(self.fetched_voters - {self.local_key.id}) >= needed:
            self.fetched_voters.clear()
            self.check_quorum_deadline_ms = now_ms + self.config.check_quorum_timeout_ms

    def poll_check_quorum(self, now_ms: int) -> bool:
        """Whether the leader must resign: no majority of the voters fetched within the check-quorum timeout.

        A sole voter is its own majority: it never resigns, and its timer is reset at every poll, as Kafka's
        LeaderState resets it. Only skipping the check is not enough: the passed deadline would stay the core's
        next wake-up ("now") forever and a runtime would poll in a busy loop (found by the simulator, seed 23 of
        initial_election). The reset also gives a voter added later a full period to fetch before the check bites.
        """
        if self.voters.is_only_voter(self.local_key):
            self.fetched_voters.clear()
            self.check_quorum_deadline_ms = now_ms + self.config.check_quorum_timeout_ms
            return False
        return now_ms >= self.check_quorum_deadline_ms

    def unacked_voters(self) -> list[int]:
        return sorted(set(self.voters.ids()) - self.acked_begin_epoch - {self.local_key.id})

    def preferred_successors(self) -> tuple[ReplicaKey, ...]:
        """Voters by descending fetch offset, for EndQuorumEpoch."""
        others = [p for p in self.voter_progress.values() if p.key.id != self.local_key.id]
        others.sort(key=lambda p: (-(p.end_offset if p.end_offset is not None else -1), p.key.id))
        return tuple(p.key for p in others)
