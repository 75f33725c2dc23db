"""AlterPartitionReassignments and ListPartitionReassignments as the admin client sends and reads them, for the
metadata partition `__cluster_metadata-0` (quorum reassignment, KIP-642: the replicas are the target voters).

Reading tolerates odd answers: a missing partition is an error outcome, a code Kafka does not define is
UNKNOWN_SERVER_ERROR; nothing raises on a response that decoded.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kio.schema.alter_partition_reassignments.v0 import request as alter_req
from kio.schema.list_partition_reassignments.v0 import request as list_req
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i32, i32Timedelta

from pykraft.protocol.errors import ErrorCode
from pykraft.raft.config import METADATA_PARTITION, METADATA_TOPIC

from .model import error_code_of
from .responses import Outcome


@dataclass(frozen=True, slots=True)
class QuorumReassignment:
    """ListPartitionReassignments of `__cluster_metadata-0`: the voters now and the target's, as replica lists."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]

    @property
    def voters(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.adding)

    @property
    def target(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.removing)


def alter_request(target: Sequence[int] | None, timeout_ms: int) -> Any:
    """`target` None cancels the reassignment in progress (KIP-455's null replicas)."""
    replicas = None if target is None else tuple(BrokerId(i) for i in target)
    return alter_req.AlterPartitionReassignmentsRequest(
        timeout=i32Timedelta.parse(datetime.timedelta(milliseconds=timeout_ms)),
        topics=(alter_req.ReassignableTopic(name=TopicName(METADATA_TOPIC), partitions=(
            alter_req.ReassignablePartition(partition_index=i32(METADATA_PARTITION), replicas=replicas),)),))


def alter_partition_outcome(response: Any) -> Outcome:
    """The metadata partition's answer (a top-level error first: NOT_CONTROLLER, ...)."""
    top = Outcome(error_code_of(response.error_code), response.error_message)
    if top.code != ErrorCode.NONE:
        return top
    for topic in response.responses:
        for partition in topic.partitions:
            if topic.name == METADATA_TOPIC and int(partition.partition_index) == METADATA_PARTITION:
                return Outcome(error_code_of(partition.error_code), partition.error_message)
    return Outcome(ErrorCode.UNKNOWN_SERVER_ERROR, f"the answer has no {METADATA_TOPIC}-{METADATA_PARTITION}")


def list_request() -> Any:
    return list_req.ListPartitionReassignmentsRequest(
        timeout=i32Timedelta.parse(datetime.timedelta(milliseconds=30_000)),
        topics=(list_req.ListPartitionReassignmentsTopics(name=TopicName(METADATA_TOPIC),
                                                          partition_indexes=(i32(METADATA_PARTITION),)),))


def quorum_reassignment(response: Any) -> QuorumReassignment | None:
    """The metadata partition's entry of a ListPartitionReassignments answer (None: no reassignment)."""
    for topic in response.topics:
        for partition in topic.partitions:
            if topic.name == METADATA_TOPIC and int(partition.partition_index) == METADATA_PARTITION:
                return QuorumReassignment(tuple(int(r) for r in partition.replicas),
                                          tuple(int(r) for r in partition.adding_replicas),
                                          tuple(int(r) for r in partition.removing_replicas))
    return None
