"""AlterPartitionReassignments and ListPartitionReassignments for the admin client (KIP-455), and reading their
answers.

- Alter: v0, or v1 when the caller forbids a replication factor change (KIP-860's AllowReplicationFactorChange,
  which v0 cannot carry); a partition's target is a broker list, or None to cancel its reassignment. The answer is
  one error (or None) per partition, as Kafka's Admin.alterPartitionReassignments reports it; a partition the
  answer leaves out is UNKNOWN_SERVER_ERROR.
- List: v0, every ongoing reassignment (None) or those of the named partitions.
A per-partition error without a message carries Kafka's default text for its code (what a Java client prints).
Nothing here raises on a response that decoded.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kio.schema.alter_partition_reassignments.v0 import request as alter_v0
from kio.schema.alter_partition_reassignments.v1 import request as alter_v1
from kio.schema.list_partition_reassignments.v0 import request as list_v0
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i32, i32Timedelta

from pykraft.protocol.errors import ErrorCode

from .errors import AdminError
from .model import error_code_of
from .responses import Outcome

TopicPartition = tuple[str, int]

# Kafka's Errors messages for the codes these two APIs answer with (a Java client shows them when the server sent
# no message of its own).
DEFAULT_MESSAGES = {
    ErrorCode.UNKNOWN_SERVER_ERROR: "The server experienced an unexpected error when processing the request.",
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: "This server does not host this topic-partition.",
    ErrorCode.REQUEST_TIMED_OUT: "The request timed out.",
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: "Cluster authorization failed.",
    ErrorCode.INVALID_REPLICATION_FACTOR: "Replication factor is below 1 or larger than the number of available "
                                          "brokers.",
    ErrorCode.INVALID_REPLICA_ASSIGNMENT: "Replica assignment is invalid.",
    ErrorCode.NOT_CONTROLLER: "This is not the correct controller for this cluster.",
    ErrorCode.INVALID_REQUEST: "This most likely occurs because of a request being malformed by the client library "
                               "or the message was sent to an incompatible broker. See the broker logs for more "
                               "details.",
    ErrorCode.NO_REASSIGNMENT_IN_PROGRESS: "No partition reassignment is in progress.",
}


@dataclass(frozen=True, slots=True)
class PartitionReassignment:
    """An ongoing reassignment: every replica (target first, then the ones being removed), adding, removing."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]


def _timeout(ms: int) -> i32Timedelta:
    return i32Timedelta.parse(datetime.timedelta(milliseconds=ms))


def alter_request(targets: Mapping[TopicPartition, Sequence[int] | None], allow_rf_change: bool,
                  timeout_ms: int) -> Any:
    module = alter_v0 if allow_rf_change else alter_v1
    by_topic: dict[str, list[Any]] = {}
    for (topic, index), replicas in targets.items():
        by_topic.setdefault(topic, []).append(module.ReassignablePartition(
            partition_index=i32(index), replicas=None if replicas is None else tuple(BrokerId(b) for b in replicas)))
    topics = tuple(module.ReassignableTopic(name=TopicName(t), partitions=tuple(ps)) for t, ps in by_topic.items())
    if allow_rf_change:
        return alter_v0.AlterPartitionReassignmentsRequest(timeout=_timeout(timeout_ms), topics=topics)
    return alter_v1.AlterPartitionReassignmentsRequest(timeout=_timeout(timeout_ms), topics=topics,
                                                       allow_replication_factor_change=False)


def top_level_outcome(response: Any) -> Outcome:
    return Outcome(error_code_of(response.error_code), response.error_message)


def alter_results(response: Any, targets: Iterable[TopicPartition]) -> dict[TopicPartition, AdminError | None]:
    answered: dict[TopicPartition, AdminError | None] = {}
    for topic in response.responses:
        for p in topic.partitions:
            code = error_code_of(p.error_code)
            answered[(str(topic.name), int(p.partition_index))] = (
                None if code == ErrorCode.NONE else AdminError(code, p.error_message or DEFAULT_MESSAGES.get(code)))
    missing = AdminError(ErrorCode.UNKNOWN_SERVER_ERROR, "the answer does not mention this partition")
    return {tp: answered.get(tp, missing) for tp in targets}


def list_request(partitions: Iterable[TopicPartition] | None, timeout_ms: int) -> Any:
    if partitions is None:
        return list_v0.ListPartitionReassignmentsRequest(timeout=_timeout(timeout_ms), topics=None)
    by_topic: dict[str, list[int]] = {}
    for topic, index in partitions:
        by_topic.setdefault(topic, []).append(index)
    return list_v0.ListPartitionReassignmentsRequest(timeout=_timeout(timeout_ms), topics=tuple(
        list_v0.ListPartitionReassignmentsTopics(name=TopicName(t), partition_indexes=tuple(i32(i) for i in ps))
        for t, ps in by_topic.items()))


def list_results(response: Any) -> dict[TopicPartition, PartitionReassignment]:
    return {(str(t.name), int(p.partition_index)): PartitionReassignment(
        tuple(int(b) for b in p.replicas), tuple(int(b) for b in p.adding_replicas),
        tuple(int(b) for b in p.removing_replicas)) for t in response.topics for p in t.partitions}
