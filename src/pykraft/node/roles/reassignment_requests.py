"""AlterPartitionReassignments and ListPartitionReassignments on a controller node: the partition entries run on the
QuorumController (controller/reassignments.py) like any controller request, the quorum entries (KIP-642, naming
`__cluster_metadata`) go to the node's `QuorumReassignments`, and the two answers are merged in the request's order.

`QuorumReassignments` is the seam for quorum reassignment: `ControllerHost.quorum_reassignments` holds one, the raft
core's (`node/apis/quorum_reassign_api.RaftQuorumReassignments`; `UnsupportedQuorumReassignments` answers
INVALID_REQUEST naming the missing support, for a host without it). `alter` answers its entries (it waits for the
target voter set to commit, up to `timeout_ms`), `ongoing` adds the metadata partition to a listing. A quorum entry
answered NOT_CONTROLLER (this node is not the raft leader) makes the whole answer NOT_CONTROLLER, so that the client
retries on the active controller.

AlterPartitionReassignments carries a timeout: a request the controller has not started running by then is answered
REQUEST_TIMED_OUT everywhere, without effect (Kafka's deadline on the controller's event queue); once started it
is answered when its records commit.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from pykraft.controller.reassignments import (ALTER_PARTITION_REASSIGNMENTS, LIST_PARTITION_REASSIGNMENTS,
                                              QUORUM_TOPIC, merged_topic_answers, quorum_reassignment_unsupported,
                                              split_quorum_topics)
from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.lazy_schema import schema_module
from pykraft.protocol.throttle import ZERO_THROTTLE

from pykraft.protocol.core_versions import to_request_version

alter_response = schema_module("kio.schema.alter_partition_reassignments.v1.response")

if TYPE_CHECKING:
    from pykraft.node.roles.controller_host import ControllerHost

ALTER_VERSION = 1  # the version the controller's answers are merged at, then lowered to the request's


class QuorumReassignments(Protocol):
    async def alter(self, topics: tuple[Any, ...], timeout_ms: int,
                    allow_replication_factor_change: bool = True) -> list[tuple[str, list[Any]]]:
        """(topic name, [ReassignablePartitionResponse v1, ...]) for each `__cluster_metadata` entry, in order."""

    def ongoing(self, requested: tuple[Any, ...] | None) -> list[Any]:
        """OngoingTopicReassignment v0 entries of the metadata partition for a listing (None: list everything)."""


class UnsupportedQuorumReassignments:
    async def alter(self, topics: tuple[Any, ...], timeout_ms: int,
                    allow_replication_factor_change: bool = True) -> list[tuple[str, list[Any]]]:
        return quorum_reassignment_unsupported(topics)

    def ongoing(self, requested: tuple[Any, ...] | None) -> list[Any]:
        return []


async def alter_reassignments(host: ControllerHost, message: Any) -> Any:
    version = int(message.__version__)
    timeout_ms = int(message.timeout.total_seconds() * 1000)
    user, quorum_topics = split_quorum_topics(message)
    answers: dict[str, list[Any]] = {}
    error, error_message = ErrorCode.NONE, None
    if user.topics or not quorum_topics:
        partitions = to_request_version(await host.request(ALTER_PARTITION_REASSIGNMENTS, user, timeout_ms=timeout_ms),
                                        ALTER_VERSION)
        error, error_message = ErrorCode(int(partitions.error_code)), partitions.error_message
        for topic in partitions.responses:
            answers.setdefault(topic.name, []).extend(topic.partitions)
    quorum: dict[str, list[Any]] = {}
    allow = bool(getattr(message, "allow_replication_factor_change", True))
    for name, parts in await host.quorum_reassignments.alter(quorum_topics, timeout_ms, allow):
        quorum.setdefault(name, []).extend(parts)
    lost = [p.error_message for parts in quorum.values() for p in parts
            if int(p.error_code) == ErrorCode.NOT_CONTROLLER]
    if lost and error == ErrorCode.NONE:
        error, error_message = ErrorCode.NOT_CONTROLLER, lost[0]
    merged = alter_response.AlterPartitionReassignmentsResponse(
        throttle_time=ZERO_THROTTLE, error_code=error, error_message=error_message,
        allow_replication_factor_change=allow, responses=merged_topic_answers(message, answers, quorum))
    return to_request_version(merged, version)


async def list_reassignments(host: ControllerHost, message: Any) -> Any:
    answer = await host.request(LIST_PARTITION_REASSIGNMENTS, message)
    requested = None if message.topics is None else tuple(t for t in message.topics if t.name == QUORUM_TOPIC)
    extra = host.quorum_reassignments.ongoing(requested) if int(answer.error_code) == 0 else []
    if not extra:
        return answer
    return type(answer)(throttle_time=answer.throttle_time, error_code=answer.error_code,
                        error_message=answer.error_message, topics=(*answer.topics, *extra))


HANDLERS = {ALTER_PARTITION_REASSIGNMENTS: alter_reassignments, LIST_PARTITION_REASSIGNMENTS: list_reassignments}
