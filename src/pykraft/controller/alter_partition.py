"""AlterPartition v2 and v3: a partition leader asks the controller to change its ISR (KIP-497, KIP-841, KIP-903).

The checks, in the order Kafka applies them (reference §8.3); the first that applies answers:
 1. the requester's broker epoch is its registered one             else STALE_BROKER_EPOCH (top level)
 2. the topic id is known                                          else UNKNOWN_TOPIC_ID
    the partition is known                                         else UNKNOWN_TOPIC_OR_PARTITION
 3. request leader epoch or partition epoch ahead of ours          -> NOT_CONTROLLER (we are probably stale)
 4. request leader epoch behind ours                               -> FENCED_LEADER_EPOCH
 5. the requester leads the partition                              else INVALID_REQUEST
 6. request partition epoch behind ours                            -> INVALID_UPDATE_VERSION
 7. new ISR: replicas only, no duplicates, contains the leader     else INVALID_REQUEST
 8. recovery state: known value; RECOVERING only with a one-member ISR; never RECOVERED -> RECOVERING
                                                                   else INVALID_REQUEST
 9. every new-ISR member registered, unfenced, not in controlled shutdown, and (v3) with the given broker
    epoch unless that is -1                                        else INELIGIBLE_REPLICA
10. build the change (unclean election if the topic allows it). If it makes another broker leader (a
    reassignment completed and dropped the requester) -> NEW_LEADER_ELECTED, and the record is still written.
On success the answer echoes the partition as it will be once the record is replayed.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kio.schema.types import BrokerId
from kio.static.primitive import i8, i32

from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.lazy_schema import schema_module
from pykraft.protocol.throttle import ZERO_THROTTLE

from .eligibility import BrokerEligibility
from .partition_change import Election, PartitionChangeBuilder
from .partitions import NO_LEADER_CHANGE, LeaderRecoveryState, PartitionRegistration
from .result import ControllerResult

response_v2 = schema_module("kio.schema.alter_partition.v2.response")
response_v3 = schema_module("kio.schema.alter_partition.v3.response")

if TYPE_CHECKING:
    from .replication import ReplicationControl

SUPPORTED_VERSIONS = (2, 3)
_NO_EPOCH_CHECK = -1


@dataclass(frozen=True, slots=True)
class IsrMember:
    broker_id: int
    broker_epoch: int  # -1: the leader did not say (v2, or a v3 leader without the follower's epoch)


def alter_partition(control: ReplicationControl, request: Any, version: int,
                    brokers: BrokerEligibility) -> ControllerResult:
    assert version in SUPPORTED_VERSIONS, f"AlterPartition v{version} is not served (kio has v2 and v3 only)"
    module = response_v3 if version == 3 else response_v2
    requester = int(request.broker_id)
    if brokers.broker_epoch(requester) != int(request.broker_epoch):
        return ControllerResult(response=_response(module, ErrorCode.STALE_BROKER_EPOCH, ()))
    records: list[object] = []
    topics = []
    for topic_data in request.topics:
        results = [
            _alter_one(control, requester, topic_data.topic_id, partition_data, version, brokers, records, module)
            for partition_data in topic_data.partitions
        ]
        topics.append(module.TopicData(topic_id=topic_data.topic_id, partitions=tuple(results)))
    return ControllerResult(records=tuple(records), response=_response(module, ErrorCode.NONE, topics))


def _alter_one(control: ReplicationControl, requester: int, topic_id: uuid.UUID | None, data: Any, version: int,
               brokers: BrokerEligibility, records: list[object], module: Any) -> Any:
    partition_id = int(data.partition_index)
    new_isr = _new_isr(data, version)
    topic = control.topics.get(topic_id) if topic_id is not None else None
    if topic is None:
        return _error(module, partition_id, ErrorCode.UNKNOWN_TOPIC_ID)
    partition = topic.partitions.get(partition_id)
    if partition is None:
        return _error(module, partition_id, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    error = validate(requester, partition, data, new_isr, brokers)
    if error is not ErrorCode.NONE:
        return _error(module, partition_id, error)
    builder = PartitionChangeBuilder(
        partition, topic.topic_id, partition_id, brokers.is_active,
        election=Election.UNCLEAN if control.unclean_election_enabled(topic.name) else Election.ONLINE,
        target_isr=tuple(m.broker_id for m in new_isr),
        target_recovery=LeaderRecoveryState(int(data.leader_recovery_state)),
    )
    record = builder.build()
    if record is not None:
        records.append(record)
        if record.leader != NO_LEADER_CHANGE and record.leader != requester:
            return _error(module, partition_id, ErrorCode.NEW_LEADER_ELECTED)
        partition = partition.merge(record)
    return module.PartitionData(
        partition_index=i32(partition_id),
        error_code=ErrorCode.NONE,
        leader_id=BrokerId(partition.leader),
        leader_epoch=i32(partition.leader_epoch),
        isr=tuple(BrokerId(b) for b in partition.isr),
        leader_recovery_state=i8(int(partition.leader_recovery_state)),
        partition_epoch=i32(partition.partition_epoch),
    )


def validate(requester: int, partition: PartitionRegistration, data: Any, new_isr: list[IsrMember],
             brokers: BrokerEligibility) -> ErrorCode:
    """Checks 3-9 of the module docstring for one partition; NONE when the change may be built."""
    leader_epoch, partition_epoch = int(data.leader_epoch), int(data.partition_epoch)
    if leader_epoch > partition.leader_epoch or partition_epoch > partition.partition_epoch:
        return ErrorCode.NOT_CONTROLLER
    if leader_epoch < partition.leader_epoch:
        return ErrorCode.FENCED_LEADER_EPOCH
    if requester != partition.leader:
        return ErrorCode.INVALID_REQUEST
    if partition_epoch < partition.partition_epoch:
        return ErrorCode.INVALID_UPDATE_VERSION
    isr_ids = [m.broker_id for m in new_isr]
    replicas = set(partition.replicas)
    if len(set(isr_ids)) != len(isr_ids) or not set(isr_ids) <= replicas or partition.leader not in isr_ids:
        return ErrorCode.INVALID_REQUEST
    recovery = LeaderRecoveryState.parse(int(data.leader_recovery_state))
    if recovery is None:
        return ErrorCode.INVALID_REQUEST
    if recovery is LeaderRecoveryState.RECOVERING and len(isr_ids) > 1:
        return ErrorCode.INVALID_REQUEST
    if partition.leader_recovery_state is LeaderRecoveryState.RECOVERED and recovery is LeaderRecoveryState.RECOVERING:
        return ErrorCode.INVALID_REQUEST
    if any(not _eligible(m, brokers) for m in new_isr):
        return ErrorCode.INELIGIBLE_REPLICA
    return ErrorCode.NONE


def _eligible(member: IsrMember, brokers: BrokerEligibility) -> bool:
    """KIP-841 invariant 1 for one proposed ISR member (KIP-903: a stale incarnation's epoch does not count)."""
    b = member.broker_id
    if not brokers.is_registered(b) or brokers.is_fenced(b) or brokers.in_controlled_shutdown(b):
        return False
    return member.broker_epoch == _NO_EPOCH_CHECK or brokers.broker_epoch(b) == member.broker_epoch


def _new_isr(data: Any, version: int) -> list[IsrMember]:
    if version >= 3:
        return [IsrMember(int(s.broker_id), int(s.broker_epoch)) for s in data.new_isr_with_epochs]
    return [IsrMember(int(b), _NO_EPOCH_CHECK) for b in data.new_isr]


def _error(module: Any, partition_id: int, error: ErrorCode) -> Any:
    # On an error only the index and the code mean anything; the other fields keep the zero values Kafka's
    # generated message class starts with (the schema gives them no defaults).
    return module.PartitionData(
        partition_index=i32(partition_id), error_code=error, leader_id=BrokerId(0), leader_epoch=i32(0),
        isr=(), leader_recovery_state=i8(0), partition_epoch=i32(0),
    )


def _response(module: Any, error: ErrorCode, topics: Any) -> object:
    return module.AlterPartitionResponse(
        throttle_time=ZERO_THROTTLE, error_code=error, topics=tuple(topics))
