"""A partition reassignment through whole QuorumControllers: its state is only in the metadata log, so a new
active controller (replay) or a snapshot carries it on; fencing and controlled shutdown during a move keep the
KIP-841 rules; ListPartitionReassignments on the controller API."""

from __future__ import annotations

import random

from kio.schema.alter_partition_reassignments.v1 import request as alter_v1
from kio.schema.list_partition_reassignments.v0 import request as list_v0
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i32

from pykraft.controller.controller import QuorumController
from pykraft.controller.reassignments import ALTER_PARTITION_REASSIGNMENTS, LIST_PARTITION_REASSIGNMENTS
from pykraft.protocol.errors import ErrorCode

from .controller_cluster import Quorum, config, kip841_violations


def reassign(quorum: Quorum, topic: str, partition: int, replicas: list[int] | None) -> ErrorCode:
    request = alter_v1.AlterPartitionReassignmentsRequest(topics=(alter_v1.ReassignableTopic(
        name=TopicName(topic), partitions=(alter_v1.ReassignablePartition(
            partition_index=i32(partition),
            replicas=None if replicas is None else tuple(BrokerId(b) for b in replicas)),)),))
    response = quorum.request(ALTER_PARTITION_REASSIGNMENTS, request)
    return ErrorCode(response.responses[0].partitions[0].error_code)


def ongoing(controller: QuorumController) -> dict[tuple[str, int], tuple]:
    response = controller.handle(LIST_PARTITION_REASSIGNMENTS, list_v0.ListPartitionReassignmentsRequest(topics=None),
                                 0, 0).response
    return {(t.name, p.partition_index): (tuple(p.replicas), tuple(p.adding_replicas), tuple(p.removing_replicas))
            for t in response.topics for p in t.partitions}


def registration(controller: QuorumController, topic: str = "t", index: int = 0):
    replication = controller.replication
    return replication.partition(replication.topics_by_name[topic], index)


def started_move() -> Quorum:
    quorum = Quorum(controllers=2)
    quorum.activate(0, now_ms=0)
    quorum.start_brokers(1, 2, 3, 4)
    quorum.create_topic("t", 1, 3, assignments=[[1, 2, 3]])
    assert reassign(quorum, "t", 0, [2, 3, 4]) == ErrorCode.NONE
    return quorum


def test_a_move_started_on_one_controller_completes_on_the_next():
    quorum = started_move()
    quorum.activate(1, now_ms=10)  # fail-over: the second controller only replayed the log
    assert ongoing(quorum.active) == {("t", 0): ((2, 3, 4, 1), (4,), (1,))}
    answer = quorum.alter_isr("t", 0, [1, 2, 3, 4])
    assert answer.topics[0].partitions[0].error_code == ErrorCode.NEW_LEADER_ELECTED
    p = registration(quorum.active)
    assert (p.replicas, p.isr, p.leader, p.adding_replicas, p.removing_replicas) == ((2, 3, 4), (2, 3, 4), 2, (), ())
    assert ongoing(quorum.active) == {}
    quorum.sync(0)
    assert quorum.controllers[0].image() == quorum.controllers[1].image()


def test_a_snapshot_carries_the_adding_and_removing_replicas():
    quorum = started_move()
    records = list(quorum.active.snapshot_records())
    restored = QuorumController(config(9), random.Random(1))
    restored.load_snapshot(records, last_contained_offset=quorum.next_offset - 1)
    assert registration(restored) == registration(quorum.active)
    assert registration(restored).adding_replicas == (4,) and registration(restored).removing_replicas == (1,)


def test_fencing_the_removed_leader_mid_move_elects_an_eligible_leader_and_the_move_goes_on():
    quorum = started_move()
    quorum.heartbeat(1, want_fence=True)  # broker 1 (leader, being removed) asks to be fenced
    p = registration(quorum.active)
    assert 1 not in p.isr and p.leader in (2, 3)
    assert ongoing(quorum.active) == {("t", 0): ((2, 3, 4, 1), (4,), (1,))}
    assert kip841_violations(quorum.active) == []
    quorum.alter_isr("t", 0, [*p.isr, 4])
    p = registration(quorum.active)
    assert (p.replicas, p.adding_replicas, p.removing_replicas) == ((2, 3, 4), (), ())
    assert set(p.isr) == {2, 3, 4} and p.leader in (2, 3) and kip841_violations(quorum.active) == []


def test_a_shutting_down_adding_broker_cannot_join_and_cancelling_takes_it_out():
    quorum = started_move()
    quorum.heartbeat(4, want_shut_down=True)
    answer = quorum.alter_isr("t", 0, [1, 2, 3, 4])
    assert answer.topics[0].partitions[0].error_code == ErrorCode.INELIGIBLE_REPLICA
    assert reassign(quorum, "t", 0, None) == ErrorCode.NONE
    p = registration(quorum.active)
    # Kafka's revert takes the adding replicas out of the list as it stands (2,3,4,1): 2,3,1.
    assert (p.replicas, p.isr, p.leader, p.adding_replicas, p.removing_replicas) == ((2, 3, 1), (1, 2, 3), 1, (), ())
    assert reassign(quorum, "t", 0, None) == ErrorCode.NO_REASSIGNMENT_IN_PROGRESS
    assert kip841_violations(quorum.active) == []
