"""CreatePartitions on the controller (Kafka's ReplicationControlManager.createPartitions).

Per topic, in Kafka's order: a name listed twice (INVALID_REQUEST), an unknown topic (UNKNOWN_TOPIC_OR_PARTITION),
a count that is not an increase (INVALID_PARTITIONS, Kafka's two messages), then the new partitions' replicas:
manual assignments (one per new partition, the topic's replica count, registered brokers, at least one active) or
automatic placement over the active brokers with the replication factor of the topic's partition 0. The new
partitions are written as PartitionRecords (ISR: the active replicas, leader the first of them, KIP-841), nothing
on validate_only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kio.schema.types import TopicName

from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.lazy_schema import schema_module
from pykraft.protocol.throttle import ZERO_THROTTLE

from .eligibility import BrokerEligibility
from .partitions import PartitionRegistration, new_partition
from .result import ControllerResult
from .topics import (TopicError, bad_assignment, check_manual_replicas, manual_partitions,
                     place_replicas, too_large)

cp_response = schema_module("kio.schema.create_partitions.v3.response")

if TYPE_CHECKING:
    from .replication import ReplicationControl



def create_partitions(control: ReplicationControl, request: Any, brokers: BrokerEligibility) -> ControllerResult:
    names = [str(t.name) for t in request.topics]
    records: list[object] = []
    results = []
    for topic in request.topics:
        name = str(topic.name)
        if names.count(name) > 1:
            outcome: list[PartitionRegistration] | TopicError = TopicError(ErrorCode.INVALID_REQUEST,
                                                                           "Duplicate topic name.")
        else:
            outcome = _new_partitions(control, topic, brokers)
            if not isinstance(outcome, TopicError):
                outcome = too_large(len(records), len(outcome)) or outcome
        if isinstance(outcome, TopicError):
            results.append(_result(name, outcome))
            continue
        if not request.validate_only:
            topic_id = control.topics_by_name[name]
            first = len(control.topics[topic_id].partitions)
            records.extend(p.to_record(topic_id, first + i) for i, p in enumerate(outcome))
        results.append(_result(name, TopicError(ErrorCode.NONE)))
    response = cp_response.CreatePartitionsResponse(throttle_time=ZERO_THROTTLE, results=tuple(results))
    return ControllerResult(records=tuple(records), response=response)



def _result(name: str, error: TopicError) -> Any:
    return cp_response.CreatePartitionsTopicResult(name=TopicName(name), error_code=error.code,
                                                   error_message=error.message)


def _new_partitions(control: ReplicationControl, topic: Any,
                    brokers: BrokerEligibility) -> list[PartitionRegistration] | TopicError:
    topic_id = control.topics_by_name.get(str(topic.name))
    if topic_id is None:
        return TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition.")
    existing = control.topics[topic_id].partitions
    current, count = len(existing), int(topic.count)
    if count < current:
        return TopicError(ErrorCode.INVALID_PARTITIONS, f"The topic {topic.name} currently has {current} "
                                                        f"partition(s); {count} would not be an increase.")
    if count == current:
        return TopicError(ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partition(s).")
    additional = count - current
    replication_factor = len(existing[0].replicas) if 0 in existing else 1
    if topic.assignments is None:
        placement = place_replicas(brokers.active_broker_ids(), additional, replication_factor, control.rng)
        if isinstance(placement, TopicError):
            return placement
        return [new_partition(replicas, replicas, replicas[0]) for replicas in placement]
    return _manual(topic.assignments, additional, replication_factor, brokers)


def _manual(assignments: Any, additional: int, replication_factor: int,
            brokers: BrokerEligibility) -> list[PartitionRegistration] | TopicError:
    if len(assignments) != additional:
        return bad_assignment(f"Attempted to add {additional} additional partition(s), but only "
                               f"{len(assignments)} assignment(s) were specified.")
    earlier = {-1: (0,) * replication_factor}  # every new partition must match the topic's replica count
    chosen = []
    for assignment in assignments:
        replicas = tuple(int(b) for b in assignment.broker_ids)
        error = check_manual_replicas(replicas, earlier, brokers)
        if error is not None:
            return error
        chosen.append(replicas)
    return manual_partitions(chosen, brokers)
