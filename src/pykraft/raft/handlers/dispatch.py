"""Request and response dispatch to one handler module per RPC family: two tables keyed by message type.

Kept apart from `handlers/__init__.py` so that every handler module can import the shared helpers of the package
while this module imports all handler modules at the top (no import inside a function).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any

from kio.schema.add_raft_voter.v1 import request as add_req
from kio.schema.add_raft_voter.v1 import response as add_resp
from kio.schema.api_versions.v4 import response as av_resp
from kio.schema.begin_quorum_epoch.v1 import request as bqe_req
from kio.schema.begin_quorum_epoch.v1 import response as bqe_resp
from kio.schema.describe_quorum.v2 import request as dq_req
from kio.schema.end_quorum_epoch.v1 import request as eqe_req
from kio.schema.end_quorum_epoch.v1 import response as eqe_resp
from kio.schema.fetch.v17 import request as fetch_req
from kio.schema.fetch.v17 import response as fetch_resp
from kio.schema.fetch_snapshot.v1 import request as fs_req
from kio.schema.fetch_snapshot.v1 import response as fs_resp
from kio.schema.remove_raft_voter.v0 import request as remove_req
from kio.schema.remove_raft_voter.v0 import response as remove_resp
from kio.schema.update_raft_voter.v0 import request as update_req
from kio.schema.update_raft_voter.v0 import response as update_resp
from kio.schema.vote.v2 import request as vote_req
from kio.schema.vote.v2 import response as vote_resp

from pykraft.raft.voter_change import ReassignVotersRequest
from pykraft.raft.handlers import (
    add_voter,
    describe_quorum,
    fetch,
    fetch_snapshot,
    follower_membership,
    quorum_epoch,
    reassign_voters,
    remove_voter,
    update_voter,
    vote,
)

if TYPE_CHECKING:
    from pykraft.raft.client import RaftCore

RequestHandler = Callable[["RaftCore", Hashable, Any, int], None]
ResponseHandler = Callable[["RaftCore", int, Any, int], None]


def _update_voter_answered(core: RaftCore, source_id: int, response: Any, now_ms: int) -> None:
    follower_membership.handle_update_voter_response(core, source_id, response, now_ms)
    fetch.resume_fetching(core, now_ms)


def _auto_join_answered(core: RaftCore, source_id: int, response: Any, now_ms: int) -> None:
    fetch.resume_fetching(core, now_ms)  # any outcome is retried, if still needed, after the period


REQUEST_HANDLERS: dict[type, RequestHandler] = {
    fetch_req.FetchRequest: fetch.handle_fetch_request,
    vote_req.VoteRequest: vote.handle_vote_request,
    bqe_req.BeginQuorumEpochRequest: quorum_epoch.handle_begin_request,
    eqe_req.EndQuorumEpochRequest: quorum_epoch.handle_end_request,
    dq_req.DescribeQuorumRequest: describe_quorum.handle_describe_quorum,
    fs_req.FetchSnapshotRequest: fetch_snapshot.handle_fetch_snapshot_request,
    add_req.AddRaftVoterRequest: add_voter.handle_add_voter_request,
    remove_req.RemoveRaftVoterRequest: remove_voter.handle_remove_voter_request,
    update_req.UpdateRaftVoterRequest: update_voter.handle_update_voter_request,
    ReassignVotersRequest: reassign_voters.handle_reassign_request,  # AlterPartitionReassignments (KIP-642)
}

RESPONSE_HANDLERS: dict[type, ResponseHandler] = {
    fetch_resp.FetchResponse: fetch.handle_fetch_response,
    vote_resp.VoteResponse: vote.handle_vote_response,
    bqe_resp.BeginQuorumEpochResponse: quorum_epoch.handle_begin_response,
    eqe_resp.EndQuorumEpochResponse: quorum_epoch.handle_end_response,
    fs_resp.FetchSnapshotResponse: fetch_snapshot.handle_fetch_snapshot_response,
    av_resp.ApiVersionsResponse: add_voter.handle_api_versions_response,
    update_resp.UpdateRaftVoterResponse: _update_voter_answered,
    add_resp.AddRaftVoterResponse: _auto_join_answered,
    remove_resp.RemoveRaftVoterResponse: _auto_join_answered,
}


def dispatch_request(core: RaftCore, ref: Hashable, request: Any, now_ms: int) -> None:
    handler = REQUEST_HANDLERS.get(type(request))
    if handler is None:
        core.unsupported_requests += 1  # counted drop: an API the raft core does not serve
        return
    handler(core, ref, request, now_ms)


def dispatch_response(core: RaftCore, source_id: int, response: Any, now_ms: int) -> None:
    handler = RESPONSE_HANDLERS.get(type(response))
    if handler is not None:  # an answer of a type the core never asks for is dropped
        handler(core, source_id, response, now_ms)
