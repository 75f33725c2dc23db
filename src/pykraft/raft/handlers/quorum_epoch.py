"""BeginQuorumEpoch (leader announces itself, re-sent to voters that do not fetch) and EndQuorumEpoch
(graceful resignation with preferred successors and their strict exponential election backoff)."""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING

from kio.schema.begin_quorum_epoch.v1 import request as bqe_req
from kio.schema.begin_quorum_epoch.v1 import response as bqe_resp
from kio.schema.end_quorum_epoch.v1 import request as eqe_req
from kio.schema.end_quorum_epoch.v1 import response as eqe_resp

from pykraft.protocol.errors import ErrorCode
from pykraft.raft import messages
from pykraft.raft.config import MAX_PEER_EPOCH
from pykraft.raft.effects import Respond
from pykraft.raft.handlers import single_partition, valid_cluster_id
from pykraft.raft.leader import LeaderState
from pykraft.raft.states import FollowerState, ResignedState, UnattachedState
from pykraft.raft.voter_set import ReplicaKey

if TYPE_CHECKING:
    from pykraft.raft.client import RaftCore


def maybe_send_begin_quorum_epoch(core: RaftCore, leader: LeaderState, now_ms: int) -> None:
    if now_ms < leader.begin_quorum_next_ms:
        return
    for voter_id in leader.unacked_voters():
        if core.requests.is_ready(voter_id, now_ms):
            key = leader.voters.voters[voter_id].key
            request = messages.begin_quorum_epoch_request(core.local.cluster_id, leader.local_key.id, leader.epoch,
                                                          key, core.local.endpoints)
            core.send(core.destination_of(voter_id), request, now_ms)
    leader.acked_begin_epoch.clear()  # a voter that keeps fetching re-acknowledges before the next round
    leader.begin_quorum_next_ms = now_ms + core.config.begin_quorum_resend_ms


def send_end_quorum_epoch(core: RaftCore, state: ResignedState, now_ms: int) -> None:
    for voter_id in sorted(state.unacked_voters):
        if voter_id in core.voters().voters and core.requests.is_ready(voter_id, now_ms):
            request = messages.end_quorum_epoch_request(core.local.cluster_id, state.local_id, state.epoch,
                                                        state.preferred_successors, core.local.endpoints)
            core.send(core.destination_of(voter_id), request, now_ms)


def _voter_only_error(core: RaftCore, remote_id: int, epoch: int) -> ErrorCode | None:
    if epoch < core.quorum.epoch:
        return ErrorCode.FENCED_LEADER_EPOCH
    if remote_id < 0 or epoch > MAX_PEER_EPOCH:
        return ErrorCode.INVALID_REQUEST
    return None


def handle_begin_request(core: RaftCore, ref: Hashable, request: bqe_req.BeginQuorumEpochRequest, now_ms: int) -> None:
    def respond(error: ErrorCode, partition_error: ErrorCode = ErrorCode.NONE) -> None:
        core.emit(Respond(ref, messages.begin_quorum_epoch_response(
            error, partition_error, core.quorum.leader_id(), core.quorum.epoch,
            core.leader_endpoints_field(bqe_resp.NodeEndpoint))))

    if not valid_cluster_id(core, request.cluster_id):
        return respond(ErrorCode.INCONSISTENT_CLUSTER_ID)
    p = single_partition(request)
    if p is None:
        return respond(ErrorCode.INVALID_REQUEST)
    error = _voter_only_error(core, p.leader_id, p.leader_epoch)
    if error is not None:
        return respond(ErrorCode.NONE, error)
    local = core.local.key
    voter_dir = ReplicaKey.of(request.voter_id, p.voter_directory_id)
    if request.voter_id >= 0 and (local is None or voter_dir.id != local.id or (
            voter_dir.directory_id is not None and local.directory_id is not None
            and voter_dir.directory_id != local.directory_id)):
        return respond(ErrorCode.NONE, ErrorCode.INVALID_VOTER_KEY)
    if p.leader_id == core.local.node_id:
        return respond(ErrorCode.NONE, ErrorCode.INVALID_REQUEST)
    endpoints = messages.endpoints_from(request.leader_endpoints)
    if p.leader_epoch == core.quorum.epoch and core.leader_state() is not None:
        return respond(ErrorCode.NONE, ErrorCode.INVALID_REQUEST)  # two leaders in one epoch: a bug elsewhere
    core.transition_on_epoch(p.leader_epoch, p.leader_id, endpoints, now_ms)
    respond(ErrorCode.NONE)


def handle_end_request(core: RaftCore, ref: Hashable, request: eqe_req.EndQuorumEpochRequest, now_ms: int) -> None:
    def respond(error: ErrorCode, partition_error: ErrorCode = ErrorCode.NONE) -> None:
        core.emit(Respond(ref, messages.end_quorum_epoch_response(
            error, partition_error, core.quorum.leader_id(), core.quorum.epoch,
            core.leader_endpoints_field(eqe_resp.NodeEndpoint))))

    if not valid_cluster_id(core, request.cluster_id):
        return respond(ErrorCode.INCONSISTENT_CLUSTER_ID)
    p = single_partition(request)
    if p is None:
        return respond(ErrorCode.INVALID_REQUEST)
    error = _voter_only_error(core, p.leader_id, p.leader_epoch)
    if error is not None:
        return respond(ErrorCode.NONE, error)
    endpoints = messages.endpoints_from(request.leader_endpoints)
    core.transition_on_epoch(p.leader_epoch, p.leader_id, endpoints, now_ms)
    state = core.quorum.state
    local = core.local.key
    if isinstance(state, (FollowerState, UnattachedState)) and state.epoch == p.leader_epoch and local is not None \
            and core.quorum.is_voter():
        preferred = [ReplicaKey.of(c.candidate_id, c.candidate_directory_id) for c in p.preferred_candidates]
        delay = end_epoch_backoff_ms(core, preferred, local)
        if isinstance(state, FollowerState):
            state.fetch_deadline_ms = min(state.fetch_deadline_ms, now_ms + delay)
        else:
            state.election_deadline_ms = min(state.election_deadline_ms, now_ms + delay)
    respond(ErrorCode.NONE)


def end_epoch_backoff_ms(core: RaftCore, preferred: list[ReplicaKey], local: ReplicaKey) -> int:
    """Strict exponential delay by position p among n preferred candidates: 0 for the first,
    min(max, (max >> (n-1)) << (p-1)) for the others, max when absent."""
    maximum = core.config.election_backoff_max_ms
    positions = [i for i, k in enumerate(preferred) if k.id == local.id]
    if not positions:
        return maximum
    position, n = positions[0], len(preferred)
    if position == 0:
        return 0
    return min(maximum, (maximum >> (n - 1)) << (position - 1))


def handle_begin_response(core: RaftCore, source_id: int, response: bqe_resp.BeginQuorumEpochResponse,
                          now_ms: int) -> None:
    p = single_partition(response)
    if int(response.error_code) != ErrorCode.NONE or p is None:
        return
    if p.leader_epoch > core.quorum.epoch:
        core.transition_on_epoch(p.leader_epoch, p.leader_id if p.leader_id >= 0 else None,
                                 messages.endpoints_from(()), now_ms)
        return
    # An acknowledgement is not enough: the heartbeat stops only for voters that actually fetch.


def handle_end_response(core: RaftCore, source_id: int, response: eqe_resp.EndQuorumEpochResponse, now_ms: int) -> None:
    p = single_partition(response)
    if int(response.error_code) != ErrorCode.NONE or p is None:
        return
    state = core.quorum.state
    if isinstance(state, ResignedState) and p.error_code == ErrorCode.NONE:
        state.unacked_voters.discard(source_id)
    if p.leader_epoch > core.quorum.epoch:
        core.transition_on_epoch(p.leader_epoch, p.leader_id if p.leader_id >= 0 else None,
                                 messages.endpoints_from(()), now_ms)
