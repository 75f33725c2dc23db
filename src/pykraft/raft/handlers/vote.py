"""Vote and PreVote (KIP-595, KIP-996): granting rules (§1.5), nominee bookkeeping, backoff."""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING

from kio.schema.vote.v2 import request as vote_req
from kio.schema.vote.v2 import response as vote_resp

from pykraft.protocol.errors import ErrorCode
from pykraft.raft import messages
from pykraft.raft.config import MAX_PEER_EPOCH, RETRY_BACKOFF_BASE_MS
from pykraft.raft.effects import Respond
from pykraft.raft.handlers import single_partition, valid_cluster_id
from pykraft.raft.handlers.quorum_epoch import maybe_send_begin_quorum_epoch
from pykraft.raft.states import CandidateState, ProspectiveState, UnattachedState
from pykraft.raft.voter_set import Endpoint, Endpoints, ReplicaKey

if TYPE_CHECKING:
    from pykraft.raft.client import RaftCore


def _respond(core: RaftCore, ref: Hashable, error: ErrorCode, partition_error: ErrorCode = ErrorCode.NONE,
             granted: bool = False) -> None:
    endpoints = core.leader_endpoints_field(vote_resp.NodeEndpoint)
    core.emit(Respond(ref, messages.vote_response(error, partition_error, core.quorum.leader_id(), core.quorum.epoch,
                                                  granted, endpoints)))


def handle_vote_request(core: RaftCore, ref: Hashable, request: vote_req.VoteRequest, now_ms: int) -> None:
    if not valid_cluster_id(core, request.cluster_id):
        return _respond(core, ref, ErrorCode.INCONSISTENT_CLUSTER_ID)
    p = single_partition(request)
    if p is None:
        return _respond(core, ref, ErrorCode.INVALID_REQUEST)
    epoch, pre_vote = p.replica_epoch, p.pre_vote
    invalid_epoch = p.last_offset_epoch > epoch if pre_vote else p.last_offset_epoch >= epoch
    if p.replica_id < 0 or p.last_offset < 0 or p.last_offset_epoch < 0 or invalid_epoch or epoch > MAX_PEER_EPOCH:
        return _respond(core, ref, ErrorCode.NONE, ErrorCode.INVALID_REQUEST)
    if epoch < core.quorum.epoch:
        return _respond(core, ref, ErrorCode.NONE, ErrorCode.FENCED_LEADER_EPOCH)
    local = core.local.key
    if request.voter_id >= 0 and (local is None or not _matches_local(local, request.voter_id, p.voter_directory_id)):
        return _respond(core, ref, ErrorCode.NONE, ErrorCode.INVALID_VOTER_KEY)
    if epoch > core.quorum.epoch:
        core.transition_on_epoch(epoch, None, Endpoints(), now_ms)
    candidate = ReplicaKey.of(p.replica_id, p.replica_directory_id)
    up_to_date = (p.last_offset_epoch, p.last_offset) >= (core.log.last_fetched_epoch(), core.log.end_offset())
    granted = can_grant_vote(core, candidate, up_to_date, pre_vote)
    if granted and not pre_vote:
        state = core.quorum.state
        if isinstance(state, UnattachedState) and state.voted_key is None:
            core.quorum.unattached_add_vote(candidate, now_ms)
        elif isinstance(state, ProspectiveState) and state.voted_key is None:
            core.quorum.prospective_add_vote(candidate)
    _respond(core, ref, ErrorCode.NONE, ErrorCode.NONE, granted)


def _matches_local(local: ReplicaKey, voter_id: int, directory_id: object) -> bool:
    key = ReplicaKey.of(voter_id, directory_id)  # type: ignore[arg-type]
    if key.id != local.id:
        return False
    return key.directory_id is None or local.directory_id is None or key.directory_id == local.directory_id


def can_grant_vote(core: RaftCore, candidate: ReplicaKey, up_to_date: bool, pre_vote: bool) -> bool:
    """Never to itself, never from a replica that cannot be a voter (a node without the controller role votes in
    no election, whatever its log says); otherwise the epoch state decides (states.py, each `can_grant_vote`)."""
    if candidate.id == core.local.node_id or not core.local.can_become_voter:
        return False
    return core.quorum.state.can_grant_vote(candidate, up_to_date, pre_vote)


# ---- nominee side --------------------------------------------------------------------------------------------
def send_vote_requests(core: RaftCore, now_ms: int) -> None:
    state = core.quorum.state
    assert isinstance(state, (ProspectiveState, CandidateState))
    local = core.local.key
    assert local is not None
    pre_vote = isinstance(state, ProspectiveState)
    last = core.last_offset_and_epoch()
    for key in state.election.unrecorded():
        if key.id == local.id or not core.requests.is_ready(key.id, now_ms):
            continue
        request = messages.vote_request(core.local.cluster_id, local, state.epoch, key, last, pre_vote)
        core.send(core.destination_of(key.id), request, now_ms)


def maybe_win_prospective(core: RaftCore, now_ms: int) -> None:
    state = core.quorum.state
    if isinstance(state, ProspectiveState) and state.election.is_granted():
        core.quorum.to_candidate(now_ms)
        maybe_win_candidate(core, now_ms)
    elif isinstance(state, ProspectiveState):
        send_vote_requests(core, now_ms)


def maybe_win_candidate(core: RaftCore, now_ms: int) -> None:
    state = core.quorum.state
    if isinstance(state, CandidateState) and state.election.is_granted():
        core.become_leader(now_ms)
        leader = core.leader_state()
        if leader is not None:
            maybe_send_begin_quorum_epoch(core, leader, now_ms)
    elif isinstance(state, CandidateState):
        send_vote_requests(core, now_ms)


def lose_prospective(core: RaftCore, now_ms: int) -> None:
    """Pre-election lost or timed out: follow the last known leader if we can reach it, else stay Unattached."""
    state = core.quorum.state
    assert isinstance(state, ProspectiveState)
    if state.leader_id is not None and not state.leader_endpoints.is_empty():
        core.quorum.to_follower(state.epoch, state.leader_id, state.leader_endpoints, now_ms)
    else:
        core.quorum.to_unattached(state.epoch, now_ms, state.leader_id)


def start_backoff(core: RaftCore, state: CandidateState, now_ms: int) -> None:
    """Exponential candidate backoff: min(100ms x random(0 .. 2^min(20, retries) - 1), election.backoff.max.ms)."""
    spread = 2 ** min(20, state.retries)
    backoff = min(RETRY_BACKOFF_BASE_MS * core.rng.randrange(spread), core.config.election_backoff_max_ms)
    state.backoff_until_ms = now_ms + backoff


def handle_vote_response(core: RaftCore, source_id: int, response: vote_resp.VoteResponse, now_ms: int) -> None:
    state = core.quorum.state
    if int(response.error_code) == ErrorCode.UNSUPPORTED_VERSION and isinstance(state, ProspectiveState):
        core.quorum.to_candidate(now_ms)  # the peer has no Vote v2: fall back to a standard election
        return maybe_win_candidate(core, now_ms)
    p = single_partition(response)
    if int(response.error_code) != ErrorCode.NONE or p is None:
        return
    if p.error_code == ErrorCode.UNSUPPORTED_VERSION and isinstance(state, ProspectiveState):
        core.quorum.to_candidate(now_ms)
        return maybe_win_candidate(core, now_ms)
    endpoints = messages.endpoints_from(()) if not response.node_endpoints else _endpoints(core, response)
    if p.leader_epoch > core.quorum.epoch or (p.leader_epoch == core.quorum.epoch and p.leader_id >= 0
                                              and core.quorum.leader_id() is None):
        core.transition_on_epoch(p.leader_epoch, p.leader_id if p.leader_id >= 0 else None, endpoints, now_ms)
        return
    if p.leader_epoch < core.quorum.epoch or p.error_code != ErrorCode.NONE:
        return
    state = core.quorum.state
    if not isinstance(state, (ProspectiveState, CandidateState)):
        return  # e.g. a vote arriving after we became follower
    state.election.record(source_id, p.vote_granted)
    if isinstance(state, ProspectiveState):
        if state.election.is_granted():
            maybe_win_prospective(core, now_ms)
        elif state.election.is_rejected():
            lose_prospective(core, now_ms)
    else:
        if state.election.is_granted():
            maybe_win_candidate(core, now_ms)
        elif state.election.is_rejected() and state.backoff_until_ms is None:
            start_backoff(core, state, now_ms)


def _endpoints(core: RaftCore, response: vote_resp.VoteResponse) -> Endpoints:
    return Endpoints.of(Endpoint(core.local.listener_name, e.host, int(e.port)) for e in response.node_endpoints[:1])
