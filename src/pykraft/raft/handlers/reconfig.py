"""Reconfiguration (KIP-853) entry points: routing of AddRaftVoter / RemoveRaftVoter / UpdateRaftVoter requests,
of the ApiVersions probe answer and of the answers a follower gets to its own membership requests; and the hooks
the core calls after every input and on every high-watermark advance.

The numbered algorithms are in add_voter.py, remove_voter.py and update_voter.py (leader side) and
follower_membership.py (UpdateVoter sending and auto-join); the shared steps in membership.py.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from kio.schema.add_raft_voter.v1 import request as add_req
from kio.schema.add_raft_voter.v1 import response as add_resp
from kio.schema.api_versions.v4 import response as av_resp
from kio.schema.remove_raft_voter.v0 import request as remove_req
from kio.schema.remove_raft_voter.v0 import response as remove_resp
from kio.schema.update_raft_voter.v0 import request as update_req
from kio.schema.update_raft_voter.v0 import response as update_resp

from pykraft.raft.handlers import add_voter, follower_membership, membership, quorum_epoch, remove_voter, update_voter
from pykraft.raft.handlers.fetch_snapshot import (
    handle_fetch_snapshot_request,
    handle_fetch_snapshot_response,
    is_fetch_snapshot_request,
    is_fetch_snapshot_response,
)
from pykraft.raft.states import ResignedState

if TYPE_CHECKING:
    from pykraft.raft.client import RaftCore


def handle_other_request(core: RaftCore, ref: Hashable, request: Any, now_ms: int) -> None:
    if isinstance(request, add_req.AddRaftVoterRequest):
        add_voter.handle_add_voter_request(core, ref, request, now_ms)
    elif isinstance(request, remove_req.RemoveRaftVoterRequest):
        remove_voter.handle_remove_voter_request(core, ref, request, now_ms)
    elif isinstance(request, update_req.UpdateRaftVoterRequest):
        update_voter.handle_update_voter_request(core, ref, request, now_ms)
    elif is_fetch_snapshot_request(request):
        handle_fetch_snapshot_request(core, ref, request, now_ms)
    else:
        core.unsupported_requests += 1  # counted drop: an API the raft core does not serve


def handle_other_response(core: RaftCore, source_id: int, response: Any, now_ms: int) -> None:
    if isinstance(response, av_resp.ApiVersionsResponse):
        add_voter.handle_api_versions_response(core, source_id, response, now_ms)
    elif isinstance(response, update_resp.UpdateRaftVoterResponse):
        follower_membership.handle_update_voter_response(core, source_id, response, now_ms)
    elif isinstance(response, (add_resp.AddRaftVoterResponse, remove_resp.RemoveRaftVoterResponse)):
        follower_membership.handle_membership_response(core, source_id, response, now_ms)
    elif is_fetch_snapshot_response(response):
        handle_fetch_snapshot_response(core, source_id, response, now_ms)


# ---- hooks ---------------------------------------------------------------------------------------------------
def on_high_watermark(core: RaftCore, now_ms: int) -> None:
    """The leader's high watermark advanced: a pending change whose record it passed is answered now."""
    membership.settle_pending(core, now_ms)


def after_input(core: RaftCore, now_ms: int) -> None:
    """Run at the end of every input, like Kafka's next pollLeader: settle the pending change (commit, timeout,
    failed probe, lost leadership) and resign if this leader's own removal has committed."""
    membership.settle_pending(core, now_ms)
    resign_if_removed(core, now_ms)


def resign_if_removed(core: RaftCore, now_ms: int) -> None:
    """A leader that is not in the voter set resigns once that voter set is committed (before, it must keep
    serving fetches so that the removal can commit). Deferred to the end of the input so that the Fetch answer
    that carried the new high watermark goes out first."""
    leader = core.leader_state()
    if leader is None or leader.is_local_voter() or leader.high_watermark is None:
        return
    offset = core.history.last_voter_set_offset()
    if offset is None or offset >= leader.high_watermark:
        return
    core.resign_leadership(now_ms)
    state = core.quorum.state
    if isinstance(state, ResignedState):
        quorum_epoch.send_end_quorum_epoch(core, state, now_ms)


def next_deadline_ms(core: RaftCore) -> int | None:
    """When the pending change times out (the follower side needs no timer: it rides on fetch answers)."""
    pending = core.reconfig.pending
    return pending.deadline_ms if pending is not None else None
