"""Helpers of the data-plane process tests: a 3-broker cluster, a stock-client workload and its checker."""

from __future__ import annotations

import signal
from collections import Counter
from dataclasses import dataclass

from pykraft.node.local_cluster import LocalCluster, free_ports

from .helpers import FAST_TIMEOUTS, brokers_serving, wait_for
from .metadata_probe import image_of

LAG_MS = 4000
DATA_PLANE_TIMING = {
    **FAST_TIMEOUTS,
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "300",
    "replica.lag.time.max.ms": str(LAG_MS),
    "min.insync.replicas": "2",
}


@dataclass(frozen=True)
class QueueCheck:
    """What a consumer read back compared with what the producer had acknowledged."""

    acknowledged: int
    consumed: int
    lost: tuple[int, ...]
    duplicated: tuple[int, ...]
    reordered: int

    @classmethod
    def of(cls, acknowledged: set[int], consumed: list[int]) -> QueueCheck:
        counts = Counter(consumed)
        reordered = sum(1 for a, b in zip(consumed, consumed[1:]) if b <= a)
        return cls(len(acknowledged), len(consumed), tuple(sorted(acknowledged - set(consumed))),
                   tuple(sorted(v for v, n in counts.items() if n > 1)), reordered)


def start_cluster(root, topic: str, properties: dict[str, str] | None = None, partitions: int = 1, *,
                  metrics: bool = False) -> LocalCluster:
    """One controller, three brokers, and `topic` with `partitions` partitions of replication factor 3, each
    committed with a full ISR. `metrics`: every node serves Prometheus metrics (`pykraft.metrics.port` in its
    `extra`)."""
    cluster = LocalCluster(root, controllers=1, brokers=3, properties={**DATA_PLANE_TIMING, **(properties or {})})
    if metrics:
        for node, port in zip(cluster.nodes.values(), free_ports(len(cluster.nodes))):
            node.extra["pykraft.metrics.port"] = str(port)
    cluster.format_all()
    cluster.start_all()
    broker = cluster.broker_ids[0]

    def created() -> bool:
        result = cluster.cli("topics", "create", "--bootstrap-server", f"127.0.0.1:{cluster.nodes[broker].port}",
                             "--topic", topic, "--partitions", str(partitions), "--replication-factor", "3",
                             check=False)
        return result.returncode == 0

    wait_for(created, "the topic created (every broker unfenced first)")
    def full_isr(index: int) -> bool:
        state = partition(cluster, topic, index)
        return state is not None and len(state.isr) == 3

    wait_for(lambda: all(full_isr(index) for index in range(partitions)), "the partitions committed with a full ISR")
    return cluster


def wait_every_broker_unfenced(cluster: LocalCluster) -> None:
    """After a restart: a broker serves (and counts for a topic's replication factor) once it is unfenced."""
    def unfenced() -> bool:
        listed = cluster.cli("brokers", "list", "--json", "--bootstrap-controller", cluster.bootstrap_servers(),
                             check=False)
        return listed.returncode == 0 and listed.stdout.count('"fenced": false') == len(cluster.broker_ids)

    wait_for(unfenced, "every broker registered and unfenced")
    wait_for(lambda: brokers_serving(cluster), "every broker taking connections")


def stop_cluster(cluster: LocalCluster) -> None:
    """Teardown: resume any paused node, then stop them all."""
    for node in cluster.nodes.values():
        if node.is_running():
            try:
                cluster.signal(node.node_id, signal.SIGCONT)
            except ProcessLookupError:
                pass
    cluster.stop_all(timeout=20)


def partition(cluster: LocalCluster, topic: str, index: int = 0):
    image = image_of(cluster.nodes[cluster.controller_ids[0]])
    topic_id = image.topic_id(topic)
    return None if topic_id is None else image.partition(topic_id, index)


def bootstrap(cluster: LocalCluster) -> str:
    return ",".join(f"127.0.0.1:{cluster.nodes[b].port}" for b in cluster.broker_ids)
