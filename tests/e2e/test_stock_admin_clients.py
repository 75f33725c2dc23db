"""Issue 15: stock admin clients against 3 controllers + 1 broker started through the CLI.

Each client bootstraps once from the broker and once from a controller and creates a topic with a config, describes
it and its configs, alters a config (IncrementalAlterConfigs for librdkafka, AlterConfigs for the others), adds
partitions and deletes it; an unknown config name is refused with Kafka's message.
Before the fix every client failed: Metadata's controller_id named the raft leader, a controller absent from the
broker list (kafka-python: UnknownBrokerIdError, aiokafka: AttributeError, librdkafka: waiting for controller), and
librdkafka's Metadata v9+ request (3 trailing bytes, its issue 5049) made the node close the connection.
Waits poll for a condition (a broker's metadata cache follows the controller's commit a moment later).
"""

from __future__ import annotations

import json

import pytest

from pykraft.node.local_cluster import LocalCluster

from .helpers import FAST_TIMEOUTS, brokers_serving, wait_for
from .stock_admins import ADMINS

BROKER = 4
CONTROLLER = 2  # not necessarily the active one: every controller serves Metadata


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    cluster = LocalCluster(tmp_path_factory.mktemp("stock") / "cluster", controllers=3, brokers=1,
                           properties={**FAST_TIMEOUTS, "broker.heartbeat.interval.ms": "300"})
    cluster.format_all()
    cluster.start_all()

    def broker_unfenced() -> bool:
        listed = cluster.cli("brokers", "list", "--json", "--bootstrap-controller", cluster.bootstrap_servers())
        return any(b["id"] == BROKER and not b["fenced"] for b in json.loads(listed.stdout))
    wait_for(broker_unfenced, "the broker to be registered and unfenced")
    wait_for(lambda: brokers_serving(cluster), "the broker taking connections")
    yield cluster
    cluster.stop_all(timeout=20)


@pytest.mark.parametrize("through", [BROKER, CONTROLLER], ids=["via-broker", "via-controller"])
@pytest.mark.parametrize("client", sorted(ADMINS))
def test_create_describe_delete_a_topic(cluster, client, through):
    admin = ADMINS[client](f"127.0.0.1:{cluster.nodes[through].port}")
    topic = f"{client}-{through}".replace("-", "_")
    try:
        admin.create(topic, 3, 1, {"retention.ms": "1000"})
        assert wait_for(lambda: admin.partitions(topic) == 3, f"{topic} described with 3 partitions", timeout=30)
        assert topic in admin.topics()
        assert wait_for(lambda: admin.config(topic, "retention.ms") == "1000", "retention.ms described", timeout=30)
        assert admin.config(topic, "segment.bytes") == "1073741824"  # Kafka's default
        admin.set_config(topic, "retention.ms", "2000")
        assert wait_for(lambda: admin.config(topic, "retention.ms") == "2000", "retention.ms altered", timeout=30)
        admin.add_partitions(topic, 5)
        assert wait_for(lambda: admin.partitions(topic) == 5, f"{topic} with 5 partitions", timeout=30)
        # each client raises its own exception type; all of them carry Kafka's message
        with pytest.raises(Exception, match="Unknown topic config name: foo.bar"):
            admin.create(topic + "_bad", 1, 1, {"foo.bar": "1"})
        admin.delete(topic)
        assert wait_for(lambda: topic not in admin.topics(), f"{topic} gone", timeout=30)
    finally:
        admin.close()


def test_confluent_list_topics_returns_every_topic(cluster):
    names = {f"listed_{i}" for i in range(3)}
    creator = ADMINS["kafka-python"](f"127.0.0.1:{cluster.nodes[BROKER].port}")
    try:
        for name in sorted(names):
            creator.create(name, 1, 1)
    finally:
        creator.close()
    for node in (BROKER, CONTROLLER):
        admin = ADMINS["confluent-kafka"](f"127.0.0.1:{cluster.nodes[node].port}")
        assert wait_for(lambda: names <= admin.topics(), f"every topic listed through node {node}", timeout=30)
