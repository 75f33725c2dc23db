"""A simulated KRaft cluster: controllers (ControllerNode voters) and brokers (BrokerNode observers), the admin
that creates the topics, and the metadata liveness conditions and statistics.

The admin sends CreateTopics to the controller it believes active (starting with node 0), moving to the next
controller on NOT_CONTROLLER or when a request is unanswered for ADMIN_TIMEOUT_MS, and retries the topics that
failed otherwise (e.g. INVALID_REPLICATION_FACTOR while too few brokers are unfenced) every ADMIN_RETRY_MS until
each one exists.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kio.schema.create_topics.v7 import request as ct_req
from kio.schema.types import TopicName
from kio.static.primitive import i16, i32

from pykraft.broker.actions import BrokerState
from pykraft.controller.controller import CREATE_TOPICS, ControllerConfig
from pykraft.controller.features import DEFAULT_SUPPORTED_FEATURES
from pykraft.protocol.errors import ErrorCode
from pykraft.raft.voter_set import Endpoint, VoterSet
from pykraft.sim.scenarios import faults
from pykraft.sim.scenarios.admin import voter_node
from pykraft.sim.hosts.brokers import BrokerNode, BrokerSettings
from pykraft.sim.hosts.controller_node import ControllerNode
from pykraft.sim.engine.disk import SimDisk, SimLog
from pykraft.sim.checks.metadata_invariants import MetadataChecker
from pykraft.sim.hosts.metadata_wire import METADATA_ADMIN, Component, ControllerRequest, ControllerResponse
from pykraft.sim.engine.node import CLUSTER_ID, Status
from pykraft.sim.scenarios.common import CONFIG, Plan, bootstrap_log
from pykraft.sim.engine.scheduler import NodeClock
from pykraft.sim.engine.wire import BASE_PORT, HOST, LISTENER
from pykraft.sim.scenarios.workload import newest_leader
from pykraft.sim.engine.world import World

ADMIN_TIMEOUT_MS = 1500
ADMIN_RETRY_MS = 200
SESSION_TIMEOUT_MS = 4000
FEATURES = tuple(sorted(DEFAULT_SUPPORTED_FEATURES.items()))


@dataclass(frozen=True, slots=True)
class TopicSpec:
    name: str
    partitions: int
    replication_factor: int
    configs: tuple[tuple[str, str], ...] = ()  # CreateTopics configs (e.g. unclean.leader.election.enable)


def build_metadata_cluster(world: World, controllers: int, brokers: int, min_insync: int = 1,
                           unclean_check_interval_ms: int = 300_000) -> tuple[list[int], list[int]]:
    """Controllers 0..n-1 formatted with the bootstrap snapshot; brokers n.. formatted empty (observers)."""
    world.metadata_checker = MetadataChecker(world)  # type: ignore[attr-defined]
    rng = world.stream("cluster")
    controller_ids = list(range(controllers))
    broker_ids = list(range(controllers, controllers + brokers))
    bootstrap = tuple(Endpoint(LISTENER, HOST, BASE_PORT + i) for i in controller_ids)
    settings = BrokerSettings(CLUSTER_ID, FEATURES, session_timeout_ms=SESSION_TIMEOUT_MS, min_insync_replicas=min_insync)
    for i in controller_ids + broker_ids:
        disk = SimDisk(world.new_directory_id(), SimLog())
        if i in controller_ids:
            config = ControllerConfig(node_id=i, cluster_id=CLUSTER_ID, session_timeout_ms=SESSION_TIMEOUT_MS,
                                      leader_imbalance_check_interval_ms=5000,
                                      unclean_check_interval_ms=unclean_check_interval_ms)
            node: Any = ControllerNode(world, i, disk, CONFIG, bootstrap, NodeClock(), controller_config=config)
        else:
            node = BrokerNode(world, i, disk, CONFIG, bootstrap, NodeClock(), settings=settings)
        world.nodes[i] = node
        world.endpoints[i] = node
    initial = VoterSet.of(voter_node(world, i) for i in controller_ids)
    for i in controller_ids:
        world.nodes[i].disk.log = bootstrap_log(initial)
    for i in controller_ids + broker_ids:
        world.scheduler.at(rng.randint(0, 50), faults.restart, world, i)
    return controller_ids, broker_ids


class MetadataAdmin:
    def __init__(self, world: World, controllers: list[int], topics: list[TopicSpec], start_ms: int) -> None:
        self.world = world
        self.controllers = controllers
        self.pending = {t.name: t for t in topics}
        self.created: list[str] = []
        self.target = 0
        self.request_id = 0
        self.in_flight: tuple[int, int] | None = None  # (request id, deadline)
        self.errors: dict[str, int] = {}
        world.endpoints[METADATA_ADMIN] = self
        world.scheduler.at(start_ms, self._attempt)

    def done(self) -> bool:
        return not self.pending

    def _attempt(self) -> Any:
        if not self.pending:
            return None
        now = self.world.scheduler.now_ms
        self.world.scheduler.after(ADMIN_RETRY_MS, self._attempt)
        if self.in_flight is not None:
            if now < self.in_flight[1]:
                return None
            self._next_controller()  # unanswered: try another controller
        self.request_id += 1
        self.in_flight = (self.request_id, now + ADMIN_TIMEOUT_MS)
        request = ct_req.CreateTopicsRequest(topics=tuple(
            ct_req.CreatableTopic(name=TopicName(t.name), num_partitions=i32(t.partitions),
                                  replication_factor=i16(t.replication_factor), assignments=(),
                                  configs=tuple(ct_req.CreatableTopicConfig(name=k, value=v) for k, v in t.configs))
            for t in self.pending.values()))
        target = self.controllers[self.target]
        self.world.send(METADATA_ADMIN, target, ControllerRequest(self.request_id, Component.ADMIN, CREATE_TOPICS,
                                                                  request), "CreateTopicsRequest")
        return None, "create-topics", f"{sorted(self.pending)} -> {target}"

    def _next_controller(self) -> None:
        self.target = (self.target + 1) % len(self.controllers)

    def deliver(self, envelope: Any) -> Any:
        if not self.world.network.admit(envelope):
            return None
        answer = envelope.payload
        if not isinstance(answer, ControllerResponse) or self.in_flight is None \
                or answer.request_id != self.in_flight[0]:
            return None
        self.in_flight = None
        outcome = []
        for result in answer.response.topics:
            error = ErrorCode.of(int(result.error_code))
            outcome.append(f"{result.name}:{error.name}")
            if error in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS) and result.name in self.pending:
                del self.pending[result.name]
                self.created.append(result.name)
            else:
                self.errors[error.name] = self.errors.get(error.name, 0) + 1
                if error is ErrorCode.NOT_CONTROLLER:
                    self._next_controller()
        return None, "topics", " ".join(outcome)


# ---- liveness and statistics -------------------------------------------------------------------------------------
def metadata_gaps(plan: Plan, admin: MetadataAdmin) -> list[str]:
    """After healing: an active controller whose committed image has every live broker registered, unfenced and
    not shutting down (and the broker RUNNING), and a leader for every partition with a live replica."""
    world = plan.world
    leader = newest_leader(world)
    if not isinstance(leader, ControllerNode) or not leader.controller.active:
        return ["no active controller"]
    image = leader.committed_image
    gaps: list[str] = [] if admin.done() else [f"topics {sorted(admin.pending)} not created"]
    live = {i for i in plan.observers if world.nodes[i].status is Status.UP}
    for broker_id in sorted(live):
        node = world.nodes[broker_id]
        registration = image.cluster.registration(broker_id)
        if registration is None or registration.fenced or registration.in_controlled_shutdown:
            gaps.append(f"broker {broker_id} is {'unregistered' if registration is None else 'fenced/shutting'}")
        elif node.lifecycle is None or node.lifecycle.state is not BrokerState.RUNNING:
            gaps.append(f"broker {broker_id} is {None if node.lifecycle is None else node.lifecycle.state.value}")
    for topic in image.replication.topics.values():
        for pid, p in topic.partitions.items():
            if p.leader == -1 and live & set(p.replicas):
                gaps.append(f"{topic.name}-{pid} has no leader (isr {list(p.isr)})")
    return gaps


def metadata_stats(plan: Plan, admin: MetadataAdmin) -> dict[str, Any]:
    world = plan.world
    controllers = [world.nodes[i] for i in plan.voters]
    brokers = [world.nodes[i] for i in plan.observers]
    checker = world.metadata_checker  # type: ignore[attr-defined]
    leader = newest_leader(world)
    image = leader.committed_image if isinstance(leader, ControllerNode) else None
    written: dict[str, int] = {}
    for c in controllers:
        for name, count in c.written.items():
            written[name] = written.get(name, 0) + count
    return {
        "activations": sum(c.activations for c in controllers),
        "rebuilds": sum(c.rebuilds for c in controllers),
        "not_controller": sum(c.not_controller_answers for c in controllers),
        "broker_starts": sum(b.starts for b in brokers),
        "clean_broker_stops": sum(b.clean_stops for b in brokers),
        "image_checks": checker.checks,
        "sole_fenced_isr_seen": checker.isr_exceptions_seen,
        "topics_created": len(admin.created),
        "partitions": 0 if image is None else image.replication.partition_count(),
        "metadata_errors": sum(c.controller.metadata_errors for c in controllers),
        "isr_shrinks/expands": "/".join(str(sum(b.isr_counts()[k] for b in brokers)) for k in (0, 1)),
        "written": ", ".join(f"{n.removesuffix('Record').split('RecordV')[0]}={c}" for n, c in sorted(written.items())),
    }


def attach(plan: Plan, topics: list[TopicSpec], start_ms: int = 500, producer: bool = False) -> MetadataAdmin:
    """The admin creating `topics`; with `producer`, an acks=1 producer writes to the first one until the faults
    end, so that replication (and the ISR it drives) has something to do, checked by a data checker that allows
    losses (these scenarios go beyond RF - min.insync.replicas failures: outages of every broker)."""
    admin = MetadataAdmin(plan.world, plan.voters, topics, start_ms)
    plan.gap_checks.append(lambda: metadata_gaps(plan, admin))
    plan.stat_hooks.append(lambda: metadata_stats(plan, admin))
    if producer:
        from pykraft.sim.checks.data_invariants import DataChecker
        from pykraft.sim.scenarios.data_workload import Producer

        world = plan.world
        world.data_checker = DataChecker(world, loss_allowed=True)  # type: ignore[attr-defined]
        writer = Producer(world, 90, topics[0].name, topics[0].partitions, 1, False, 40, plan.faults_end_ms)
        world.scheduler.at(start_ms + 1000, writer.start)
    return admin
