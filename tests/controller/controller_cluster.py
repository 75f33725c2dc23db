"""A few QuorumControllers over one shared in-memory metadata log, driven the way the runtime will drive them:
the active one handles requests and replays its records at once; the others replay the log when `sync` is called.
Used by the test_controller_* modules."""

from __future__ import annotations

import random
from typing import Any

from kio.schema.alter_partition.v3 import request as ap_req
from kio.schema.create_topics.v7 import request as ct_req
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i16, i32, i64

from pykraft.controller.controller import (
    ALTER_PARTITION,
    BROKER_HEARTBEAT,
    BROKER_REGISTRATION,
    CREATE_TOPICS,
    ControllerConfig,
    QuorumController,
)
from pykraft.controller.result import ControllerResult
from pykraft.records.metadata.schema.feature_level_record import FeatureLevelRecordV0

from .broker_fakes import CLUSTER_ID, MV, SESSION_MS, heartbeat_request, registration_request

BOOTSTRAP = (FeatureLevelRecordV0(name="metadata.version", feature_level=i16(MV)),)


def config(node_id: int, **overrides: Any) -> ControllerConfig:
    return ControllerConfig(node_id=node_id, cluster_id=CLUSTER_ID, session_timeout_ms=SESSION_MS,
                            bootstrap_records=BOOTSTRAP, **overrides)


class Quorum:
    def __init__(self, controllers: int = 2, **overrides: Any) -> None:
        self.controllers = [QuorumController(config(3000 + i, **overrides), random.Random(i))
                            for i in range(controllers)]
        self.log: list[Any] = []
        self.applied = [0] * controllers  # how much of the log each controller has replayed
        self.active_index = 0

    @property
    def active(self) -> QuorumController:
        return self.controllers[self.active_index]

    @property
    def next_offset(self) -> int:
        return len(self.log)

    def write(self, result: ControllerResult) -> ControllerResult:
        """Append the result's records and replay them into the active controller at once."""
        self.sync(self.active_index)
        for record in result.records:
            self.active.replay(record, len(self.log))
            self.log.append(record)
        self.applied[self.active_index] = len(self.log)
        return result

    def sync(self, index: int) -> None:
        controller = self.controllers[index]
        for offset in range(self.applied[index], len(self.log)):
            controller.replay(self.log[offset], offset)
        self.applied[index] = len(self.log)

    def activate(self, index: int, now_ms: int) -> ControllerResult:
        self.controllers[self.active_index].deactivate()
        self.active_index = index
        self.sync(index)
        return self.write(self.active.activate(now_ms))

    def request(self, api_key: int, request: Any, now_ms: int = 0) -> Any:
        return self.write(self.active.handle(api_key, request, now_ms, self.next_offset)).response

    def tick(self, now_ms: int) -> ControllerResult:
        return self.write(self.active.tick(now_ms, self.next_offset))

    # ---- brokers and topics --------------------------------------------------------------------------------------
    def register(self, broker_id: int, inc: int = 1, now_ms: int = 0, **kwargs: Any) -> Any:
        return self.request(BROKER_REGISTRATION, registration_request(broker_id, inc, **kwargs), now_ms)

    def heartbeat(self, broker_id: int, now_ms: int = 0, offset: int | None = None, **kwargs: Any) -> Any:
        epoch = self.active.cluster.broker_epoch(broker_id)
        request = heartbeat_request(broker_id, -1 if epoch is None else epoch,
                                    self.next_offset if offset is None else offset, **kwargs)
        return self.request(BROKER_HEARTBEAT, request, now_ms)

    def start_brokers(self, *broker_ids: int, now_ms: int = 0) -> None:
        for broker_id in broker_ids:
            self.register(broker_id, now_ms=now_ms)
        for broker_id in broker_ids:
            assert not self.heartbeat(broker_id, now_ms=now_ms).is_fenced

    def create_topic(self, name: str, partitions: int, replication: int,
                     assignments: list[list[int]] | None = None) -> Any:
        topic = ct_req.CreatableTopic(
            name=TopicName(name), num_partitions=i32(-1 if assignments else partitions),
            replication_factor=i16(-1 if assignments else replication),
            assignments=tuple(ct_req.CreatableReplicaAssignment(partition_index=i32(i), broker_ids=tuple(a))
                              for i, a in enumerate(assignments or [])), configs=())
        response = self.request(CREATE_TOPICS, ct_req.CreateTopicsRequest(topics=(topic,)))
        assert response.topics[0].error_code == 0, response
        return response

    def alter_isr(self, topic: str, partition_id: int, new_isr: list[int]) -> Any:
        """AlterPartition v3 from the partition's current leader, at the current epochs."""
        replication = self.active.replication
        topic_id = replication.topics_by_name[topic]
        p = replication.partition(topic_id, partition_id)
        cluster = self.active.cluster
        request = ap_req.AlterPartitionRequest(
            broker_id=BrokerId(p.leader), broker_epoch=i64(cluster.broker_epoch(p.leader)),
            topics=(ap_req.TopicData(topic_id=topic_id, partitions=(ap_req.PartitionData(
                partition_index=i32(partition_id), leader_epoch=i32(p.leader_epoch),
                new_isr_with_epochs=tuple(ap_req.BrokerState(broker_id=BrokerId(b),
                                                             broker_epoch=i64(cluster.broker_epoch(b)))
                                          for b in new_isr),
                partition_epoch=i32(p.partition_epoch)),)),))
        return self.request(ALTER_PARTITION, request)

    def partitions(self, controller: QuorumController | None = None) -> list[Any]:
        replication = (controller or self.active).replication
        return [p for t in replication.topics.values() for p in t.partitions.values()]


def kip841_violations(controller: QuorumController) -> list[str]:
    """KIP-841 invariants on an image: no fenced or shutting-down broker leads, nor sits in an ISR with others
    (a partition keeps its last ISR member, leaderless, when that member goes: Kafka never empties an ISR)."""
    cluster = controller.cluster
    problems = []
    for topic in controller.replication.topics.values():
        for pid, p in topic.partitions.items():
            if p.leader >= 0 and not cluster.is_active(p.leader):
                problems.append(f"{topic.name}-{pid}: leader {p.leader} is not active")
            if len(p.isr) > 1:
                problems += [f"{topic.name}-{pid}: {b} in ISR {p.isr}" for b in p.isr if not cluster.is_active(b)]
    return problems
