"""UpdateRaftVoter (KIP-853; reference §1.8), leader side. A voter tells the leader its current endpoints and
supported kraft.version range; the follower side (when to send it) is in follower_membership.py.

Up front: the cluster id must match (INCONSISTENT_CLUSTER_ID); the request epoch must be the leader's epoch
(FENCED_LEADER_EPOCH when lower, UNKNOWN_LEADER_EPOCH when higher); this node must be the leader and not shutting
down (NOT_LEADER_OR_FOLLOWER / BROKER_NOT_AVAILABLE); the request must carry a directory id (INVALID_REQUEST).
Then, in order:

 1. An AddVoter or RemoveVoter is pending                             -> REQUEST_TIMED_OUT.
 2. The high watermark is unknown (previous leaders not yet fenced)    -> REQUEST_TIMED_OUT.
 3. An uncommitted VotersRecord exists (its offset >= HWM)            -> REQUEST_TIMED_OUT.
 4. The supported range does not hold the finalized kraft.version      -> INVALID_REQUEST.
 5. No endpoint for the leader's listener                             -> INVALID_REQUEST.
 6. The (id, directory id) is not a voter                               -> VOTER_NOT_FOUND.
 7. kraft.version 0: no VotersRecord can be written; the leader remembers what the voter reported (for the
    kraft.version 0 -> 1 upgrade, which needs every voter's directory id and supported range) and answers NONE.
    This is Kafka 4.1+ behaviour (KAFKA-16538); Kafka 3.9 answered UNSUPPORTED_VERSION.
 8. kraft.version >= 1: append the VotersRecord with the voter's new endpoints and range (nothing is appended
    when nothing changed; a voter stored without a directory id learns it, an existing one is never replaced).
 9. Answer NONE at once, without waiting for the commit, with the current leader and its endpoint.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING

from kio.schema.update_raft_voter.v0 import request as update_req

from pykraft.protocol.errors import ErrorCode
from pykraft.raft import reconfig_messages as rm
from pykraft.raft.effects import Respond
from pykraft.raft.handlers import membership, valid_cluster_id
from pykraft.raft.leader import LeaderState
from pykraft.raft.voter_set import Endpoints, ReplicaKey, SupportedVersionRange, VoterNode, VoterSetError, update_voter

if TYPE_CHECKING:
    from pykraft.raft.client import RaftCore


def _respond(core: RaftCore, ref: Hashable, error: ErrorCode) -> None:
    leader_id = core.quorum.leader_id()
    endpoints: Endpoints | None
    if leader_id is None:
        endpoints = Endpoints()
    elif leader_id == core.local.node_id:
        endpoints = core.local.endpoints
    else:
        endpoints = core.quorum.state.leader_endpoints
        if endpoints is None or endpoints.is_empty():
            endpoints = core.voters().endpoints_of(leader_id)
    address = endpoints.address(core.local.listener_name)
    core.emit(Respond(ref, rm.update_voter_response(error, leader_id, core.quorum.epoch, address)))


def handle_update_voter_request(core: RaftCore, ref: Hashable, request: update_req.UpdateRaftVoterRequest,
                                now_ms: int) -> None:
    if not valid_cluster_id(core, request.cluster_id):
        return _respond(core, ref, ErrorCode.INCONSISTENT_CLUSTER_ID)
    membership.settle_pending(core, now_ms)
    error = membership.leader_error(core, request.current_leader_epoch)
    leader = core.leader_state()
    if error is not None or leader is None:
        return _respond(core, ref, error or ErrorCode.NOT_LEADER_OR_FOLLOWER)
    key = ReplicaKey.of(request.voter_id, request.voter_directory_id)
    feature = request.k_raft_version_feature
    if key.id < 0 or key.directory_id is None or not 0 <= feature.min_supported_version <= feature.max_supported_version:
        return _respond(core, ref, ErrorCode.INVALID_REQUEST)
    blocked = membership.change_blocked(core, leader, kraft0_allowed=True)  # steps 1-3
    if blocked is not None:
        return _respond(core, ref, blocked[0])
    supported = SupportedVersionRange(feature.min_supported_version, feature.max_supported_version)
    if not supported.contains(core.history.last_kraft_version()):  # step 4
        return _respond(core, ref, ErrorCode.INVALID_REQUEST)
    endpoints = rm.listeners_to_endpoints(request.listeners)
    if endpoints.address(core.local.listener_name) is None:  # step 5
        return _respond(core, ref, ErrorCode.INVALID_REQUEST)
    voters = update_voter(core.voters(), VoterNode(key, endpoints, supported))
    if isinstance(voters, VoterSetError):  # step 6
        return _respond(core, ref, ErrorCode.VOTER_NOT_FOUND)
    if core.history.last_kraft_version() < 1:  # step 7
        core.reconfig.volatile_for(leader.epoch)[key.id] = voters.voters[key.id]
    elif voters != core.voters():  # step 8
        membership.append_voters_record(core, leader, voters, now_ms)
    _respond(core, ref, ErrorCode.NONE)  # step 9


def volatile_voter_set(core: RaftCore, leader: LeaderState) -> tuple[list[VoterNode], list[int]]:
    """kraft.version 0: every static voter as it reported itself (the leader as configured locally), and the ids
    of the voters that have not reported yet."""
    reported = core.reconfig.volatile_for(leader.epoch)
    nodes: list[VoterNode] = []
    missing: list[int] = []
    for voter_id, static in core.voters().voters.items():
        if voter_id == core.local.node_id:
            nodes.append(VoterNode(leader.local_key, core.local.endpoints, core.local.supported_kraft))
        elif voter_id in reported:
            nodes.append(reported[voter_id])
        else:
            nodes.append(static)
            missing.append(voter_id)
    return nodes, missing
