"""Partition reassignment (KIP-455) in the simulator: `metadata_reassign` runs the metadata cluster (3 controllers,
4 brokers, the two topics of the metadata scenarios) while a `ReassignmentDriver` keeps moving partitions to drawn
targets and cancelling moves, under broker faults and controller failovers. Every image is checked by the metadata
invariants (KIP-841's FencedNotInIsr among them: a fenced or shutting-down adding replica never joins an ISR or
leads), and after healing:
- liveness: no partition is left reassigning (every move completes once its brokers are back);
- ReassignmentTarget: a partition whose last accepted request was a move holds exactly that target's replicas.
  A request whose answer was lost, or that failed after it may have been written (NOT_CONTROLLER after leadership
  moved, a timeout), leaves its partition unchecked: whether it took effect is unknown, as for any client.

The driver sends AlterPartitionReassignments to the controller it believes active (moving on like the metadata
admin on NOT_CONTROLLER or an unanswered request), one request in flight at a time.
"""

from __future__ import annotations

import random
from typing import Any

from kio.schema.alter_partition_reassignments.v0 import request as alter
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i32

from pykraft.controller.reassignments import ALTER_PARTITION_REASSIGNMENTS
from pykraft.protocol.errors import ErrorCode
from pykraft.sim.engine.world import Params, World
from pykraft.sim.hosts.controller_node import ControllerNode
from pykraft.sim.hosts.metadata_cluster import TopicSpec, attach, build_metadata_cluster
from pykraft.sim.hosts.metadata_wire import Component, ControllerRequest, ControllerResponse
from pykraft.sim.scenarios.common import Plan, new_world, scenario
from pykraft.sim.scenarios.metadata_scenarios import TOPICS, schedule_broker_faults, schedule_controller_failovers
from pykraft.sim.scenarios.workload import newest_leader

REASSIGN_ADMIN = 998  # the driver's endpoint id (the metadata admin is 999)
TIMEOUT_MS = 1500
CANCEL_PROBABILITY = 0.25
Key = tuple[str, int]


class ReassignmentDriver:
    def __init__(self, world: World, controllers: list[int], brokers: list[int], topics: list[TopicSpec],
                 start_ms: int, end_ms: int, every_ms: tuple[int, int]) -> None:
        self.world, self.controllers, self.brokers, self.topics = world, controllers, brokers, topics
        self.rng: random.Random = world.stream("reassign")
        self.end_ms, self.every_ms = end_ms, every_ms
        self.target = 0
        self.request_id = 0
        self.in_flight: tuple[int, int, Key, tuple[int, ...] | None] | None = None  # id, deadline, key, target
        self.last: dict[Key, tuple[int, ...] | None] = {}  # the last accepted request per partition
        self.unknown: set[Key] = set()  # a request of unknown outcome since: not checked
        self.answers: dict[str, int] = {}
        world.endpoints[REASSIGN_ADMIN] = self
        world.checker.enabled = world.checker.enabled | {"ReassignmentTarget"}
        world.scheduler.at(start_ms, self._tick)

    def _tick(self) -> Any:
        now = self.world.scheduler.now_ms
        if now >= self.end_ms:
            return None
        self.world.scheduler.after(self.rng.randint(*self.every_ms), self._tick)
        if self.in_flight is not None:
            if now < self.in_flight[1]:
                return None
            self.unknown.add(self.in_flight[2])  # unanswered: it may or may not have been applied
            self.target = (self.target + 1) % len(self.controllers)
        topic = self.rng.choice(self.topics)
        key = (topic.name, self.rng.randrange(topic.partitions))
        target = None if self.rng.random() < CANCEL_PROBABILITY else tuple(
            self.rng.sample(self.brokers, topic.replication_factor))
        self.request_id += 1
        self.in_flight = (self.request_id, now + TIMEOUT_MS, key, target)
        request = alter.AlterPartitionReassignmentsRequest(topics=(alter.ReassignableTopic(
            name=TopicName(key[0]), partitions=(alter.ReassignablePartition(
                partition_index=i32(key[1]), replicas=None if target is None else tuple(BrokerId(b) for b in target)),)),))
        destination = self.controllers[self.target]
        self.world.send(REASSIGN_ADMIN, destination, ControllerRequest(
            self.request_id, Component.ADMIN, ALTER_PARTITION_REASSIGNMENTS, request), "AlterPartitionReassignments")
        return None, "reassign", f"{key[0]}-{key[1]} -> {'cancel' if target is None else list(target)} @{destination}"

    def deliver(self, envelope: Any) -> Any:
        if not self.world.network.admit(envelope):
            return None
        answer = envelope.payload
        if not isinstance(answer, ControllerResponse) or self.in_flight is None \
                or answer.request_id != self.in_flight[0]:
            return None
        _, _, key, target = self.in_flight
        self.in_flight = None
        top = ErrorCode.of(int(answer.response.error_code))
        error = top if top is not ErrorCode.NONE else ErrorCode.of(
            int(answer.response.responses[0].partitions[0].error_code))
        self.answers[error.name] = self.answers.get(error.name, 0) + 1
        if error is ErrorCode.NONE:
            self.last[key] = target
        elif error in (ErrorCode.NOT_CONTROLLER, ErrorCode.REQUEST_TIMED_OUT, ErrorCode.UNKNOWN_SERVER_ERROR):
            self.unknown.add(key)  # refused before running, or written and then the leadership was lost
            self.target = (self.target + 1) % len(self.controllers)
        return None, "reassigned", f"{key[0]}-{key[1]}: {error.name}"

    # ---- after healing ---------------------------------------------------------------------------------------------
    def gaps(self) -> list[str]:
        leader = newest_leader(self.world)
        if not isinstance(leader, ControllerNode) or not leader.controller.active:
            return ["no active controller"]
        image = leader.committed_image.replication
        gaps = []
        for topic in image.topics.values():
            for index, p in sorted(topic.partitions.items()):
                key = (topic.name, index)
                if p.is_reassigning:
                    gaps.append(f"{topic.name}-{index} still reassigning (adding {list(p.adding_replicas)}, removing "
                                f"{list(p.removing_replicas)}, isr {list(p.isr)})")
                elif self.last.get(key) is not None and key not in self.unknown and p.replicas != self.last[key]:
                    self.world.checker.violation("ReassignmentTarget", None, f"{topic.name}-{index} has replicas "
                                                 f"{list(p.replicas)}, its last accepted target was {self.last[key]}")
        return gaps

    def stats(self) -> dict[str, Any]:
        return {"reassign_answers": ", ".join(f"{k}={v}" for k, v in sorted(self.answers.items())),
                "reassign_accepted": self.answers.get("NONE", 0)}


@scenario("metadata_reassign")
def metadata_reassign(seed: int, trace_size: int | None) -> Plan:
    world = new_world(seed, trace_size, Params(snapshot_every=40, clean_probability=0.5))
    voters, observers = build_metadata_cluster(world, 3, 4)
    faults_end = 9000
    plan = Plan("metadata_reassign", world, voters, observers, faults_end)
    attach(plan, TOPICS, producer=True)
    driver = ReassignmentDriver(world, voters, observers, TOPICS, 2500, faults_end - 500, (100, 400))
    plan.gap_checks.append(driver.gaps)
    plan.stat_hooks.append(driver.stats)
    rng = world.stream("reassign-faults")
    schedule_broker_faults(world, rng, observers, voters, 2000, faults_end, ["crash", "shutdown", "cut", "isolate"])
    if rng.random() < 0.6:
        schedule_controller_failovers(world, rng, 2000, faults_end)
    plan.notes.append(f"3 controllers, brokers {observers}, partition reassignments")
    return plan
