"""Several listeners per broker, as Kafka users set them up, with real processes and stock clients.

Two clusters of one controller and two brokers:
- `split`: each broker has INTERNAL (127.0.0.1, the inter-broker listener) and EXTERNAL, bound on 127.0.0.1 but
  advertised at 127.0.0.2 on another port, where a forwarder (a NAT, a load balancer) carries connections to the
  bound port. A client is told the endpoints of the listener it came in on: through EXTERNAL only 127.0.0.2
  addresses, so its data goes through the forwarders; replication never does (inter.broker.listener.name=INTERNAL).
- `plain_and_ssl`: each broker has PLAINTEXT and SSL listeners, the replica fetchers use SSL.
kafka-python and confluent-kafka (librdkafka) bootstrap on one broker's listener, and must find the partition's
leader (the other broker) through the endpoints that listener's Metadata gives them.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest
from kio.schema.describe_cluster.v2.request import DescribeClusterRequest
from kio.schema.find_coordinator.v4.request import FindCoordinatorRequest
from kio.schema.metadata.v12 import request as md_v12
from kio.static.primitive import i8

from pykraft.net.client import Connection
from pykraft.net.tls import client_context
from pykraft.node.local_cluster import LocalCluster, free_ports
from pykraft.protocol.codec import decode_response, encode_request
from pykraft.protocol.errors import ErrorCode

from .certs import make_cluster_certs
from .data_plane_checks import partition
from .forwarder import Forwarder
from .helpers import FAST_TIMEOUTS, wait_for

kafka = pytest.importorskip("kafka")
confluent_kafka = pytest.importorskip("confluent_kafka")

TIMING = {**FAST_TIMEOUTS, "broker.heartbeat.interval.ms": "300", "broker.session.timeout.ms": "3000",
          "offsets.topic.replication.factor": "1", "offsets.topic.num.partitions": "2",
          "group.initial.rebalance.delay.ms": "0"}
RECORDS = 40
DEADLINE_S = 60.0


@dataclass
class Listeners:
    """A running cluster and, per broker id, the (host, port) each listener advertises."""

    cluster: LocalCluster
    advertised: dict[str, dict[int, tuple[str, int]]]  # listener -> broker id -> advertised address
    client_config: dict[str, dict[str, dict[str, Any]]]  # listener -> client -> extra client settings
    forwarders: dict[int, Forwarder] = field(default_factory=dict)  # broker id -> its EXTERNAL forwarder
    ssl_context: Any = None


def _start(cluster: LocalCluster) -> None:
    cluster.format_all()
    cluster.start_all()

    def unfenced() -> bool:
        listed = cluster.cli("brokers", "list", "--json", "--bootstrap-controller", cluster.bootstrap_servers(),
                             check=False)
        return listed.returncode == 0 and listed.stdout.count('"fenced": false') == len(cluster.broker_ids)

    wait_for(unfenced, "both brokers registered and unfenced")


def _create(setup: Listeners, listener: str, topic: str) -> None:
    """A 1-partition topic replicated on both brokers, created through `listener`, with a full ISR."""
    host, port = setup.advertised[listener][setup.cluster.broker_ids[0]]
    extra = ["--command-config", str(setup.cluster.root / "client-ssl.properties")] if listener == "SSL" else []
    setup.cluster.cli("topics", "create", "--bootstrap-server", f"{host}:{port}", *extra, "--topic", topic,
                      "--partitions", "1", "--replication-factor", "2")
    wait_for(lambda: (p := partition(setup.cluster, topic)) is not None and len(p.isr) == 2, f"{topic} fully in sync")


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory):
    cluster = LocalCluster(tmp_path_factory.mktemp("split") / "cluster", controllers=1, brokers=2, properties=TIMING)
    advertised: dict[str, dict[int, tuple[str, int]]] = {"INTERNAL": {}, "EXTERNAL": {}}
    forwarders = {}
    for broker in cluster.broker_ids:
        node = cluster.nodes[broker]
        bound, public = free_ports(2)
        node.extra.update({
            "listeners": f"INTERNAL://127.0.0.1:{node.port},EXTERNAL://127.0.0.1:{bound}",
            "advertised.listeners": f"INTERNAL://127.0.0.1:{node.port},EXTERNAL://127.0.0.2:{public}",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT,EXTERNAL:PLAINTEXT",
            "inter.broker.listener.name": "INTERNAL",
        })
        advertised["INTERNAL"][broker] = ("127.0.0.1", node.port)
        advertised["EXTERNAL"][broker] = ("127.0.0.2", public)
        forwarders[broker] = Forwarder(("127.0.0.2", public), ("127.0.0.1", bound)).__enter__()
    setup = Listeners(cluster, advertised, {"INTERNAL": {}, "EXTERNAL": {}}, forwarders)
    try:
        _start(cluster)
        _create(setup, "INTERNAL", "replicated")
        yield setup
    finally:
        cluster.stop_all(timeout=20)
        for forwarder in forwarders.values():
            forwarder.__exit__()


@pytest.fixture(scope="module")
def plain_and_ssl(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("plain-ssl")
    cluster = LocalCluster(root / "cluster", controllers=1, brokers=2, properties=TIMING)
    certs = make_cluster_certs(root / "certs", cluster.broker_ids, intruder_id=99)
    advertised: dict[str, dict[int, tuple[str, int]]] = {"PLAINTEXT": {}, "SSL": {}}
    for broker in cluster.broker_ids:
        node = cluster.nodes[broker]
        (ssl_port,) = free_ports(1)
        node.extra.update({
            "listeners": f"PLAINTEXT://127.0.0.1:{node.port},SSL://127.0.0.1:{ssl_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{node.port},SSL://127.0.0.1:{ssl_port}",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL",
            "inter.broker.listener.name": "SSL",  # the replica fetchers speak TLS
            "ssl.certificate.location": certs.nodes[broker].cert, "ssl.key.location": certs.nodes[broker].key,
            "ssl.ca.location": certs.ca, "ssl.client.auth": "none",
        })
        advertised["PLAINTEXT"][broker] = ("127.0.0.1", node.port)
        advertised["SSL"][broker] = ("127.0.0.1", ssl_port)
    cluster.root.mkdir(parents=True, exist_ok=True)
    (cluster.root / "client-ssl.properties").write_text(f"security.protocol=SSL\nssl.ca.location={certs.ca}\n")
    ssl_clients = {"kafka-python": {"security_protocol": "SSL", "ssl_cafile": certs.ca, "ssl_check_hostname": False},
                   "confluent-kafka": {"security.protocol": "SSL", "ssl.ca.location": certs.ca,
                                       "ssl.endpoint.identification.algorithm": "none"}}
    setup = Listeners(cluster, advertised, {"PLAINTEXT": {}, "SSL": ssl_clients},
                      ssl_context=client_context(None, None, certs.ca))
    try:
        _start(cluster)
        _create(setup, "SSL", "replicated")  # its ISR fills through the SSL replica fetchers
        yield setup
    finally:
        cluster.stop_all(timeout=20)


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


@pytest.mark.parametrize("listener", ["INTERNAL", "EXTERNAL"])
def test_each_listener_answers_with_its_own_endpoints(split, listener):
    # Nothing went through the forwarders before clients used EXTERNAL: replication is on INTERNAL only.
    if listener == "INTERNAL":
        assert sum(f.connections for f in split.forwarders.values()) == 0
    expected = split.advertised[listener]
    for broker, address in expected.items():
        metadata = _ask(address, ALL_TOPICS)
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
    seen = {(b.host, b.port) for b in producer._metadata.brokers()}  # noqa: SLF001 - what Metadata told it
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
    _create(setup, listener, topic)
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
