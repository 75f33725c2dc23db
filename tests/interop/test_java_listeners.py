"""Kafka's own Java client (kafka-clients 3.9.1) on each listener of brokers with two (ListenerEndpoints.java):
Admin, KafkaProducer and a KafkaConsumer group bootstrapping on INTERNAL or on EXTERNAL (advertised at another
address and port, behind a forwarder), and on PLAINTEXT or SSL. Every node the client is told of is that listener's
endpoint of a broker, and producing and a group's reading work through them."""

from __future__ import annotations

import pytest

from tests.e2e.listener_clusters import Listeners, plain_and_ssl_cluster, split_cluster

from .java_programs import failures

CHECKS = ["describe_cluster_endpoints", "create_topic_on_this_listener", "describe_topic_endpoints",
          "produce_through_this_listener", "consume_group_through_this_listener"]


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory):
    with split_cluster(tmp_path_factory.mktemp("java-split")) as setup:
        yield setup


@pytest.fixture(scope="module")
def plain_and_ssl(tmp_path_factory: pytest.TempPathFactory):
    with plain_and_ssl_cluster(tmp_path_factory.mktemp("java-plain-ssl")) as setup:
        yield setup


def run_on(java, setup: Listeners, listener: str) -> dict:  # JavaPrograms
    expected = ",".join(f"{b}@{h}:{p}" for b, (h, p) in sorted(setup.advertised[listener].items()))
    ca = [setup.ca] if listener == "SSL" else []
    # Bootstrap on the second broker: the first one's endpoint must come from this listener's metadata.
    bootstrap = setup.bootstrap(listener, setup.cluster.broker_ids[1])
    return java.run("ListenerEndpoints", bootstrap, expected, f"java-{listener.lower()}", *ca)


@pytest.mark.parametrize("listener", ["INTERNAL", "EXTERNAL"])
def test_java_client_on_internal_and_external_listeners(java, split, listener):
    before = {b: f.connections for b, f in split.forwarders.items()}
    results = run_on(java, split, listener)
    assert not failures(results, CHECKS)
    through_forwarders = {b: f.connections - before[b] for b, f in split.forwarders.items()}
    if listener == "EXTERNAL":
        assert all(count > 0 for count in through_forwarders.values()), through_forwarders
    else:
        assert not any(through_forwarders.values()), through_forwarders


@pytest.mark.parametrize("listener", ["PLAINTEXT", "SSL"])
def test_java_client_on_plaintext_and_ssl_listeners(java, plain_and_ssl, listener):
    assert not failures(run_on(java, plain_and_ssl, listener), CHECKS)
