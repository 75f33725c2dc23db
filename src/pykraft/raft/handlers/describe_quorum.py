"""DescribeQuorum v2: voters and observers with LEO, last fetch and caught-up times, directory ids, listeners."""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING

from kio.schema.describe_quorum.v2 import request as dq_req
from kio.schema.describe_quorum.v2 import response as dq_resp
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i32, i64, u16

from pykraft.protocol.errors import ErrorCode, kio_code
from pykraft.raft.config import METADATA_PARTITION, METADATA_TOPIC
from pykraft.raft.effects import Respond
from pykraft.raft.handlers import single_partition
from pykraft.raft.leader import ReplicaProgress
from pykraft.raft.voter_set import ZERO_UUID, ReplicaKey

if TYPE_CHECKING:
    from pykraft.raft.client import RaftCore


def _replica(p: ReplicaProgress, leader: ReplicaKey, now_ms: int) -> dq_resp.ReplicaState:
    # The leader is by definition caught up with itself right now.
    own = p.key == leader
    return dq_resp.ReplicaState(
        replica_id=BrokerId(p.key.id), replica_directory_id=p.key.directory_id or ZERO_UUID,
        log_end_offset=i64(p.end_offset if p.end_offset is not None else -1),
        last_fetch_timestamp=i64(now_ms if own else p.last_fetch_ms),
        last_caught_up_timestamp=i64(now_ms if own else p.last_caught_up_ms),
    )


def handle_describe_quorum(core: RaftCore, ref: Hashable, request: dq_req.DescribeQuorumRequest, now_ms: int) -> None:
    def error(code: ErrorCode, message: str) -> None:
        partition = dq_resp.PartitionData(
            partition_index=i32(METADATA_PARTITION), error_code=kio_code(code), error_message=message,
            leader_id=BrokerId(-1), leader_epoch=i32(-1), high_watermark=i64(-1), current_voters=(), observers=())
        core.emit(Respond(ref, dq_resp.DescribeQuorumResponse(
            error_code=kio_code(ErrorCode.NONE), error_message=None, nodes=(),
            topics=(dq_resp.TopicData(topic_name=TopicName(METADATA_TOPIC), partitions=(partition,)),))))

    if single_partition(request) is None:
        return error(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "only __cluster_metadata-0 exists")
    leader = core.leader_state()
    if leader is None:
        return error(ErrorCode.NOT_LEADER_OR_FOLLOWER, "not the leader")
    voters = [_replica(leader.voter_progress[i], leader.local_key, now_ms) for i in sorted(leader.voter_progress)]
    observers = [_replica(p, leader.local_key, now_ms)
                 for p in sorted(leader.live_observers(now_ms), key=lambda p: p.key)]
    nodes = tuple(
        dq_resp.Node(node_id=BrokerId(node.key.id), listeners=tuple(
            dq_resp.Listener(name=e.name, host=e.host, port=u16(e.port)) for e in node.endpoints.items))
        for node in leader.voters.voters.values()
    )
    partition = dq_resp.PartitionData(
        partition_index=i32(METADATA_PARTITION), error_code=kio_code(ErrorCode.NONE), error_message=None,
        leader_id=BrokerId(leader.local_key.id), leader_epoch=i32(leader.epoch),
        high_watermark=i64(leader.high_watermark if leader.high_watermark is not None else -1),
        current_voters=tuple(voters), observers=tuple(observers))
    core.emit(Respond(ref, dq_resp.DescribeQuorumResponse(
        error_code=kio_code(ErrorCode.NONE), error_message=None, nodes=nodes,
        topics=(dq_resp.TopicData(topic_name=TopicName(METADATA_TOPIC), partitions=(partition,)),))))
