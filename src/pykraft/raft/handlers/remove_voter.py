"""RemoveRaftVoter (KIP-853; reference §1.8), leader side.

Up front: the cluster id must match (INCONSISTENT_CLUSTER_ID); this node must be the leader and not shutting
down (NOT_LEADER_OR_FOLLOWER / BROKER_NOT_AVAILABLE); the request must carry a directory id (INVALID_REQUEST).
Then, in order:

 1. An AddVoter or RemoveVoter is already pending                    -> REQUEST_TIMED_OUT.
 2. The high watermark is unknown (previous leaders not yet fenced)   -> REQUEST_TIMED_OUT.
 3. kraft.version is 0                                               -> UNSUPPORTED_VERSION.
 4. An uncommitted VotersRecord exists (its offset >= HWM)           -> REQUEST_TIMED_OUT.
 5. The (id, directory id) is not a voter, or it is the last voter     -> VOTER_NOT_FOUND.
 6. Append the VotersRecord (old set - the voter); it takes effect at once. When the leader removed itself it
    keeps serving Fetch and FetchSnapshot but no longer counts itself toward the high watermark or
    check-quorum (LeaderState only counts the members of its current voter set).
 7. Answer NONE once the high watermark passes the record (REQUEST_TIMED_OUT after request.timeout.ms;
    NOT_LEADER_OR_FOLLOWER if the leadership ends first).
 8. If the leader removed itself, it resigns (Resigned, EndQuorumEpoch to the remaining voters) once the
    removal is committed: see `reconfig.resign_if_removed`.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING

from kio.schema.remove_raft_voter.v0 import request as remove_req

from pykraft.protocol.errors import ErrorCode
from pykraft.raft import reconfig_messages as rm
from pykraft.raft.effects import Respond
from pykraft.raft.handlers import membership, valid_cluster_id
from pykraft.raft.voter_change import ChangeKind, PendingVoterChange
from pykraft.raft.voter_set import ReplicaKey, VoterSetError, remove_voter

if TYPE_CHECKING:
    from pykraft.raft.client import RaftCore


def _refuse(core: RaftCore, ref: Hashable, error: ErrorCode, message: str | None = None) -> None:
    core.emit(Respond(ref, rm.remove_voter_response(error, message)))


def handle_remove_voter_request(core: RaftCore, ref: Hashable, request: remove_req.RemoveRaftVoterRequest,
                                now_ms: int) -> None:
    if not valid_cluster_id(core, request.cluster_id):
        return _refuse(core, ref, ErrorCode.INCONSISTENT_CLUSTER_ID)
    membership.settle_pending(core, now_ms)
    error = membership.leader_error(core)
    leader = core.leader_state()
    if error is not None or leader is None:
        return _refuse(core, ref, error or ErrorCode.NOT_LEADER_OR_FOLLOWER)
    key = ReplicaKey.of(request.voter_id, request.voter_directory_id)
    if key.id < 0 or key.directory_id is None:
        return _refuse(core, ref, ErrorCode.INVALID_REQUEST, "the voter to remove needs an id and a directory id")
    blocked = membership.change_blocked(core, leader)  # steps 1-4
    if blocked is not None:
        return _refuse(core, ref, *blocked)
    voters = remove_voter(core.voters(), key)  # step 5
    if voters is VoterSetError.NOT_FOUND:
        return _refuse(core, ref, ErrorCode.VOTER_NOT_FOUND, f"{key} is not a voter")
    if voters is VoterSetError.LAST_VOTER:
        return _refuse(core, ref, ErrorCode.VOTER_NOT_FOUND, f"cannot remove {key}, the last voter")
    assert not isinstance(voters, VoterSetError)
    offset = membership.append_voters_record(core, leader, voters, now_ms)  # step 6
    membership.start(core, PendingVoterChange(ChangeKind.REMOVE, ref, key, leader.epoch,
                                              now_ms + core.config.request_timeout_ms, record_offset=offset))
    # step 7: `membership.settle_pending` answers once committed; step 8: `reconfig.resign_if_removed`
