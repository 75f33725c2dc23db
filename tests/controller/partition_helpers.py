"""Shared pieces for the partition-side controller tests: broker views, a ReplicationControl that replays results
through the wire encoding (as a follower would read them), and request builders."""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterable, Sequence

from kio.schema.alter_partition.v2 import request as ap_v2
from kio.schema.alter_partition.v3 import request as ap_v3
from kio.schema.create_topics.v7 import request as ct
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i8, i16, i32, i64

from pykraft.controller.eligibility import BrokerFacts, StaticEligibility
from pykraft.controller.partitions import PartitionRegistration
from pykraft.controller.replication import ReplicationControl
from pykraft.controller.result import ControllerResult
from pykraft.records.metadata.frame import decode_metadata_record, encode_metadata_record
from pykraft.records.metadata.schema.partition_record import PartitionRecordV2
from pykraft.records.metadata.schema.topic_record import TopicRecordV0


def epoch_of(broker_id: int) -> int:
    return 100 + broker_id


def brokers(*ids: int, fenced: Iterable[int] = (), shutdown: Iterable[int] = (),
            epochs: dict[int, int] | None = None) -> StaticEligibility:
    fenced, shutdown, epochs = set(fenced), set(shutdown), epochs or {}
    return StaticEligibility({
        b: BrokerFacts(epoch=epochs.get(b, epoch_of(b)), fenced=b in fenced, in_controlled_shutdown=b in shutdown)
        for b in ids})


def topic_id(n: int) -> uuid.UUID:
    return uuid.UUID(int=(0xF00D << 64) | n)


def new_control(seed: int = 7, **kwargs) -> ReplicationControl:
    return ReplicationControl(random.Random(seed), **kwargs)


def apply(control: ReplicationControl, result: ControllerResult | Sequence[object]) -> None:
    """Replay records as a follower sees them: encoded, decoded, then replayed."""
    records = result.records if isinstance(result, ControllerResult) else result
    for record in records:
        control.replay(decode_metadata_record(encode_metadata_record(record)))


def add_partition(control: ReplicationControl, tid: uuid.UUID, partition_id: int, replicas: Sequence[int], *,
                  isr: Sequence[int] | None = None, leader: int | None = None, leader_epoch: int = 0,
                  partition_epoch: int = 0, name: str | None = None, removing: Sequence[int] = (),
                  adding: Sequence[int] = (), recovery: int = 0) -> PartitionRegistration:
    """Create the topic if needed and replay a PartitionRecord with exactly this state."""
    if tid not in control.topics:
        control.replay(TopicRecordV0(name=TopicName(name or f"topic-{tid.int & 0xFFFF}"), topic_id=tid))
    isr = list(replicas) if isr is None else list(isr)
    leader = (isr[0] if isr else -1) if leader is None else leader
    control.replay(PartitionRecordV2(
        partition_id=i32(partition_id), topic_id=tid, replicas=tuple(BrokerId(b) for b in replicas),
        isr=tuple(i32(b) for b in isr), removing_replicas=tuple(BrokerId(b) for b in removing),
        adding_replicas=tuple(BrokerId(b) for b in adding), leader=BrokerId(leader),
        leader_recovery_state=i8(recovery), leader_epoch=i32(leader_epoch), partition_epoch=i32(partition_epoch),
        directories=(uuid.UUID(int=0),) * len(replicas)))
    registration = control.partition(tid, partition_id)
    assert registration is not None
    return registration


def alter_v3(requester: int, tid: uuid.UUID | None, partitions: Sequence[tuple], *, broker_epoch: int | None = None):
    """partitions: (index, leader_epoch, partition_epoch, isr[, recovery]); isr members are ids or (id, epoch)."""
    def state(member) -> ap_v3.BrokerState:
        b, e = member if isinstance(member, tuple) else (member, -1)
        return ap_v3.BrokerState(broker_id=BrokerId(b), broker_epoch=i64(e))

    return ap_v3.AlterPartitionRequest(
        broker_id=BrokerId(requester),
        broker_epoch=i64(epoch_of(requester) if broker_epoch is None else broker_epoch),
        topics=(ap_v3.TopicData(topic_id=tid, partitions=tuple(
            ap_v3.PartitionData(partition_index=i32(p[0]), leader_epoch=i32(p[1]), partition_epoch=i32(p[2]),
                                new_isr_with_epochs=tuple(state(m) for m in p[3]),
                                leader_recovery_state=i8(p[4] if len(p) > 4 else 0))
            for p in partitions)),))


def alter_v2(requester: int, tid: uuid.UUID | None, partitions: Sequence[tuple], *, broker_epoch: int | None = None):
    return ap_v2.AlterPartitionRequest(
        broker_id=BrokerId(requester),
        broker_epoch=i64(epoch_of(requester) if broker_epoch is None else broker_epoch),
        topics=(ap_v2.TopicData(topic_id=tid, partitions=tuple(
            ap_v2.PartitionData(partition_index=i32(p[0]), leader_epoch=i32(p[1]), partition_epoch=i32(p[2]),
                                new_isr=tuple(BrokerId(b) for b in p[3]),
                                leader_recovery_state=i8(p[4] if len(p) > 4 else 0))
            for p in partitions)),))


def creatable(name: str, num_partitions: int = 1, replication_factor: int = 1,
              assignments: dict[int, Sequence[int]] | None = None) -> ct.CreatableTopic:
    return ct.CreatableTopic(
        name=TopicName(name), num_partitions=i32(num_partitions), replication_factor=i16(replication_factor),
        assignments=tuple(ct.CreatableReplicaAssignment(partition_index=i32(p), broker_ids=tuple(BrokerId(b) for b in r))
                          for p, r in (assignments or {}).items()),
        configs=())


def create_request(*topics: ct.CreatableTopic, validate_only: bool = False) -> ct.CreateTopicsRequest:
    return ct.CreateTopicsRequest(topics=tuple(topics), validate_only=validate_only)


def only_partition_result(result: ControllerResult):
    (topic,) = result.response.topics
    (partition,) = topic.partitions
    return partition
