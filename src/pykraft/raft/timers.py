"""What `poll` does in each state when time passes: elections, fetch timeouts, heartbeats, check-quorum."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pykraft.raft.handlers import fetch, quorum_epoch, vote
from pykraft.raft.leader import LeaderState
from pykraft.raft.states import CandidateState, FollowerState, ProspectiveState, ResignedState, UnattachedState

if TYPE_CHECKING:
    from pykraft.raft.client import RaftCore


def poll_state(core: RaftCore, now_ms: int) -> None:
    if core.shutdown_deadline_ms is not None:
        _poll_shutting_down(core, now_ms)
    else:
        # A transition made by a timer is followed by the new state's own poll, so that e.g. a Prospective that
        # falls back to Follower sends its Fetch now instead of at its next timer (bounded: each pass is time-driven).
        for _ in range(4):
            state = core.quorum.state
            _poll_once(core, state, now_ms)
            if core.quorum.state is state:
                break
    core.maybe_complete_shutdown(now_ms)


def _poll_shutting_down(core: RaftCore, now_ms: int) -> None:
    """Kafka's `pollShutdown`: no timer runs, so a node shutting down never campaigns (it still answers requests,
    votes included). A leader that resigned keeps asking the voters to elect someone else; the shutdown ends once
    another leader is known, or at its deadline. Campaigning here once made a resigned leader win the next epoch and
    then refuse every Fetch as shutting down until its deadline (swarm seed 3010029)."""
    state = core.quorum.state
    if isinstance(state, ResignedState):
        quorum_epoch.send_end_quorum_epoch(core, state, now_ms)


def _poll_once(core: RaftCore, state: object, now_ms: int) -> None:
    if isinstance(state, LeaderState):
        _poll_leader(core, state, now_ms)
    elif isinstance(state, CandidateState):
        _poll_candidate(core, state, now_ms)
    elif isinstance(state, ProspectiveState):
        if now_ms >= state.election_deadline_ms:
            vote.lose_prospective(core, now_ms)
        else:
            vote.send_vote_requests(core, now_ms)
    elif isinstance(state, FollowerState):
        _poll_follower(core, state, now_ms)
    elif isinstance(state, UnattachedState):
        if core.quorum.is_voter() and now_ms >= state.election_deadline_ms:
            core.start_election(now_ms)
        elif not core.quorum.is_voter() or state.leader_id is not None:
            fetch.maybe_send_discovery_fetch(core, now_ms)
    elif isinstance(state, ResignedState):
        if now_ms >= state.election_deadline_ms:
            core.quorum.to_unattached(state.epoch + 1, now_ms)
            if core.quorum.is_voter():
                core.start_election(now_ms)
        else:
            quorum_epoch.send_end_quorum_epoch(core, state, now_ms)


def _poll_leader(core: RaftCore, leader: LeaderState, now_ms: int) -> None:
    if leader.poll_check_quorum(now_ms):
        core.resign_leadership(now_ms)
        return
    core.drain_if_due(now_ms)
    fetch.expire_parked_fetches(core, now_ms)
    quorum_epoch.maybe_send_begin_quorum_epoch(core, leader, now_ms)


def _poll_candidate(core: RaftCore, state: CandidateState, now_ms: int) -> None:
    if state.backoff_until_ms is not None:
        if now_ms >= state.backoff_until_ms:
            core.start_election(now_ms)
        return
    if now_ms >= state.election_deadline_ms:
        vote.start_backoff(core, state, now_ms)
        return
    vote.send_vote_requests(core, now_ms)


def _poll_follower(core: RaftCore, state: FollowerState, now_ms: int) -> None:
    if now_ms >= state.fetch_deadline_ms:
        if core.quorum.is_voter():
            core.start_election(now_ms)
        else:
            # Observers never campaign: they look for the leader through the bootstrap servers instead. A whole fetch
            # timeout without an answer from the leader also ends its pre-vote veto (vote.can_grant_vote): an observer
            # may be a voter that has not read the VotersRecord yet, and its veto once left a 4-voter set that had
            # lost one disk with no electable majority for good (swarm seed 3009301). Kafka keeps the veto for the
            # whole epoch; a granted pre-vote binds nothing, so the standard vote still guards the log.
            state.fetch_deadline_ms = now_ms + core.config.fetch_timeout_ms
            state.has_fetched_from_leader = False
            fetch.maybe_send_discovery_fetch(core, now_ms)
        return
    if not core.quorum.is_voter() and core.requests.is_backing_off(state.leader_id, now_ms):
        # An observer whose request to the leader failed or timed out asks the bootstrap servers meanwhile: the
        # leader may have moved. (Voters just retry the leader; their fetch timeout starts an election.)
        fetch.maybe_send_discovery_fetch(core, now_ms)
        return
    fetch.maybe_send_fetch(core, state, now_ms)


def on_request_timeout(core: RaftCore, node_id: int, now_ms: int) -> None:
    """An in-flight request timed out; its destination is in backoff and a later poll retries."""

