"""QuorumState: restart rules, the transition table and the per-transition rules (Kafka's QuorumStateTest, §5.3).

Each test drives a `QuorumState` directly: the voter set and kraft.version are plain callables, emitted effects
are collected, and time is an explicit `now`.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field

import pytest

from pykraft.raft.accumulator import BatchAccumulator
from pykraft.raft.config import LocalReplica, QuorumConfig
from pykraft.raft.effects import PersistElection
from pykraft.raft.election import ElectionState
from pykraft.raft.leader import LeaderState
from pykraft.raft.quorum_state import IllegalTransition, QuorumState
from pykraft.raft.states import NEVER, Role
from pykraft.raft.voter_set import Endpoint, Endpoints, ReplicaKey, VoterSet

from raft_context import endpoints, voter_set

T = 5000  # election timeout
FETCH_TIMEOUT = 10_000
CONFIG = QuorumConfig(election_timeout_ms=T, fetch_timeout_ms=FETCH_TIMEOUT)


@dataclass
class Harness:
    qs: QuorumState
    voters: VoterSet
    effects: list = field(default_factory=list)
    now: int = 0

    @property
    def role(self) -> Role:
        return self.qs.role

    def persisted(self) -> ElectionState | None:
        stored = [e.state for e in self.effects if isinstance(e, PersistElection)]
        return stored[-1] if stored else None

    def persist_count(self) -> int:
        return sum(1 for e in self.effects if isinstance(e, PersistElection))

    def elect(self, granting: tuple[int, ...] = ()) -> None:
        """Prospective -> Candidate -> Leader with votes from `granting`."""
        if self.role is not Role.CANDIDATE:
            if self.role is not Role.PROSPECTIVE:
                self.qs.to_prospective(self.now)
            self.qs.to_candidate(self.now)
        for voter in granting:
            self.qs.state.election.record(voter, True)
        self.qs.to_leader(make_leader(self, epoch_start=0))

    def refused(self, action) -> None:
        """`action` must be refused without changing the state or emitting anything."""
        before, emitted = self.qs.state, len(self.effects)
        with pytest.raises(IllegalTransition):
            action()
        assert self.qs.state is before and len(self.effects) == emitted


def make_leader(h: Harness, epoch_start: int) -> LeaderState:
    candidate = h.qs.state
    key = h.qs.local.key
    assert key is not None
    return LeaderState(
        epoch=candidate.epoch, local_key=key, epoch_start_offset=epoch_start, voters=h.voters,
        accumulator=BatchAccumulator(candidate.epoch, epoch_start, 0, 1 << 20),
        granting_voters=candidate.election.granted(), check_quorum_deadline_ms=h.now + 15_000,
        begin_quorum_next_ms=h.now, config=CONFIG,
    )


def harness(local_id: int | None = 0, voters: tuple[int, ...] = (0, 1, 2), stored: ElectionState | None = None,
            log_epoch: int = 0, voter_set_: VoterSet | None = None) -> Harness:
    vs = voter_set_ if voter_set_ is not None else voter_set(list(voters))
    local = LocalReplica(node_id=local_id, endpoints=endpoints(local_id if local_id is not None else 99),
                         static_voters=vs)
    effects: list = []
    qs = QuorumState(local, CONFIG, random.Random(7), lambda: vs, lambda: 1, effects.append)
    qs.initialize(stored, log_epoch, 0)
    return Harness(qs, vs, effects)


def in_election_window(deadline: int, now: int = 0) -> bool:
    return T <= deadline - now < 2 * T


def more_endpoints(node_id: int) -> Endpoints:
    return Endpoints.of([*endpoints(node_id).items, Endpoint("OTHER", "localhost", 8990 + node_id)])


# ---- initialization (restart rules) ------------------------------------------------------------------------
def test_initialize_primordial_epoch_then_campaign_to_epoch_one() -> None:
    h = harness(0, (0,))
    assert h.role is Role.UNATTACHED and h.qs.epoch == 0
    h.qs.to_prospective(0)
    h.qs.to_candidate(0)
    assert h.role is Role.CANDIDATE and h.qs.epoch == 1 and h.qs.state.election.is_granted()


def test_initialize_as_unattached_with_election_timer_in_t_to_2t() -> None:
    h = harness(stored=ElectionState.with_unknown_leader(5))
    assert h.role is Role.UNATTACHED and h.qs.epoch == 5
    assert h.qs.state.voted_key is None and h.qs.leader_id() is None
    assert in_election_window(h.qs.state.election_deadline_ms)


def test_initialize_as_follower_of_stored_leader_with_fetch_timer() -> None:
    h = harness(stored=ElectionState.with_elected_leader(5, 1))
    assert h.role is Role.FOLLOWER and h.qs.epoch == 5 and h.qs.leader_id() == 1
    assert h.qs.state.fetch_deadline_ms == FETCH_TIMEOUT
    assert h.qs.state.leader_endpoints == endpoints(1)


def test_initialize_keeps_both_stored_leader_and_vote() -> None:
    h = harness(stored=ElectionState.with_elected_leader(5, 1, ReplicaKey(2)))
    assert h.role is Role.FOLLOWER and h.qs.state.voted_key == ReplicaKey(2)
    assert h.persisted() == ElectionState.with_elected_leader(5, 1, ReplicaKey(2))


def test_initialize_as_unattached_with_leader_when_leader_endpoints_missing() -> None:
    h = harness(stored=ElectionState.with_elected_leader(5, 3, ReplicaKey(3)))  # 3 is not in the voter set
    assert h.role is Role.UNATTACHED and h.qs.epoch == 5
    assert h.qs.state.leader_id == 3 and h.qs.state.voted_key == ReplicaKey(3)
    assert h.persisted() == ElectionState.with_elected_leader(5, 3, ReplicaKey(3))


def test_initialize_as_voted_unattached_when_stored_vote_for_another() -> None:
    h = harness(stored=ElectionState.with_voted_candidate(5, ReplicaKey(1)))
    assert h.role is Role.UNATTACHED and h.qs.state.voted_key == ReplicaKey(1)
    assert in_election_window(h.qs.state.election_deadline_ms)


def test_initialize_stored_vote_for_self_restarts_as_candidate_with_only_own_vote() -> None:
    h = harness(stored=ElectionState.with_voted_candidate(5, ReplicaKey(0)))
    state = h.qs.state
    assert h.role is Role.CANDIDATE and h.qs.epoch == 5
    assert state.election.granted() == {ReplicaKey(0)}
    assert state.election.unrecorded() == [ReplicaKey(1), ReplicaKey(2)]
    assert state.election_state() == ElectionState.with_voted_candidate(5, ReplicaKey(0))
    assert in_election_window(state.election_deadline_ms)


def test_initialize_stored_leader_self_restarts_resigned_in_same_epoch() -> None:
    # Unflushed data of that epoch may be lost: leading or voting again in it could reuse (offset, epoch) pairs.
    h = harness(stored=ElectionState.with_elected_leader(5, 0))
    state = h.qs.state
    assert h.role is Role.RESIGNED and h.qs.epoch == 5 and h.qs.leader_id() is None
    assert state.election_state() == ElectionState.with_elected_leader(5, 0)
    assert state.unacked_voters == {1, 2}
    assert in_election_window(state.election_deadline_ms)
    assert h.persist_count() == 0  # Resigned is an in-memory state


def test_initialize_as_only_voter_starts_unattached() -> None:
    h = harness(0, (0,), stored=ElectionState.with_unknown_leader(0))
    assert h.role is Role.UNATTACHED and h.qs.leader_id() is None  # the client then campaigns at once


def test_initialize_with_unreadable_store_starts_unattached_at_log_epoch() -> None:
    h = harness(0, (0,), stored=None, log_epoch=2)  # the runtime hands over None when quorum-state is corrupt
    assert h.role is Role.UNATTACHED and h.qs.epoch == 2 and h.qs.leader_id() is None


def test_initialize_stored_epoch_below_log_epoch_drops_stored_vote() -> None:
    h = harness(stored=ElectionState.with_voted_candidate(3, ReplicaKey(1)), log_epoch=4)
    assert h.role is Role.UNATTACHED and h.qs.epoch == 4 and h.qs.state.voted_key is None


def test_initialize_with_empty_local_id_is_observer_that_can_only_follow() -> None:
    h = harness(None, (0, 1))
    assert h.role is Role.UNATTACHED and not h.qs.is_voter()
    assert h.qs.state.election_deadline_ms == NEVER
    h.refused(lambda: h.qs.to_prospective(0))
    h.refused(lambda: h.qs.unattached_add_vote(ReplicaKey(1), 0))
    h.refused(lambda: h.qs.to_candidate(0))
    h.qs.to_follower(1, 1, endpoints(1), 0)
    assert h.role is Role.FOLLOWER
    h.qs.to_unattached(2, 0)
    assert h.role is Role.UNATTACHED and h.qs.epoch == 2


def test_no_local_id_initialization_fails_if_election_state_has_voted_candidate() -> None:
    vs = voter_set([0, 1])
    qs = QuorumState(LocalReplica(node_id=None, static_voters=vs), CONFIG, random.Random(1), lambda: vs,
                     lambda: 1, [].append)
    with pytest.raises(ValueError):
        qs.initialize(ElectionState.with_voted_candidate(5, ReplicaKey(1)), 0, 0)


# ---- from Unattached -----------------------------------------------------------------------------------------
def test_unattached_to_unattached_higher_epoch_keeps_election_timer() -> None:
    h = harness()
    h.qs.to_unattached(5, 0)
    deadline = h.qs.state.election_deadline_ms
    h.refused(lambda: h.qs.to_unattached(5, 1000))
    h.qs.to_unattached(6, 1000)
    assert h.qs.epoch == 6 and h.qs.state.election_deadline_ms == deadline


def test_unattached_voted_same_epoch_persists_vote_and_resets_timer() -> None:
    h = harness()
    h.qs.to_unattached(5, 0)
    h.qs.unattached_add_vote(ReplicaKey(1), 3000)
    assert h.role is Role.UNATTACHED and h.qs.epoch == 5 and h.qs.state.voted_key == ReplicaKey(1)
    assert h.persisted() == ElectionState.with_voted_candidate(5, ReplicaKey(1))
    assert in_election_window(h.qs.state.election_deadline_ms, now=3000)


def test_unattached_voted_to_unattached_voted_same_epoch_is_refused() -> None:
    h = harness(log_epoch=8)
    h.qs.unattached_add_vote(ReplicaKey(1, uuid.uuid4()), 0)
    h.refused(lambda: h.qs.unattached_add_vote(ReplicaKey(2), 0))  # another candidate
    h.refused(lambda: h.qs.unattached_add_vote(ReplicaKey(1), 0))  # even the same one: one vote per epoch


def test_unattached_voted_to_unattached_higher_epoch_drops_vote_keeps_timer() -> None:
    h = harness(log_epoch=5)
    h.qs.unattached_add_vote(ReplicaKey(1), 0)
    deadline = h.qs.state.election_deadline_ms
    h.qs.to_unattached(6, 1000)
    assert h.qs.state.voted_key is None and h.qs.state.election_deadline_ms == deadline


def test_unattached_to_follower_higher_epoch() -> None:
    h = harness()
    h.qs.to_unattached(5, 0)
    h.qs.to_follower(8, 1, endpoints(1), 100)
    assert h.role is Role.FOLLOWER and h.qs.epoch == 8 and h.qs.state.leader_endpoints == endpoints(1)
    assert h.qs.state.fetch_deadline_ms == 100 + FETCH_TIMEOUT
    assert h.persisted() == ElectionState.with_elected_leader(8, 1)


def test_unattached_voted_to_follower_same_epoch_keeps_vote() -> None:
    h = harness(log_epoch=5)
    h.qs.unattached_add_vote(ReplicaKey(1), 0)
    h.qs.to_follower(5, 2, endpoints(2), 0)
    assert h.persisted() == ElectionState.with_elected_leader(5, 2, ReplicaKey(1))


def test_unattached_voted_to_prospective_keeps_persisted_vote() -> None:
    h = harness(log_epoch=5)
    h.qs.unattached_add_vote(ReplicaKey(1), 0)
    count = h.persist_count()
    h.qs.to_prospective(0)
    assert h.role is Role.PROSPECTIVE and h.qs.epoch == 5 and h.qs.state.voted_key == ReplicaKey(1)
    assert h.persist_count() == count  # Prospective is in memory only


def test_unattached_to_candidate_leader_or_resigned_is_refused() -> None:
    h = harness()
    h.refused(lambda: h.qs.to_candidate(0))
    h.refused(lambda: h.qs.to_resigned((), 0))


# ---- from Follower -------------------------------------------------------------------------------------------
def test_follower_to_follower_same_epoch_and_more_endpoints() -> None:
    h = harness()
    h.qs.to_follower(8, 2, endpoints(2), 0)
    h.qs.to_follower(8, 2, more_endpoints(2), 0)
    assert h.qs.state.leader_endpoints == more_endpoints(2)


def test_follower_to_follower_same_epoch_other_leader_or_same_endpoints_is_refused() -> None:
    h = harness()
    h.qs.to_follower(8, 2, endpoints(2), 0)
    h.refused(lambda: h.qs.to_follower(8, 1, endpoints(1), 0))  # two leaders in one epoch
    h.refused(lambda: h.qs.to_follower(8, 2, endpoints(2), 0))  # nothing new to learn
    assert h.persisted() == ElectionState.with_elected_leader(8, 2)


def test_follower_to_follower_higher_epoch() -> None:
    h = harness()
    h.qs.to_follower(8, 2, endpoints(2), 0)
    h.qs.to_follower(9, 1, endpoints(1), 0)
    assert h.persisted() == ElectionState.with_elected_leader(9, 1)


def test_follower_to_prospective_keeps_election_and_starts_timer() -> None:
    h = harness()
    h.qs.to_follower(8, 2, endpoints(2), 0)
    count = h.persist_count()
    h.qs.to_prospective(500)
    assert h.role is Role.PROSPECTIVE and h.qs.epoch == 8 and h.qs.state.leader_id == 2
    assert in_election_window(h.qs.state.election_deadline_ms, now=500)
    assert h.persist_count() == count and h.persisted() == ElectionState.with_elected_leader(8, 2)


def test_follower_to_unattached_higher_epoch_gets_fresh_timer() -> None:
    h = harness()
    h.qs.to_follower(8, 2, endpoints(2), 0)
    h.qs.to_unattached(9, 700)
    assert h.role is Role.UNATTACHED and in_election_window(h.qs.state.election_deadline_ms, now=700)


def test_follower_to_leader_candidate_or_resigned_is_refused() -> None:
    h = harness()
    h.qs.to_follower(8, 2, endpoints(2), 0)
    h.refused(lambda: h.qs.to_candidate(0))
    h.refused(lambda: h.qs.to_resigned((), 0))
    h.refused(lambda: h.qs.unattached_add_vote(ReplicaKey(1), 0))


def test_follower_to_any_state_lower_epoch_is_refused() -> None:
    h = harness()
    h.qs.to_follower(5, 1, endpoints(1), 0)
    h.refused(lambda: h.qs.to_unattached(4, 0))
    h.refused(lambda: h.qs.to_follower(4, 1, endpoints(1), 0))
    assert h.qs.epoch == 5 and h.persisted() == ElectionState.with_elected_leader(5, 1)


def test_follower_voted_to_follower_same_epoch_keeps_vote_and_refuses_other_leader() -> None:
    h = harness()
    h.qs.to_prospective(0)
    h.qs.prospective_add_vote(ReplicaKey(1))
    h.qs.to_follower(0, 2, endpoints(2), 0)
    assert h.persisted() == ElectionState.with_elected_leader(0, 2, ReplicaKey(1))
    h.refused(lambda: h.qs.to_follower(0, 1, endpoints(1), 0))
    h.qs.to_follower(1, 1, endpoints(1), 0)
    assert h.persisted() == ElectionState.with_elected_leader(1, 1)  # a new epoch carries no vote


# ---- from Prospective ----------------------------------------------------------------------------------------
def test_prospective_to_unattached_in_same_epoch() -> None:
    h = harness()
    h.qs.to_prospective(0)
    h.qs.to_unattached(0, 0)
    assert h.role is Role.UNATTACHED and h.persisted() == ElectionState.with_unknown_leader(0)


def test_prospective_to_unattached_with_leader_in_higher_epoch() -> None:
    h = harness()
    h.qs.to_prospective(0)
    h.qs.to_unattached(10, 0, leader_id=1)
    assert h.persisted() == ElectionState.with_elected_leader(10, 1)


def test_prospective_to_follower_same_epoch() -> None:
    h = harness()
    h.qs.to_prospective(0)
    h.qs.to_follower(0, 1, endpoints(1), 0)
    assert h.role is Role.FOLLOWER and h.persisted() == ElectionState.with_elected_leader(0, 1)


def test_prospective_to_prospective_is_refused() -> None:
    h = harness()
    h.qs.to_prospective(0)
    h.refused(lambda: h.qs.to_prospective(0))


def test_prospective_to_candidate_bumps_epoch_and_persists_own_vote() -> None:
    h = harness()
    h.qs.to_prospective(0)
    h.qs.to_candidate(2000)
    assert h.role is Role.CANDIDATE and h.qs.epoch == 1
    assert in_election_window(h.qs.state.election_deadline_ms, now=2000)
    assert h.persisted() == ElectionState.with_voted_candidate(1, ReplicaKey(0))


def test_prospective_to_leader_or_resigned_is_refused() -> None:
    h = harness()
    h.qs.to_prospective(0)
    h.refused(lambda: h.qs.to_resigned((), 0))
    with pytest.raises(IllegalTransition):
        h.qs.to_leader(object())
    assert h.role is Role.PROSPECTIVE


def test_prospective_vote_is_persisted_and_second_vote_refused() -> None:
    h = harness()
    h.qs.to_prospective(0)
    h.qs.prospective_add_vote(ReplicaKey(1))
    assert h.role is Role.PROSPECTIVE and h.persisted() == ElectionState.with_voted_candidate(0, ReplicaKey(1))
    h.refused(lambda: h.qs.prospective_add_vote(ReplicaKey(2)))
    h.refused(lambda: h.qs.unattached_add_vote(ReplicaKey(2), 0))


def test_prospective_voted_to_unattached_same_epoch_keeps_vote() -> None:
    h = harness()
    h.qs.to_prospective(0)
    h.qs.prospective_add_vote(ReplicaKey(1))
    h.qs.to_unattached(0, 0)
    assert h.persisted() == ElectionState.with_voted_candidate(0, ReplicaKey(1))


def test_prospective_voted_to_and_from_follower_same_epoch() -> None:
    h = harness()
    h.qs.to_prospective(0)
    h.qs.prospective_add_vote(ReplicaKey(1))
    h.qs.to_follower(0, 2, endpoints(2), 0)
    assert h.persisted() == ElectionState.with_elected_leader(0, 2, ReplicaKey(1))
    h.qs.to_prospective(0)
    assert h.qs.state.voted_key == ReplicaKey(1)
    assert h.persisted() == ElectionState.with_elected_leader(0, 2, ReplicaKey(1))


def test_prospective_voted_to_candidate_votes_for_itself_in_next_epoch() -> None:
    h = harness(stored=ElectionState.with_voted_candidate(0, ReplicaKey(1)))
    h.qs.to_prospective(0)
    assert h.qs.state.voted_key == ReplicaKey(1)
    h.qs.to_candidate(0)
    assert h.qs.epoch == 1 and h.persisted() == ElectionState.with_voted_candidate(1, ReplicaKey(0))


def test_prospective_lost_with_rejections_gets_fresh_timer_but_higher_epoch_keeps_running_one() -> None:
    h = harness()
    h.qs.to_prospective(0)
    deadline = h.qs.state.election_deadline_ms
    h.qs.to_unattached(3, 100)  # not rejected yet: the running election timer carries over
    assert h.qs.state.election_deadline_ms == deadline
    h.qs.to_prospective(200)
    h.qs.state.election.record(1, False)
    h.qs.state.election.record(2, False)
    h.qs.to_unattached(3, 300)
    assert in_election_window(h.qs.state.election_deadline_ms, now=300)


# ---- from Candidate ------------------------------------------------------------------------------------------
def test_candidate_to_leader() -> None:
    h = harness(0, (0,))
    h.elect()
    assert h.role is Role.LEADER and h.qs.epoch == 1 and h.qs.high_watermark is None
    assert h.persisted() == ElectionState.with_elected_leader(1, 0, ReplicaKey(0))


def test_candidate_to_leader_without_granted_vote_is_refused() -> None:
    h = harness(0, (0, 1))
    h.qs.to_prospective(0)
    h.qs.to_candidate(0)
    h.refused(lambda: h.qs.to_leader(make_leader(h, 0)))
    h.qs.state.election.record(1, True)
    h.qs.to_leader(make_leader(h, 0))
    assert h.role is Role.LEADER


def test_candidate_to_any_state_lower_epoch_is_refused() -> None:
    h = harness(0, (0, 1))
    h.qs.to_unattached(5, 0)
    h.qs.to_prospective(0)
    h.qs.to_candidate(0)
    h.refused(lambda: h.qs.to_unattached(4, 0))
    h.refused(lambda: h.qs.to_follower(4, 1, endpoints(1), 0))
    assert h.qs.epoch == 6 and h.persisted() == ElectionState.with_voted_candidate(6, ReplicaKey(0))


def test_candidate_to_follower_same_epoch_keeps_own_vote() -> None:
    h = harness(0, (0, 1))
    h.qs.to_prospective(0)
    h.qs.to_candidate(0)
    h.qs.to_follower(1, 1, endpoints(1), 0)
    assert h.persisted() == ElectionState.with_elected_leader(1, 1, ReplicaKey(0))


def test_candidate_to_prospective_keeps_persisted_self_vote_and_restarts_timer() -> None:
    h = harness()
    h.qs.to_prospective(0)
    h.qs.to_candidate(0)
    count = h.persist_count()
    h.qs.to_prospective(20_000)
    assert h.role is Role.PROSPECTIVE and h.qs.epoch == 1
    assert in_election_window(h.qs.state.election_deadline_ms, now=20_000)
    assert h.persist_count() == count and h.persisted() == ElectionState.with_voted_candidate(1, ReplicaKey(0))


def test_candidate_to_candidate_or_resigned_is_refused() -> None:
    h = harness()
    h.qs.to_prospective(0)
    h.qs.to_candidate(0)
    h.refused(lambda: h.qs.to_candidate(0))
    h.refused(lambda: h.qs.to_resigned((), 0))


# ---- from Leader ---------------------------------------------------------------------------------------------
def test_leader_to_resigned_in_memory_with_all_remote_voters_unacked() -> None:
    h = harness()
    h.elect(granting=(1,))
    count = h.persist_count()
    h.qs.to_resigned((ReplicaKey(1), ReplicaKey(2)), 0)
    state = h.qs.state
    assert h.role is Role.RESIGNED and h.qs.epoch == 1 and state.unacked_voters == {1, 2}
    assert state.preferred_successors == (ReplicaKey(1), ReplicaKey(2))
    assert state.election_state() == ElectionState.with_elected_leader(1, 0)
    assert h.persist_count() == count


def test_leader_to_any_state_lower_epoch_is_refused() -> None:
    h = harness(0, (0, 1))
    h.qs.to_unattached(5, 0)
    h.elect(granting=(1,))
    h.refused(lambda: h.qs.to_unattached(4, 0))
    h.refused(lambda: h.qs.to_follower(4, 1, endpoints(1), 0))
    assert h.qs.epoch == 6 and h.persisted() == ElectionState.with_elected_leader(6, 0, ReplicaKey(0))


def test_leader_to_prospective_candidate_leader_or_same_epoch_follower_is_refused() -> None:
    h = harness(0, (0, 1))
    h.elect(granting=(1,))
    h.refused(lambda: h.qs.to_prospective(0))
    h.refused(lambda: h.qs.to_candidate(0))
    h.refused(lambda: h.qs.to_follower(1, 1, endpoints(1), 0))


def test_leader_to_follower_higher_epoch() -> None:
    h = harness(0, (0, 1))
    h.elect(granting=(1,))
    h.qs.to_follower(5, 1, endpoints(1), 0)
    assert h.persisted() == ElectionState.with_elected_leader(5, 1)


# ---- from Resigned -------------------------------------------------------------------------------------------
def test_resigned_to_unattached_higher_epoch_and_same_epoch_follower_refused() -> None:
    h = harness(stored=ElectionState.with_elected_leader(5, 0))
    h.refused(lambda: h.qs.to_follower(5, 0, endpoints(0), 0))  # itself
    # Stricter than Kafka 4.0 (KAFKA-18379): this node led epoch 5, so nobody else can lead it.
    h.refused(lambda: h.qs.to_follower(5, 1, endpoints(1), 0))
    h.qs.to_unattached(6, 0)
    assert h.role is Role.UNATTACHED and h.qs.epoch == 6


# ---- general rules -------------------------------------------------------------------------------------------
def test_cannot_follow_or_vote_for_self() -> None:
    h = harness(0, (0,))
    h.refused(lambda: h.qs.to_follower(0, 0, endpoints(0), 0))
    h.refused(lambda: h.qs.unattached_add_vote(ReplicaKey(0), 0))
    h.qs.to_prospective(0)
    h.refused(lambda: h.qs.prospective_add_vote(ReplicaKey(0)))


def _unattached_voted(h: Harness) -> None:
    h.qs.unattached_add_vote(ReplicaKey(1), 0)


def _candidate(h: Harness) -> None:
    h.qs.to_prospective(0)
    h.qs.to_candidate(0)


def _follower(h: Harness) -> None:
    h.qs.to_follower(3, 1, endpoints(1), 0)


def _resigned(h: Harness) -> None:
    h.elect(granting=(1,))
    h.qs.to_resigned((), 0)


@pytest.mark.parametrize("setup", [
    lambda h: h.qs.to_unattached(3, 0), _unattached_voted, _candidate, lambda h: h.elect(granting=(1,)),
    _follower, _resigned,
], ids=["unattached", "unattached-voted", "candidate", "leader", "follower", "resigned"])
def test_all_states_to_unattached_fail_in_same_epoch(setup) -> None:
    h = harness()
    setup(h)
    h.refused(lambda: h.qs.to_unattached(h.qs.epoch, 0))


# ---- observers -----------------------------------------------------------------------------------------------
def test_can_become_follower_of_non_voter() -> None:
    h = harness(0, (0, 1), log_epoch=4)
    h.qs.unattached_add_vote(ReplicaKey(2), 0)  # 2 is not a voter
    h.qs.to_follower(4, 2, Endpoints.of([Endpoint("CONTROLLER", "non-voter-host", 1234)]), 0)
    assert h.qs.leader_id() == 2 and h.qs.epoch == 4
    assert h.persisted() == ElectionState.with_elected_leader(4, 2, ReplicaKey(2))


def test_observer_cannot_become_prospective_candidate_leader_or_resigned() -> None:
    h = harness(7, (1, 2))
    assert not h.qs.is_voter() and h.qs.state.election_deadline_ms == NEVER
    h.refused(lambda: h.qs.to_prospective(0))
    h.refused(lambda: h.qs.to_candidate(0))
    h.refused(lambda: h.qs.to_resigned((), 0))
    h.qs.to_follower(0, 1, endpoints(1), 0)
    h.refused(lambda: h.qs.to_prospective(0))
    h.qs.to_unattached(3, 0)
    assert h.qs.state.election_deadline_ms == NEVER  # observers wait for a leader indefinitely


def test_observer_with_id_can_vote() -> None:
    h = harness(7, (1, 2), log_epoch=5)
    h.qs.unattached_add_vote(ReplicaKey(1), 0)
    assert h.role is Role.UNATTACHED and h.qs.state.voted_key == ReplicaKey(1) and not h.qs.is_voter()


def test_high_watermark_retained_across_transitions_but_not_by_a_new_leader() -> None:
    h = harness(0, (0, 1))
    h.qs.to_follower(5, 1, endpoints(1), 0)
    assert h.qs.update_high_watermark(10) and not h.qs.update_high_watermark(9)  # it only moves forward
    h.qs.to_unattached(6, 0)
    assert h.qs.high_watermark == 10
    h.qs.unattached_add_vote(ReplicaKey(1), 0)
    assert h.qs.high_watermark == 10
    h.qs.to_prospective(0)
    assert h.qs.high_watermark == 10
    h.qs.to_candidate(0)
    assert h.qs.high_watermark == 10
    h.qs.state.election.record(1, True)
    h.qs.to_leader(make_leader(h, 10))
    assert h.qs.high_watermark is None  # learned again once a record of the new epoch commits
    h.qs.state.high_watermark = 12  # the leader's own computation (leader.py)
    h.qs.to_unattached(8, 0)
    assert h.qs.high_watermark == 12  # what the leader committed survives its leadership


# ---- the table itself ----------------------------------------------------------------------------------------
U, P, C, L, F, R = Role.UNATTACHED, Role.PROSPECTIVE, Role.CANDIDATE, Role.LEADER, Role.FOLLOWER, Role.RESIGNED
# Reference §1.3 (4.0+, KIP-996) plus Candidate -> Follower. "S" same epoch, "N" epoch + 1, "H" epoch + 2 or more.
EXPECTED_ALLOWED = {
    (U, U, "N"), (U, U, "H"), (U, P, "S"), (U, F, "S"), (U, F, "N"), (U, F, "H"),
    (P, C, "N"), (P, U, "S"), (P, U, "N"), (P, U, "H"), (P, F, "S"), (P, F, "N"), (P, F, "H"),
    (C, L, "S"), (C, P, "S"), (C, U, "N"), (C, U, "H"), (C, F, "S"), (C, F, "N"), (C, F, "H"),
    (L, R, "S"), (L, U, "N"), (L, U, "H"), (L, F, "N"), (L, F, "H"),
    (F, P, "S"), (F, F, "S"), (F, F, "N"), (F, F, "H"), (F, U, "N"), (F, U, "H"),
    (R, U, "N"), (R, U, "H"), (R, F, "N"), (R, F, "H"),
}
DELTAS = {"lower": -1, "S": 0, "N": 1, "H": 3}


def _state(h: Harness, role: Role, epoch: int, target: bool) -> object:
    """A plain state of `role` at `epoch` (no votes), reached by the gatekeeper or built for it."""
    from pykraft.raft.states import (CandidateState, EpochElection, FollowerState, ProspectiveState,
                                     ResignedState, UnattachedState)

    key = ReplicaKey(0)
    election = EpochElection.start(h.voters.keys(), key)
    election.record(1, True)
    if role is U:
        return UnattachedState(epoch, T)
    if role is P:
        return ProspectiveState(epoch, election, T)
    if role is C:
        return CandidateState(epoch, key, election, T)
    if role is F:  # a target follower knows more endpoints, so a same-epoch move is a legal endpoint update
        return FollowerState(epoch, 1, more_endpoints(1) if target else endpoints(1), FETCH_TIMEOUT)
    if role is R:
        return ResignedState(epoch, 0, T, {1, 2}, ())
    accumulator = BatchAccumulator(epoch, 0, 0, 1 << 20)
    return LeaderState(epoch=epoch, local_key=key, epoch_start_offset=0, voters=h.voters, accumulator=accumulator,
                       granting_voters=election.granted(), check_quorum_deadline_ms=15_000,
                       begin_quorum_next_ms=0, config=CONFIG)


@pytest.mark.parametrize("source", list(Role), ids=lambda r: r.value)
def test_every_transition_is_allowed_or_refused_as_the_reference_table_says(source: Role) -> None:
    for target in Role:
        for delta_name, delta in DELTAS.items():
            h = harness(stored=ElectionState.with_unknown_leader(5))
            h.qs.state = _state(h, source, 5, target=False)
            new = _state(h, target, 5 + delta, target=True)
            expected = (source, target, delta_name) in EXPECTED_ALLOWED
            emitted = len(h.effects)
            if expected:
                h.qs._transition(new)
                assert h.qs.state is new, (source, target, delta_name)
            else:
                h.refused(lambda: h.qs._transition(new))
                assert len(h.effects) == emitted
