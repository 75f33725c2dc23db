"""Broker configs through Kafka's own Java Admin (kafka-clients 3.9.1, BrokerConfigs.java), issue 35.

describeConfigs of a broker (every key, Kafka's sources and synonyms, read-only flags, types, documentation, masked
passwords), of the cluster default and of the broker's loggers; incrementalAlterConfigs of the cluster default and
of one broker, whose override is listed first among the synonyms; refusals in Kafka's exception types; createTopics'
answer with the new topic's configs, partition count and replication factor (validateOnly).
"""

from __future__ import annotations

import pytest

from tests.e2e.data_plane_checks import DATA_PLANE_TIMING, stop_cluster
from tests.e2e.helpers import wait_for

from pykraft.node.local_cluster import LocalCluster

from .conftest import brokers_of, unfenced_brokers
from .java_programs import failures

CHECKS = ["describe_broker_with_synonyms_and_documentation", "alter_default_and_override",
          "refuse_a_key_kafka_cannot_change_dynamically", "refuse_a_key_pykraft_does_not_implement",
          "describe_broker_loggers", "create_topic_returns_its_configs"]


@pytest.fixture(scope="module")
def results(java, tmp_path_factory):
    cluster = LocalCluster(tmp_path_factory.mktemp("java-configs") / "cluster", controllers=1, brokers=2,
                           properties=DATA_PLANE_TIMING)
    cluster.format_all()
    cluster.start_all()
    try:
        wait_for(lambda: len(unfenced_brokers(cluster)) == 2, "two unfenced brokers", timeout=120)
        yield java.run("BrokerConfigs", brokers_of(cluster), str(cluster.broker_ids[0]),
                       DATA_PLANE_TIMING["min.insync.replicas"])
    finally:
        stop_cluster(cluster)


@pytest.mark.parametrize("check", CHECKS)
def test_kafka_java_admin_broker_configs(results, check):
    assert not failures(results, [check])
