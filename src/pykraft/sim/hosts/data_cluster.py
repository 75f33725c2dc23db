"""A simulated cluster with its data plane under load: the metadata cluster (metadata_cluster.py) plus the data
checker (data_invariants.py), producers (data_workload.py) and a fault driver that keeps the faults within what
Kafka promises to survive.

`FaultBudget` strikes a fault only while the cluster is whole: every broker up and unfenced, every partition of the
data topics with its full ISR. So at most one replica of a partition is ever failed or out of sync (RF 3,
min.insync.replicas 2: RF - min.insync = 1) and "no acknowledged acks=all record is lost" must hold.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pykraft.broker.actions import BrokerState
from pykraft.sim.checks.data_invariants import DataChecker
from pykraft.sim.engine.node import Status
from pykraft.sim.engine.world import Params, World
from pykraft.sim.hosts.brokers import BrokerNode
from pykraft.sim.hosts.controller_node import ControllerNode
from pykraft.sim.hosts.metadata_cluster import MetadataAdmin, TopicSpec, attach, build_metadata_cluster
from pykraft.sim.scenarios.common import Plan, new_world
from pykraft.sim.scenarios.data_workload import Producer, RecordDeleter
from pykraft.sim.scenarios.faults import Traced, at

DATA_TOPIC = "data"
PARTITIONS = 3
REPLICATION_FACTOR = 3
MIN_INSYNC = 2
PRODUCE_FROM_MS = 1500
BUDGET_RETRY_MS = 200


@dataclass(frozen=True, slots=True)
class ProducerSpec:
    acks: int
    idempotent: bool
    interval_ms: int = 30


ALL_KINDS = (ProducerSpec(-1, True), ProducerSpec(-1, False), ProducerSpec(1, False), ProducerSpec(0, False),
             ProducerSpec(1, True))


@dataclass
class DataCluster:
    plan: Plan
    admin: MetadataAdmin
    checker: DataChecker
    producers: list[Producer]
    deleter: RecordDeleter


def build_data_cluster(name: str, seed: int, trace_size: int | None, faults_end_ms: int, *,
                       producers: tuple[ProducerSpec, ...] = ALL_KINDS, loss_allowed: bool = False,
                       topic_configs: tuple[tuple[str, str], ...] = (), unclean_check_interval_ms: int = 300_000,
                       controllers: int = 3, brokers: int = 3, params: Params | None = None,
                       extra_topics: tuple[TopicSpec, ...] = ()) -> DataCluster:
    world = new_world(seed, trace_size, params or Params(snapshot_every=40, clean_probability=0.5))
    voters, observers = build_metadata_cluster(world, controllers, brokers, min_insync=MIN_INSYNC,
                                               unclean_check_interval_ms=unclean_check_interval_ms)
    plan = Plan(name, world, voters, observers, faults_end_ms)
    admin = attach(plan, [TopicSpec(DATA_TOPIC, PARTITIONS, REPLICATION_FACTOR, topic_configs), *extra_topics])
    checker = DataChecker(world, loss_allowed=loss_allowed)
    world.data_checker = checker  # type: ignore[attr-defined]
    started = []
    for index, spec in enumerate(producers):
        producer = Producer(world, index, DATA_TOPIC, PARTITIONS, spec.acks, spec.idempotent, spec.interval_ms,
                            faults_end_ms)
        world.scheduler.at(PRODUCE_FROM_MS, _start, producer)
        started.append(producer)
    deleter = RecordDeleter(world, DATA_TOPIC, PARTITIONS)
    plan.gap_checks.append(lambda: [f"producer {p.id} waits for {sorted(p.in_flight)}" for p in started
                                    if not p.idle()] + checker.gaps())
    plan.end_checks.append(checker.check_consumable)
    plan.stat_hooks.append(lambda: {**checker.stats(), **_producer_stats(started), **_fetch_stats(world)})
    plan.notes.append(", ".join(p.describe() for p in started))
    return DataCluster(plan, admin, checker, started, deleter)


def _start(producer: Producer) -> Traced:
    producer.start()
    return None, "producer", f"{producer.id}: {producer.describe()}"


def _producer_stats(producers: list[Producer]) -> dict[str, Any]:
    errors: dict[str, int] = {}
    for p in producers:
        for name, count in p.stats.errors.items():
            errors[name] = errors.get(name, 0) + count
    return {"produce_sent/acked/retries/gave_up": "/".join(str(sum(getattr(p.stats, k) for p in producers))
                                                          for k in ("sent", "acked", "retries", "gave_up")),
            "produce_errors": dict(sorted(errors.items()))}


def _fetch_stats(world: World) -> dict[str, Any]:
    brokers = [n for n in world.nodes.values() if isinstance(n, BrokerNode)]
    live = [b.data for b in brokers if b.data is not None]
    return {"fetch_rounds": sum(d.rounds for d in live),
            "fetcher_truncations": sum(b.truncations for b in brokers) + sum(d.truncations for d in live)}


# ---- faults within the budget -------------------------------------------------------------------------------------
def cluster_whole(world: World, brokers: list[int]) -> bool:
    """Every broker running as the incarnation the active controller has registered (a restarted broker that has
    not registered again is not whole: its old registration still looks healthy), unfenced, with its partition logs
    open; every data partition led, with its full ISR and every replica's log at the leader's log end."""
    image = None
    for node in world.nodes.values():
        if isinstance(node, ControllerNode) and node.status is Status.UP and node.controller.active:
            image = node.committed_image
    if image is None:
        return False
    ends: dict[tuple[Any, int], set[int]] = {}
    for broker_id in brokers:
        node = world.nodes[broker_id]
        registration = image.cluster.registration(broker_id)
        lifecycle = node.lifecycle
        if node.status is not Status.UP or registration is None or registration.fenced \
                or registration.in_controlled_shutdown or lifecycle is None \
                or lifecycle.state is not BrokerState.RUNNING or registration.epoch != lifecycle.broker_epoch \
                or node.data is None or not node.data.open:
            return False
        for (_, index), replica in node.data.host.replicas.items():
            ends.setdefault((replica.topic_id, index), set()).add(replica.log.end_offset())
    for topic in image.replication.topics.values():
        for index, p in topic.partitions.items():
            if len(p.isr) < len(p.replicas) or p.leader < 0 or len(ends.get((topic.topic_id, index), {0})) > 1:
                return False
    return True


class FaultBudget:
    """Strikes `fault` at `time_ms` or, if the cluster is not whole then, at the first probe when it is (before
    `deadline_ms`); `undo` follows after `lasting_ms`."""

    def __init__(self, world: World, brokers: list[int], deadline_ms: int) -> None:
        self.world, self.brokers, self.deadline_ms = world, brokers, deadline_ms
        self.struck = self.skipped = 0

    def strike(self, time_ms: int, fault: Callable[[World], Traced], undo: Callable[[World], Traced] | None,
               lasting_ms: int, then: Callable[[int], None] | None = None) -> None:
        at(self.world, time_ms, self._attempt, fault, undo, lasting_ms, then)

    def _attempt(self, world: World, fault: Callable[[World], Traced], undo: Callable[[World], Traced] | None,
                 lasting_ms: int, then: Callable[[int], None] | None) -> Traced:
        now = world.scheduler.now_ms
        if not cluster_whole(world, self.brokers):
            if now + BUDGET_RETRY_MS < self.deadline_ms:
                at(world, now + BUDGET_RETRY_MS, self._attempt, fault, undo, lasting_ms, then)
            else:
                self.skipped += 1
            return None, "fault-wait", "the cluster is not whole yet"
        self.struck += 1
        end = min(now + lasting_ms, self.deadline_ms)
        if undo is not None:
            at(world, end, lambda w: undo(w))
        if then is not None:
            then(end)
        return fault(world)
