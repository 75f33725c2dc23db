"""Several listeners per broker, as Kafka users set them up, with real processes and stock clients.

Two clusters of one controller and two brokers (listener_clusters.py):
- `split`: each broker has INTERNAL (the inter-broker listener) and EXTERNAL, advertised at another address and
  port behind a forwarder. A client is told the endpoints of the listener it came in on: through EXTERNAL only
  127.0.0.2 addresses, so its data goes through the forwarders; replication never does.
- `plain_and_ssl`: each broker has PLAINTEXT and SSL listeners, the replica fetchers use SSL.
kafka-python and confluent-kafka (librdkafka) bootstrap on one broker's listener, and must find the partition's
leader (the other broker) through the endpoints that listener's Metadata gives them.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import pytest
from kio.schema.describe_cluster.v2.request import DescribeClusterRequest
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest
from kio.schema.metadata.v12 import request as md_v12
from kio.static.primitive import i8

from pykraft.net.client import Connection
from pykraft.protocol.codec import decode_response, encode_request
from pykraft.protocol.errors import ErrorCode

from .data_plane_checks import partition
from .helpers import wait_for
from .listener_clusters import Listeners, plain_and_ssl_cluster, split_cluster

kafka = pytest.importorskip("kafka")
confluent_kafka = pytest.importorskip("confluent_kafka")

RECORDS = 40
DEADLINE_S = 60.0


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory):
    with split_cluster(tmp_path_factory.mktemp("split")) as setup:
        yield setup


@pytest.fixture(scope="module")
def plain_and_ssl(tmp_path_factory: pytest.TempPathFactory):
    with plain_and_ssl_cluster(tmp_path_factory.mktemp("plain-ssl")) as setup:
        yield setup


# ---- raw requests --------------------------------------------------------------------------------------------
def _ask(address: tuple[str, int], message: Any, ssl_context: Any = None) -> Any:
    async def exchange() -> Any:
        connection = await Connection.open(*address, ssl_context=ssl_context)
        try:
            payload = await connection.request(
                lambda cid: encode_request(message, correlation_id=cid, client_id="listener-probe")[4:],
                timeout_ms=10_000)
        finally:
            await connection.close()
        return decode_response(payload, int(message.__api_key__), int(message.__version__)).message

    return asyncio.run(exchange())


ALL_TOPICS = md_v12.MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                    include_topic_authorized_operations=False)


def _listed(answer: Any) -> dict[int, tuple[str, int]]:
    return {int(b.node_id if hasattr(b, "node_id") else b.broker_id): (b.host, int(b.port)) for b in answer.brokers}


def _with_topic(answer: Any, topic: str) -> Any:
    return answer if any(t.name == topic for t in answer.topics) else None


@pytest.mark.parametrize("listener", ["INTERNAL", "EXTERNAL"])
def test_each_listener_answers_with_its_own_endpoints(split, listener):
    # Nothing went through the forwarders before clients used EXTERNAL: replication is on INTERNAL only.
    if listener == "INTERNAL":
        assert sum(f.connections for f in split.forwarders.values()) == 0
    expected = split.advertised[listener]
    for broker, address in expected.items():
        # The topic's ISR was read from the controller's log: a broker's image follows within a fetch.
        metadata = wait_for(lambda: _with_topic(_ask(address, ALL_TOPICS), "replicated"),
                            f"broker {broker}'s metadata listing the topic")
        assert _listed(metadata) == expected
        (topic,) = [t for t in metadata.topics if t.name == "replicated"]
        assert topic.error_code == ErrorCode.NONE and topic.partitions[0].error_code == ErrorCode.NONE
        described = _ask(address, DescribeClusterRequest(include_cluster_authorized_operations=False,
                                                         endpoint_type=i8(1), include_fenced_brokers=True))
        assert _listed(described) == expected
        assert int(described.controller_id) in expected  # a broker the client can reach on this listener
        # Kafka's brokers answer only endpoint type 1: the controllers are asked on their own listener.
        controllers = _ask(address, DescribeClusterRequest(include_cluster_authorized_operations=False,
                                                           endpoint_type=i8(2), include_fenced_brokers=False))
        assert controllers.error_code == ErrorCode.MISMATCHED_ENDPOINT_TYPE
    if listener == "EXTERNAL":
        assert all(f.connections > 0 for f in split.forwarders.values())


def test_find_coordinator_names_the_coordinator_on_the_requests_listener(split):
    request = FindCoordinatorRequest(key_type=i8(0), coordinator_keys=("g-external", "g-other"))
    address = split.advertised["EXTERNAL"][split.cluster.broker_ids[0]]
    answer = wait_for(lambda: (a := _ask(address, request)) and all(
        c.error_code == ErrorCode.NONE for c in a.coordinators) and a, "the group coordinators (offsets topic)")
    for coordinator in answer.coordinators:
        assert (coordinator.host, int(coordinator.port)) == split.advertised["EXTERNAL"][int(coordinator.node_id)]


# ---- stock clients --------------------------------------------------------------------------------------------
def _leader_and_other(setup: Listeners, topic: str) -> tuple[int, int]:
    leader = partition(setup.cluster, topic).leader
    return leader, next(b for b in setup.cluster.broker_ids if b != leader)


def _kafka_python(servers: str, topic: str, extra: dict[str, Any]) -> tuple[set[tuple[str, int]], set[int], list[int]]:
    producer = kafka.KafkaProducer(bootstrap_servers=servers, acks="all", request_timeout_ms=10_000,
                                   retry_backoff_ms=200, **extra)
    futures = [producer.send(topic, f"rec-{i}".encode()) for i in range(RECORDS)]
    producer.flush(DEADLINE_S)
    seen = {(b.host, b.port) for b in producer._metadata.brokers()}  # what Metadata told it
    acked = {i for i, f in enumerate(futures) if f.succeeded()}
    producer.close(10)
    consumer = kafka.KafkaConsumer(bootstrap_servers=servers, group_id=None, enable_auto_commit=False,
                                   consumer_timeout_ms=2000, **extra)
    read: list[int] = []
    try:
        tp = kafka.TopicPartition(topic, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline and not acked <= set(read):
            read += [int(m.value.decode().split("-")[1]) for m in consumer]
    finally:
        consumer.close()
    return seen, acked, read


def _confluent(servers: str, topic: str, extra: dict[str, Any]) -> tuple[set[tuple[str, int]], set[int], list[int]]:
    acked: set[int] = set()

    def delivered(error: Any, message: Any) -> None:
        if error is None:
            acked.add(int(message.value().decode().split("-")[1]))

    producer = confluent_kafka.Producer({"bootstrap.servers": servers, "acks": "all", "enable.idempotence": True,
                                         "message.timeout.ms": 60_000, **extra})
    for i in range(RECORDS):
        producer.produce(topic, f"rec-{i}".encode(), on_delivery=delivered)
    producer.flush(DEADLINE_S)
    seen = {(b.host, b.port) for b in producer.list_topics(timeout=10).brokers.values()}
    consumer = confluent_kafka.Consumer({"bootstrap.servers": servers, "group.id": f"g-{uuid.uuid4()}",
                                         "enable.auto.commit": False, "auto.offset.reset": "earliest", **extra})
    read: list[int] = []
    try:
        consumer.subscribe([topic])  # a group: FindCoordinator and the coordinator's endpoint on this listener
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline and not acked <= set(read):
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                read.append(int(message.value().decode().split("-")[1]))
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return seen, acked, read


CLIENT_RUNS = {"kafka-python": _kafka_python, "confluent-kafka": _confluent}


def _clients_work_on(setup: Listeners, listener: str, client: str) -> tuple[int, int]:
    topic = f"{listener.lower()}-{client}"
    setup.create(listener, topic)
    leader, other = _leader_and_other(setup, topic)
    host, port = setup.advertised[listener][other]  # bootstrap on the broker that does not lead: it must be found
    seen, acked, read = CLIENT_RUNS[client](f"{host}:{port}", topic, setup.client_config[listener].get(client, {}))
    assert seen == set(setup.advertised[listener].values()), "the client was told this listener's endpoints"
    assert acked == set(range(RECORDS))
    assert set(read) == acked and len(read) == len(acked)
    return leader, other


@pytest.mark.parametrize("client", sorted(CLIENT_RUNS))
@pytest.mark.parametrize("listener", ["INTERNAL", "EXTERNAL"])
def test_stock_clients_bootstrap_produce_and_consume_on_each_listener(split, listener, client):
    before = {b: f.connections for b, f in split.forwarders.items()}
    leader, _ = _clients_work_on(split, listener, client)
    if listener == "EXTERNAL":
        # The leader was reached through its advertised EXTERNAL address (the forwarder), not its bound one.
        assert split.forwarders[leader].connections > before[leader]
    else:
        assert {b: f.connections for b, f in split.forwarders.items()} == before


@pytest.mark.parametrize("client", sorted(CLIENT_RUNS))
@pytest.mark.parametrize("listener", ["PLAINTEXT", "SSL"])
def test_stock_clients_on_plaintext_and_ssl_listeners(plain_and_ssl, listener, client):
    _clients_work_on(plain_and_ssl, listener, client)


def test_the_ssl_listener_answers_with_ssl_endpoints(plain_and_ssl):
    for listener, context in (("PLAINTEXT", None), ("SSL", plain_and_ssl.ssl_context)):
        expected = plain_and_ssl.advertised[listener]
        for address in expected.values():
            assert _listed(_ask(address, ALL_TOPICS, context)) == expected
