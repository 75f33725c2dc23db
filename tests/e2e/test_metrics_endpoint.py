"""Issue 29: the Prometheus endpoint of real broker and controller processes under load, read as a Kafka dashboard
reads it (the names of Prometheus' jmx_exporter, node/runtime/metric_names.py): the names and labels are there, and
the figures move with what happens (bytes in grow as records are produced; under-replicated partitions becomes 1
while a follower is paused with SIGSTOP and 0 again after SIGCONT). Waits poll with deadlines; nothing asserts a
duration."""

from __future__ import annotations

import signal
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from .data_plane_checks import LAG_MS, bootstrap, partition, start_cluster, stop_cluster
from .helpers import wait_for

kafka = pytest.importorskip("kafka")
TOPIC = "metered"
RECORDS = 200
VALUE = b"v" * 100

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


@pytest.fixture
def cluster(tmp_path):
    # A session longer than replica.lag.time.max.ms: the paused follower leaves the ISR by its leader's AlterPartition
    # (counted in IsrShrinks), not by the controller fencing it first.
    cluster = start_cluster(tmp_path / "cluster", TOPIC, {"broker.session.timeout.ms": str(5 * LAG_MS)}, metrics=True)
    yield cluster
    stop_cluster(cluster)


def scrape(cluster, node_id: int) -> Samples:
    port = cluster.nodes[node_id].extra["pykraft.metrics.port"]
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[(name, tuple(sorted(labels.items())))]


def total(samples: Samples, name: str, **labels: str) -> float:
    """The sum of the samples `name` whose labels include `labels` (e.g. over every version of a request)."""
    wanted = set(labels.items())
    return sum(v for (n, have), v in samples.items() if n == name and wanted <= set(have))


def topic_counter(samples: Samples, short: str) -> float:
    return value(samples, f"kafka_server_brokertopicmetrics_{short}_total", topic=TOPIC)


def produce(producer, count: int) -> None:
    for _ in range(count):
        producer.send(TOPIC, VALUE, partition=0)
    producer.flush(60)


@pytest.fixture
def producer(cluster):
    # One producer for the whole test: it bootstraps while every broker answers (a new one would wait on the
    # paused follower's connection).
    producer = kafka.KafkaProducer(bootstrap_servers=bootstrap(cluster), acks="all", linger_ms=5,
                                   request_timeout_ms=10000)
    yield producer
    producer.close(10)


def test_broker_and_controller_metrics_move_with_the_load(cluster, producer):
    state = partition(cluster, TOPIC)
    leader, followers = state.leader, [b for b in state.replicas if b != state.leader]
    before = scrape(cluster, leader)
    # a topic's series appear with its first traffic (Kafka creates them on first use too); the total is there
    assert total(before, "kafka_server_brokertopicmetrics_messagesin_total", topic=TOPIC) == 0
    assert value(before, "kafka_server_brokertopicmetrics_messagesin_total") == 0
    produce(producer, RECORDS)

    def replicated() -> Samples | None:
        samples = scrape(cluster, leader)
        return samples if value(samples, "kafka_log_log_logendoffset", topic=TOPIC, partition="0") == RECORDS \
            else None

    after = wait_for(replicated, "the records in the leader's log")
    # BrokerTopicMetrics: counted per batch on the leader, with and without the topic label
    assert topic_counter(after, "messagesin") == RECORDS
    assert topic_counter(after, "bytesin") > RECORDS * len(VALUE)  # batch framing included
    assert value(after, "kafka_server_brokertopicmetrics_bytesin_total") >= topic_counter(after, "bytesin")
    assert 1 <= topic_counter(after, "totalproducerequests") <= RECORDS
    assert topic_counter(after, "failedproducerequests") == 0
    assert topic_counter(after, "replicationbytesout") > 0  # the followers fetched it
    # ReplicaManager and the per-partition gauges
    assert value(after, "kafka_server_replicamanager_leadercount") == 1
    assert value(after, "kafka_server_replicamanager_partitioncount") == 1
    assert value(after, "kafka_server_replicamanager_underreplicatedpartitions") == 0
    assert value(after, "kafka_server_replicamanager_atminisrpartitioncount") == 0  # ISR 3, min.insync 2
    assert value(after, "kafka_cluster_partition_insyncreplicascount", topic=TOPIC, partition="0") == 3
    assert value(after, "kafka_log_log_size", topic=TOPIC, partition="0") >= topic_counter(after, "bytesin")
    assert value(after, "kafka_log_log_numlogsegments", topic=TOPIC, partition="0") == 1
    assert value(after, "kafka_server_kafkaserver_brokerstate") == 3  # RUNNING
    assert value(after, 'kafka_server_raftmetrics_current_state', current_state="observer") == 1
    # Kafka's RequestMetrics, per API
    assert total(after, "kafka_network_requestmetrics_requests_total", request="Produce") >= 1
    assert value(after, "kafka_network_requestmetrics_errors_total", request="FetchFollower", error="NONE") > 0
    assert value(after, "kafka_network_requestmetrics_totaltime_seconds_count", request="Fetch") > 0
    assert value(after, "process_open_fds") > 0 and value(after, "process_resident_memory_bytes") > 0
    for follower in followers:
        samples = scrape(cluster, follower)
        assert topic_counter(samples, "replicationbytesin") > 0
        assert value(samples, "kafka_server_replicamanager_leadercount") == 0
        assert value(samples, "kafka_server_replicafetchermanager_maxlag", clientId="Replica") >= 0

    _consume_all(cluster)
    consumed = scrape(cluster, leader)
    assert topic_counter(consumed, "bytesout") >= RECORDS * len(VALUE)
    assert topic_counter(consumed, "totalfetchrequests") > topic_counter(after, "totalfetchrequests")
    assert total(consumed, "kafka_network_requestmetrics_requests_total", request="FetchConsumer") > 0

    # A follower paused: once replica.lag.time.max.ms passed it leaves the ISR, and the leader says so.
    paused = followers[0]
    cluster.signal(paused, signal.SIGSTOP)

    def under_replicated() -> Samples | None:
        produce(producer, 5)  # keep the paused follower behind the leader's log end
        samples = scrape(cluster, leader)
        return samples if value(samples, "kafka_server_replicamanager_underreplicatedpartitions") == 1 else None

    shrunk = wait_for(under_replicated, f"under-replicated partitions 1 (replica.lag.time.max.ms={LAG_MS})",
                      timeout=90, interval=0.5)
    assert value(shrunk, "kafka_cluster_partition_underreplicated", topic=TOPIC, partition="0") == 1
    assert value(shrunk, "kafka_cluster_partition_insyncreplicascount", topic=TOPIC, partition="0") == 2
    assert value(shrunk, "kafka_server_replicamanager_atminisrpartitioncount") == 1
    assert value(shrunk, "kafka_server_replicamanager_isrshrinks_total") >= 1
    cluster.signal(paused, signal.SIGCONT)
    back = wait_for(lambda: (s := scrape(cluster, leader))
                    and value(s, "kafka_server_replicamanager_underreplicatedpartitions") == 0 and s,
                    "under-replicated partitions back to 0", timeout=90, interval=0.5)
    assert value(back, "kafka_server_replicamanager_isrexpands_total") >= 1

    controller = scrape(cluster, cluster.controller_ids[0])
    assert value(controller, "kafka_controller_kafkacontroller_activecontrollercount") == 1
    assert value(controller, "kafka_controller_kafkacontroller_activebrokercount") == 3
    assert value(controller, "kafka_controller_kafkacontroller_globalpartitioncount") == 1
    assert value(controller, "kafka_server_raftmetrics_current_state", current_state="leader") == 1
    assert value(controller, "kafka_server_raftmetrics_append_records_total") > 0
    assert value(controller, "kafka_network_requestmetrics_errors_total", request="AlterPartition", error="NONE") >= 2
    assert value(controller, "process_cpu_seconds_total") > 0
    assert not any(name.startswith("kafka_server_brokertopicmetrics") for name, _ in controller)


def _consume_all(cluster) -> None:
    consumer = kafka.KafkaConsumer(bootstrap_servers=bootstrap(cluster), enable_auto_commit=False,
                                   auto_offset_reset="earliest", consumer_timeout_ms=10000)
    try:
        tp = kafka.TopicPartition(TOPIC, 0)
        consumer.assign([tp])
        consumer.seek_to_beginning(tp)
        got = 0
        for _ in consumer:
            got += 1
            if got >= RECORDS:
                break
        assert got >= RECORDS
    finally:
        consumer.close()
