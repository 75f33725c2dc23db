"""Controller metrics on the node's Prometheus endpoint: KafkaController gauges under the JMX exporter's names, the
controller host's counters, and none of them on a node without a controller host."""

from __future__ import annotations

import asyncio
import re
import time
import urllib.request

import pytest
from prometheus_client import CollectorRegistry, Histogram, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from pykraft.controller.controller import CREATE_TOPICS
from pykraft.controller.metrics import KAFKA_NAMES
from pykraft.node.roles.controller_host import ControllerHost, controller_runtime
from pykraft.node.runtime.metric_stats import LATENCY_BUCKETS_S, Histogram as OurHistogram
from pykraft.node.runtime.metrics import controller_metric_name
from pykraft.node.runtime.runtime import NodeRuntime
from pykraft.protocol.errors import ErrorCode

from .helpers import call, free_ports, leader_of, make_config, produce_request, wait_for
from .test_controller_host import create_topic, heartbeat, registration


def samples(text: str) -> dict[str, float]:
    return {sample.name: sample.value for family in text_string_to_metric_families(text) for sample in family.samples}


def labelled(text: str, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    """The samples called `name`, by their sorted labels."""
    return {tuple(sorted(sample.labels.items())): sample.value for family in text_string_to_metric_families(text)
            for sample in family.samples if sample.name == name}


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as answer:
        return answer.read().decode()


class _Families:
    def __init__(self, *families):
        self.families = families

    def collect(self):
        return self.families


def test_the_raft_histograms_expose_what_a_prometheus_histogram_in_seconds_does():
    # NodeMetrics keeps commit/election latency (observed in ms) in its own histograms so that prometheus_client
    # loads only when read; the scrape is a prometheus_client Histogram's in seconds: same buckets (le="0.001"),
    # count, sum, and the `_created` sample.
    before = CollectorRegistry()
    reference = Histogram("kafka_server_raftmetrics_commit_latency_seconds", "leader append to commit (s)",
                          buckets=LATENCY_BUCKETS_S, registry=before)
    ours = OurHistogram(created=time.time())
    for value_ms in (0, 1, 2.5, 7, 1000, 10000, 20000):
        reference.observe(value_ms / 1000)
        ours.observe(value_ms)
    after = CollectorRegistry()
    after.register(_Families(ours.family("kafka_server_raftmetrics_commit_latency_seconds",
                                         "leader append to commit (s)")))
    created = re.compile(r"(_created) \S+")
    def scrape(registry: CollectorRegistry) -> str:
        return created.sub(r"\1 T", generate_latest(registry).decode())

    assert scrape(after) == scrape(before)
    assert ours.count == 7


def test_controller_metric_names_follow_the_jmx_exporter_convention():
    assert controller_metric_name("ActiveControllerCount") == "kafka_controller_kafkacontroller_activecontrollercount"
    assert controller_metric_name("LastAppliedRecordLagMs") == "kafka_controller_kafkacontroller_lastappliedrecordlagms"


@pytest.mark.asyncio
async def test_active_controller_publishes_its_metrics_on_the_metrics_port(tmp_path):
    port, metrics_port = free_ports(2)
    runtime = controller_runtime(make_config(tmp_path, 1, {1: port}, extra=f"pykraft.metrics.port={metrics_port}\n"
                                                                     "metadata.max.idle.interval.ms=0"))
    await runtime.start()
    try:
        host = runtime.state_machine
        assert isinstance(host, ControllerHost)
        await wait_for(lambda: leader_of([runtime]) is not None and host.controller.active)
        answer = await call(port, registration())
        await call(port, heartbeat(int(answer.broker_epoch), runtime.core.high_watermark))
        created = await host.request(CREATE_TOPICS, create_topic("m", 3))
        assert created.topics[0].error_code == ErrorCode.NONE
        await call(port, produce_request([b"not-a-record"]))
        # No NoOpRecords (idle interval 0): once everything is applied the values stand still for the scrape.
        await wait_for(lambda: host.undecodable_records == 1
                       and host.committed_offset == runtime.core.log.end_offset() - 1)
        values = samples(await asyncio.to_thread(scrape, metrics_port))
        expected = host.controller.metrics().by_kafka_name()
        for kafka_name in KAFKA_NAMES.values():  # every ControllerMetrics value, under its exporter name
            assert values[controller_metric_name(kafka_name)] == expected[kafka_name]
        gauge = lambda name: values[controller_metric_name(name)]
        assert gauge("ActiveControllerCount") == 1 and gauge("NewActiveControllersCount") == 1
        assert gauge("ActiveBrokerCount") == 1 and gauge("FencedBrokerCount") == 0
        assert gauge("GlobalTopicCount") == 1 and gauge("GlobalPartitionCount") == 3
        assert gauge("OfflinePartitionsCount") == 0
        assert gauge("LastCommittedRecordOffset") == host.committed_offset > 0
        assert gauge("LastAppliedRecordTimestamp") > 0 and gauge("LastAppliedRecordLagMs") >= 0
        assert values["pykraft_controller_undecodable_records_total"] == 1
        assert values["pykraft_controller_not_controller_answers_total"] == 0
        assert values["pykraft_controller_rebuilds_total"] == 0
        assert values["pykraft_controller_snapshots_loaded_total"] == 0
    finally:
        await runtime.stop(graceful=False)


@pytest.mark.asyncio
async def test_a_node_without_a_controller_host_has_no_controller_metrics(tmp_path):
    ports = {1: free_ports(1)[0]}
    runtime = NodeRuntime(make_config(tmp_path, 1, ports))
    await runtime.start()
    try:
        await wait_for(lambda: leader_of([runtime]) is not None)
        text = generate_latest(runtime.metrics.registry).decode()
        assert "kafka_server_raftmetrics_current_epoch" in text  # the raft metrics are there
        assert "kafka_controller_" not in text and "pykraft_controller_" not in text
    finally:
        await runtime.stop()


@pytest.mark.asyncio
async def test_commit_latency_and_event_queue_count_the_controllers_own_writes(tmp_path):
    """Issue 15: commit latency and append records over every write the leader commits (here only the controller's
    own: no Produce at all), Kafka's missing raft gauges, the event-queue metrics and IsObserver."""
    port = free_ports(1)[0]
    runtime = controller_runtime(make_config(tmp_path, 1, {1: port}))
    await runtime.start()
    try:
        host = runtime.state_machine
        await wait_for(lambda: leader_of([runtime]) is not None and host.controller.active)
        answer = await call(port, registration())
        await call(port, heartbeat(int(answer.broker_epoch), runtime.core.high_watermark))
        assert (await host.request(CREATE_TOPICS, create_topic("own", 2))).topics[0].error_code == ErrorCode.NONE
        await wait_for(lambda: runtime.metrics.commit_latency.count >= 3)
        text = generate_latest(runtime.metrics.registry).decode()
        values = samples(text)
        assert values["kafka_server_raftmetrics_commit_latency_seconds_count"] >= 3  # registration, heartbeat, topic
        assert values["kafka_server_raftmetrics_append_records_total"] >= 4  # the topic alone is 3 records
        assert values["kafka_server_raftmetrics_number_unknown_voter_connections"] == 0
        assert 0 <= values["kafka_server_raftmetrics_poll_idle_ratio_avg"] <= 1
        assert values["kafka_server_raftmetrics_current_vote_directory_id"] == 1
        assert values[controller_metric_name("EventQueueOperationsStartedCount")] >= 3
        assert values[controller_metric_name("EventQueueOperationsTimedOutCount")] == 0
        assert values["kafka_controller_controllereventmanager_eventqueuetime_seconds_count"] >= 3
        assert values["kafka_controller_controllereventmanager_eventqueueprocessingtime_seconds_count"] >= 3
        # the controller RPCs under Kafka's request names (the CreateTopics went to the host directly)
        requests = labelled(text, "kafka_network_requestmetrics_requests_total")
        assert requests[(("request", "BrokerRegistration"), ("version", "4"))] == 1
        assert requests[(("request", "BrokerHeartbeat"), ("version", "1"))] == 1
        errors = labelled(text, "kafka_network_requestmetrics_errors_total")
        assert errors[(("error", "NONE"), ("request", "BrokerHeartbeat"))] == 1
        assert values[controller_metric_name("IsObserver")] == 0
    finally:
        await runtime.stop()
