"""Request and response dispatch to one handler module per RPC family."""

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

if TYPE_CHECKING:
    from pykraft.raft.client import RaftCore


def dispatch_request(core: RaftCore, ref: Hashable, request: Any, now_ms: int) -> None:
    from pykraft.raft.handlers import describe_quorum, fetch, quorum_epoch, reconfig, vote

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
    from pykraft.raft.handlers import fetch, quorum_epoch, reconfig, vote

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


def single_partition(request: Any, topic_attr: str = "topics") -> Any | None:
    """The one partition of a single-partition KRaft request, or None if the shape is wrong."""
    from pykraft.raft.config import METADATA_PARTITION, METADATA_TOPIC

    topics = getattr(request, topic_attr)
    if len(topics) != 1 or getattr(topics[0], "topic_name", METADATA_TOPIC) != METADATA_TOPIC:
        return None
    partitions = topics[0].partitions
    if len(partitions) != 1:
        return None
    partition = partitions[0]
    index = getattr(partition, "partition_index", getattr(partition, "partition", None))
    return partition if index == METADATA_PARTITION else None


def valid_cluster_id(core: RaftCore, cluster_id: str | None) -> bool:
    """A null cluster id is accepted; an empty or different one is not."""
    return cluster_id is None or cluster_id == core.local.cluster_id
