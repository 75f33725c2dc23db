"""Request and response dispatch to one handler module per RPC family.

Kept apart from `handlers/__init__.py` so that every handler module can import the shared helpers of the package
while this module imports all handler modules at the top (no import inside a function).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from kio.schema.begin_quorum_epoch.v1 import request as bqe_req
from kio.schema.begin_quorum_epoch.v1 import response as bqe_resp
from kio.schema.describe_quorum.v2 import request as dq_req
from kio.schema.end_quorum_epoch.v1 import request as eqe_req
from kio.schema.end_quorum_epoch.v1 import response as eqe_resp
from kio.schema.fetch.v17 import request as fetch_req
from kio.schema.fetch.v17 import response as fetch_resp
from kio.schema.vote.v2 import request as vote_req
from kio.schema.vote.v2 import response as vote_resp

from pykraft.raft.handlers import describe_quorum, fetch, quorum_epoch, reconfig, vote

if TYPE_CHECKING:
    from pykraft.raft.client import RaftCore


def dispatch_request(core: RaftCore, ref: Hashable, request: Any, now_ms: int) -> None:
    if isinstance(request, fetch_req.FetchRequest):
        fetch.handle_fetch_request(core, ref, request, now_ms)
    elif isinstance(request, vote_req.VoteRequest):
        vote.handle_vote_request(core, ref, request, now_ms)
    elif isinstance(request, bqe_req.BeginQuorumEpochRequest):
        quorum_epoch.handle_begin_request(core, ref, request, now_ms)
    elif isinstance(request, eqe_req.EndQuorumEpochRequest):
        quorum_epoch.handle_end_request(core, ref, request, now_ms)
    elif isinstance(request, dq_req.DescribeQuorumRequest):
        describe_quorum.handle_describe_quorum(core, ref, request, now_ms)
    else:
        reconfig.handle_other_request(core, ref, request, now_ms)


def dispatch_response(core: RaftCore, source_id: int, response: Any, now_ms: int) -> None:
    if isinstance(response, fetch_resp.FetchResponse):
        fetch.handle_fetch_response(core, source_id, response, now_ms)
    elif isinstance(response, vote_resp.VoteResponse):
        vote.handle_vote_response(core, source_id, response, now_ms)
    elif isinstance(response, bqe_resp.BeginQuorumEpochResponse):
        quorum_epoch.handle_begin_response(core, source_id, response, now_ms)
    elif isinstance(response, eqe_resp.EndQuorumEpochResponse):
        quorum_epoch.handle_end_response(core, source_id, response, now_ms)
    else:
        reconfig.handle_other_response(core, source_id, response, now_ms)
