"""Fixtures of the `interop_java` tier: the compiled check programs and a 3-controller, 3-broker cluster."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from pykraft.node.local_cluster import LocalCluster, free_ports

from tests.e2e.data_plane_checks import DATA_PLANE_TIMING, stop_cluster
from tests.e2e.helpers import brokers_serving, wait_for

from .java_programs import JavaPrograms

# A snapshot every few KiB of metadata, so that a short run leaves `.checkpoint` files for Kafka's parser too.
SNAPSHOT_OFTEN = {"metadata.log.max.record.bytes.between.snapshots": "4096"}


@pytest.fixture(scope="session")
def java(tmp_path_factory: pytest.TempPathFactory) -> JavaPrograms:
    return JavaPrograms(tmp_path_factory.mktemp("java-classes"))


def brokers_of(cluster: LocalCluster) -> str:
    return ",".join(f"127.0.0.1:{cluster.nodes[b].port}" for b in cluster.broker_ids)


def unfenced_brokers(cluster: LocalCluster) -> list[int]:
    listed = cluster.cli("brokers", "list", "--bootstrap-controller", cluster.bootstrap_servers(), "--json",
                         check=False)
    if listed.returncode != 0:
        return []
    return [b["id"] for b in json.loads(listed.stdout) if not b["fenced"]]


@contextmanager
def running_cluster(cluster: LocalCluster) -> Iterator[LocalCluster]:
    """`cluster` formatted and started through the CLI, every broker registered and unfenced; stopped after."""
    cluster.format_all()
    cluster.start_all()
    try:
        wait_for(lambda: len(unfenced_brokers(cluster)) == len(cluster.broker_ids), "every broker unfenced",
                 timeout=120)
        wait_for(lambda: brokers_serving(cluster), "every broker taking connections")
        yield cluster
    finally:
        stop_cluster(cluster)


@pytest.fixture(scope="module")
def java_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """Three controllers and three brokers."""
    cluster = LocalCluster(tmp_path_factory.mktemp("interop") / "cluster", controllers=3, brokers=3,
                           properties={**DATA_PLANE_TIMING, **SNAPSHOT_OFTEN})
    for node, port in zip(cluster.nodes.values(), free_ports(len(cluster.nodes))):
        node.extra["pykraft.metrics.port"] = str(port)  # what the Java client's traffic counts (test_java_client)
    with running_cluster(cluster):
        yield cluster
