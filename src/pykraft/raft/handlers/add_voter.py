"""AddRaftVoter (KIP-853; reference §1.8), leader side.

Up front: the cluster id must match (INCONSISTENT_CLUSTER_ID); this node must be the leader and not shutting
down (NOT_LEADER_OR_FOLLOWER / BROKER_NOT_AVAILABLE); the request must carry a directory id and an endpoint for
the leader's listener (INVALID_REQUEST). Then, in order:

 1. An AddVoter or RemoveVoter is already pending                    -> REQUEST_TIMED_OUT.
 2. The high watermark is unknown (previous leaders not yet fenced)   -> REQUEST_TIMED_OUT.
 3. kraft.version is 0                                               -> UNSUPPORTED_VERSION.
 4. An uncommitted VotersRecord exists (its offset >= HWM)           -> REQUEST_TIMED_OUT.
 5. The id is already a voter (ids are unique, whatever the directory) -> DUPLICATE_VOTER.
 6. Send ApiVersions to the new voter's endpoint for the leader's listener; the change is pending from here.
    The probe failing (expired, error answer)                        -> REQUEST_TIMED_OUT.
 7. The advertised kraft.version range does not hold the finalized version -> INVALID_REQUEST.
 8. The new voter is not caught up (fetched the leader's LEO, and fetched within the last hour)
                                                                      -> REQUEST_TIMED_OUT.
 9. Append the VotersRecord (old set + new voter); it takes effect at once. With AckWhenCommitted=false
    (AddRaftVoter v1, KIP-1186) answer NONE now.
10. Answer NONE once the high watermark passes the record (REQUEST_TIMED_OUT after TimeoutMs;
    NOT_LEADER_OR_FOLLOWER if the leadership ends first).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING

from kio.schema.add_raft_voter.v1 import request as add_req
from kio.schema.api_versions.v4 import response as av_resp

from pykraft.protocol.errors import ErrorCode
from pykraft.raft import reconfig_messages as rm
from pykraft.raft.effects import Destination, Respond
from pykraft.raft.handlers import membership, valid_cluster_id
from pykraft.raft.voter_change import ChangeKind, PendingVoterChange
from pykraft.raft.voter_set import ReplicaKey, VoterNode, VoterSetError, add_voter

if TYPE_CHECKING:
    from pykraft.raft.client import RaftCore


def _refuse(core: RaftCore, ref: Hashable, error: ErrorCode, message: str | None = None) -> None:
    core.emit(Respond(ref, rm.add_voter_response(error, message)))


def handle_add_voter_request(core: RaftCore, ref: Hashable, request: add_req.AddRaftVoterRequest,
                             now_ms: int) -> None:
    if not valid_cluster_id(core, request.cluster_id):
        return _refuse(core, ref, ErrorCode.INCONSISTENT_CLUSTER_ID)
    membership.settle_pending(core, now_ms)  # a pending change past its deadline must not block this one
    error = membership.leader_error(core)
    leader = core.leader_state()
    if error is not None or leader is None:
        return _refuse(core, ref, error or ErrorCode.NOT_LEADER_OR_FOLLOWER)
    key = ReplicaKey.of(request.voter_id, request.voter_directory_id)
    if key.id < 0 or key.directory_id is None:
        return _refuse(core, ref, ErrorCode.INVALID_REQUEST, "the new voter needs an id and a directory id")
    endpoints = rm.listeners_to_endpoints(request.listeners)
    address = endpoints.address(core.local.listener_name)
    if address is None:
        return _refuse(core, ref, ErrorCode.INVALID_REQUEST, f"no endpoint for listener {core.local.listener_name}")
    blocked = membership.change_blocked(core, leader)  # steps 1-4
    if blocked is not None:
        return _refuse(core, ref, *blocked)
    if key.id in core.voters().ids():  # step 5
        return _refuse(core, ref, ErrorCode.DUPLICATE_VOTER, f"voter id {key.id} is already in the voter set")
    if not core.requests.is_ready(key.id, now_ms):  # step 6: cannot probe right now
        return _refuse(core, ref, ErrorCode.REQUEST_TIMED_OUT, f"cannot send ApiVersions to {key.id} now")
    timeout_ms = max(0, int(request.timeout.total_seconds() * 1000))
    membership.start(core, PendingVoterChange(
        ChangeKind.ADD, ref, key, leader.epoch, now_ms + timeout_ms, endpoints,
        ack_when_committed=request.ack_when_committed, api_versions_from=key.id))
    core.send(Destination(key.id, address.host, address.port), rm.api_versions_request(), now_ms)


def handle_api_versions_response(core: RaftCore, source_id: int, response: av_resp.ApiVersionsResponse,
                                 now_ms: int) -> None:
    pending = core.reconfig.pending
    if pending is None or pending.kind is not ChangeKind.ADD or pending.api_versions_from != source_id:
        core.reconfig.ignored_api_versions += 1  # a late or unexpected probe answer
        return
    pending = membership.update(core, api_versions_from=None)
    leader = core.leader_state()
    if leader is None or leader.epoch != pending.epoch:
        return membership.finish(core, ErrorCode.NOT_LEADER_OR_FOLLOWER)
    if int(response.error_code) != ErrorCode.NONE:  # step 6: the probe failed
        return membership.finish(core, ErrorCode.REQUEST_TIMED_OUT, f"ApiVersions failed: {response.error_code.name}")
    supported = rm.supported_kraft_range(response)
    finalized = core.history.last_kraft_version()
    if supported is None or not supported.contains(finalized):  # step 7
        return membership.finish(core, ErrorCode.INVALID_REQUEST,
                                 f"the new voter does not support kraft.version {finalized}")
    if not leader.is_replica_caught_up(pending.key, now_ms):  # step 8
        return membership.finish(core, ErrorCode.REQUEST_TIMED_OUT, "the new voter has not caught up")
    voters = add_voter(core.voters(), VoterNode(pending.key, pending.endpoints, supported))
    if voters is VoterSetError.DUPLICATE_ID:
        return membership.finish(core, ErrorCode.DUPLICATE_VOTER)
    assert not isinstance(voters, VoterSetError)
    offset = membership.append_voters_record(core, leader, voters, now_ms)  # step 9
    membership.update(core, record_offset=offset)
    if not pending.ack_when_committed:
        membership.finish(core, ErrorCode.NONE)
    # step 10: `membership.settle_pending` answers once the high watermark passes `offset`
