"""A replica whose own removal is appended but not known to be committed may still campaign (QuorumState.is_voter
with VoterHistory.voters_before_uncommitted); once the removal is below its high watermark it is an observer.

Without this, a leader of {A, B} that appended VotersRecord {A}, lost leadership before A received it and holds
the longest log deadlocks the quorum: A needs B's vote, B refuses it, B never stands (sim: self_removal_cut)."""

from __future__ import annotations

import random

from pykraft.raft.config import LocalReplica, QuorumConfig
from pykraft.raft.quorum_state import QuorumState
from pykraft.raft.states import NEVER, Role
from pykraft.raft.voter_history import VoterHistory

from raft_context import endpoints, voter_set


def _history_with_removal_at(offset: int) -> VoterHistory:
    history = VoterHistory(None)
    history.add_voter_set(0, voter_set([0, 1]))
    history.add_voter_set(offset, voter_set([0]))  # node 1 removed itself
    return history


def _quorum(history: VoterHistory) -> QuorumState:
    local = LocalReplica(node_id=1, endpoints=endpoints(1))
    quorum = QuorumState(local, QuorumConfig(), random.Random(3), history.last_voter_set, lambda: 1, lambda e: None,
                         voters_before_uncommitted=history.voters_before_uncommitted)
    quorum.initialize(None, 0, 0)
    return quorum


def test_a_replica_whose_removal_is_not_known_committed_may_still_campaign() -> None:
    quorum = _quorum(_history_with_removal_at(10))
    assert quorum.is_voter()
    assert quorum.state.election_deadline_ms != NEVER  # restarted with an unknown high watermark: it keeps a timer
    quorum.to_prospective(5)
    assert quorum.role is Role.PROSPECTIVE
    # It collects the votes of the latest voter set, {0}: node 0's grant alone is a majority.
    assert [k.id for k in quorum.state.election.unrecorded()] == [0]


def test_the_earlier_voter_set_counts_only_while_the_removal_is_at_or_above_the_high_watermark() -> None:
    history = _history_with_removal_at(10)
    assert history.voters_before_uncommitted(None) == voter_set([0, 1])
    assert history.voters_before_uncommitted(10) == voter_set([0, 1])
    assert history.voters_before_uncommitted(11) is None  # committed: node 1 is no voter any more
    single = VoterHistory(None)
    single.add_voter_set(0, voter_set([0]))
    assert single.voters_before_uncommitted(None) is None


def test_a_replica_never_in_either_set_stays_an_observer() -> None:
    history = _history_with_removal_at(10)
    local = LocalReplica(node_id=7, endpoints=endpoints(7))
    quorum = QuorumState(local, QuorumConfig(), random.Random(3), history.last_voter_set, lambda: 1, lambda e: None,
                         voters_before_uncommitted=history.voters_before_uncommitted)
    quorum.initialize(None, 0, 0)
    assert not quorum.is_voter() and quorum.state.election_deadline_ms == NEVER
