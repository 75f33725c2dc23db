"""A follower's own membership (KIP-853): UpdateVoter from voters whose entry is out of date, and controller
auto-join (`controller.quorum.auto.join.enable`) for observers.

Both ride on the follower's fetch loop: when the connection to the leader is free and the period timer
(3 x fetch.timeout.ms, restarted at every leader change) has expired, one of these requests goes out instead of
a Fetch; fetching resumes when its answer arrives. The rules:

- A voter sends UpdateVoter when, at kraft.version >= 1, its entry in the (latest known) voter set differs from
  its local endpoints or supported kraft.version range; at kraft.version 0, once per leader epoch until that
  leader acknowledges it (the leader needs every voter's report for the kraft.version 0 -> 1 upgrade).
- An observer with auto-join enabled that may become a voter (a controller, not a broker), with a directory id,
  at kraft.version >= 1 and after a successful fetch from the leader:
  1. if its id is in the voter set with another directory id, sends RemoveVoter for that stale key;
  2. otherwise sends AddVoter for itself (TimeoutMs 30 s, AckWhenCommitted=false so that the leader answers on
     append: the joining node must be free to fetch for the change to commit, KIP-1186).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kio.schema.update_raft_voter.v0 import response as update_resp

from pykraft.protocol.errors import ErrorCode
from pykraft.raft import reconfig_messages as rm
from pykraft.raft.states import FollowerState
from pykraft.raft.voter_change import AUTO_JOIN_ADD_TIMEOUT_MS
from pykraft.raft.voter_set import Endpoint, Endpoints, ReplicaKey, VoterNode, VoterSet

if TYPE_CHECKING:
    from pykraft.raft.client import RaftCore


def maybe_send_membership_request(core: RaftCore, state: FollowerState, now_ms: int) -> bool:
    """Called when the leader connection is ready, before a Fetch. Returns whether a request went out instead."""
    key = core.local.key
    if now_ms < state.update_voter_deadline_ms or key is None or key.directory_id is None:
        return False
    voters = core.voters()
    if voters.is_voter(key):
        request = _update_voter_request(core, state, key, voters)
        if request is None:  # up to date: look again next period, not on every fetch
            state.update_voter_deadline_ms = now_ms + core.config.update_voter_period_ms
            return False
    elif core.config.auto_join and core.local.can_become_voter and state.has_fetched_from_leader \
            and core.history.last_kraft_version() >= 1:
        request = _auto_join_request(core, key, voters)
    else:
        request = None
    if request is None:
        return False
    state.update_voter_deadline_ms = now_ms + core.config.update_voter_period_ms
    core.send(core.destination_of(state.leader_id, state.leader_endpoints), request, now_ms)
    return True


def _update_voter_request(core: RaftCore, state: FollowerState, key: ReplicaKey, voters: VoterSet) -> Any | None:
    local = core.local
    if core.history.last_kraft_version() >= 1:
        if not voters.needs_update(VoterNode(key, local.endpoints, local.supported_kraft)):
            return None
    elif core.reconfig.update_acked_by == (state.leader_id, state.epoch):
        return None
    return rm.update_voter_request(local.cluster_id, state.epoch, key, local.endpoints, local.supported_kraft)


def _auto_join_request(core: RaftCore, key: ReplicaKey, voters: VoterSet) -> Any:
    stale = voters.node(key.id)
    if stale is not None:
        return rm.remove_voter_request(core.local.cluster_id, stale.key)
    return rm.add_voter_request(core.local.cluster_id, key, core.local.endpoints, AUTO_JOIN_ADD_TIMEOUT_MS,
                                ack_when_committed=False)


# ---- answers -------------------------------------------------------------------------------------------------
def handle_update_voter_response(core: RaftCore, source_id: int, response: update_resp.UpdateRaftVoterResponse,
                                 now_ms: int) -> None:
    leader = response.current_leader
    if leader.leader_epoch > core.quorum.epoch:
        # The leader we asked is gone; follow the one it names (or become Unattached at its epoch).
        endpoints = Endpoints.of([Endpoint(core.local.listener_name, leader.host, int(leader.port))]) \
            if leader.host and 0 <= leader.port <= 0xFFFF else Endpoints()
        core.transition_on_epoch(leader.leader_epoch, leader.leader_id if leader.leader_id >= 0 else None,
                                 endpoints, now_ms)
    state = core.quorum.state
    if int(response.error_code) == ErrorCode.NONE and isinstance(state, FollowerState) and source_id == state.leader_id:
        core.reconfig.update_acked_by = (state.leader_id, state.epoch)
