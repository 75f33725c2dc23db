"""The metric name table (node/runtime/metric_names.py) against the names Kafka dashboards query, and the pieces
behind the figures: Kafka's request names, the error codes of an answer, the sampled statistics, the topic counts."""

from __future__ import annotations

import datetime
import math
import uuid
import pathlib
import re

import pytest
from kio.schema.fetch.v17 import response as fetch_response
from kio.schema.produce.v9 import response as produce_response
from kio.static.primitive import i32, i32Timedelta, i64

from pykraft.broker.topic_stats import BrokerTopicStats
from pykraft.node.runtime.metric_names import METRICS, TABLE, markdown_table, render
from pykraft.node.runtime.metric_stats import WindowedStat
from pykraft.node.runtime.request_metrics import RequestStats, error_counts, kafka_api_name
from pykraft.protocol.apis import ApiKey, request_class
from pykraft.protocol.errors import ErrorCode

README = pathlib.Path(__file__).parents[2] / "README.md"

# What Strimzi's Grafana dashboards (strimzi-kafka.json, strimzi-kraft.json) and Confluent's jmx-monitoring-stacks
# query, next to the Kafka MBean each comes from: the renderings must give exactly these.
DASHBOARD_NAMES = {
    ("kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec,topic=", "counter"):
        "kafka_server_brokertopicmetrics_bytesin_total",
    ("kafka.server:type=BrokerTopicMetrics,name=BytesOutPerSec,topic=", "counter"):
        "kafka_server_brokertopicmetrics_bytesout_total",
    ("kafka.server:type=BrokerTopicMetrics,name=MessagesInPerSec,topic=", "counter"):
        "kafka_server_brokertopicmetrics_messagesin_total",
    ("kafka.server:type=BrokerTopicMetrics,name=TotalProduceRequestsPerSec,topic=", "counter"):
        "kafka_server_brokertopicmetrics_totalproducerequests_total",
    ("kafka.server:type=BrokerTopicMetrics,name=FailedProduceRequestsPerSec,topic=", "counter"):
        "kafka_server_brokertopicmetrics_failedproducerequests_total",
    ("kafka.server:type=BrokerTopicMetrics,name=TotalFetchRequestsPerSec,topic=", "counter"):
        "kafka_server_brokertopicmetrics_totalfetchrequests_total",
    ("kafka.server:type=BrokerTopicMetrics,name=FailedFetchRequestsPerSec,topic=", "counter"):
        "kafka_server_brokertopicmetrics_failedfetchrequests_total",
    ("kafka.server:type=ReplicaManager,name=LeaderCount", "gauge"): "kafka_server_replicamanager_leadercount",
    ("kafka.server:type=ReplicaManager,name=PartitionCount", "gauge"): "kafka_server_replicamanager_partitioncount",
    ("kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions", "gauge"):
        "kafka_server_replicamanager_underreplicatedpartitions",
    ("kafka.log:type=Log,name=Size,topic=,partition=", "gauge"): "kafka_log_log_size",
    ("kafka.cluster:type=Partition,name=UnderMinIsr,topic=,partition=", "gauge"): "kafka_cluster_partition_underminisr",
    ("kafka.cluster:type=Partition,name=AtMinIsr,topic=,partition=", "gauge"): "kafka_cluster_partition_atminisr",
    ("kafka.controller:type=KafkaController,name=ActiveControllerCount", "gauge"):
        "kafka_controller_kafkacontroller_activecontrollercount",
    ("kafka.controller:type=KafkaController,name=OfflinePartitionsCount", "gauge"):
        "kafka_controller_kafkacontroller_offlinepartitionscount",
    ("kafka.server:type=raft-metrics/current-state", "gauge"): "kafka_server_raftmetrics_current_state",
    ("kafka.server:type=raft-metrics/commit-latency-avg", "gauge"): "kafka_server_raftmetrics_commit_latency_avg",
    ("kafka.server:type=raft-metrics/append-records-rate", "gauge"): "kafka_server_raftmetrics_append_records_rate",
    ("kafka.server:type=raft-metrics/fetch-records-rate", "gauge"): "kafka_server_raftmetrics_fetch_records_rate",
    ("kafka.server:type=raft-metrics/high-watermark", "gauge"): "kafka_server_raftmetrics_high_watermark",
    ("kafka.server:type=raft-metrics/log-end-offset", "gauge"): "kafka_server_raftmetrics_log_end_offset",
    ("kafka.server:type=raft-metrics/current-epoch", "gauge"): "kafka_server_raftmetrics_current_epoch",
    ("kafka.coordinator.group:type=GroupMetadataManager,name=NumGroups", "gauge"):
        "kafka_coordinator_group_groupmetadatamanager_numgroups",
    ("kafka.server:type=broker-metadata-metrics/last-applied-record-lag-ms", "gauge"):
        "kafka_server_brokermetadatametrics_last_applied_record_lag_ms",
}


@pytest.mark.parametrize(("kafka", "kind"), list(DASHBOARD_NAMES))
def test_the_rendering_gives_the_names_dashboards_query(kafka, kind):
    assert render(kafka, kind) == DASHBOARD_NAMES[(kafka, kind)]
    assert METRICS[kafka].name == DASHBOARD_NAMES[(kafka, kind)]  # and the table exports that Kafka name


def test_timers_are_histograms_in_seconds_and_counters_end_in_total():
    assert render("kafka.network:type=RequestMetrics,name=TotalTimeMs,request=", "histogram") == \
        "kafka_network_requestmetrics_totaltime_seconds"
    assert render("kafka.server:type=raft-metrics/commit-latency", "histogram") == \
        "kafka_server_raftmetrics_commit_latency_seconds"
    assert render("kafka.server:type=raft-metrics/append-records", "counter") == \
        "kafka_server_raftmetrics_append_records_total"
    for metric in TABLE:
        assert metric.name.endswith("_total") == (metric.kind == "counter"), metric
        assert metric.name.endswith("_seconds") == (metric.kind == "histogram"), metric


def test_every_name_is_a_unique_valid_prometheus_name_with_valid_labels():
    names = [metric.name for metric in TABLE]
    assert len(names) == len(set(names))
    for metric in TABLE:
        assert re.fullmatch(r"[a-z_][a-z0-9_]*", metric.name), metric.name
        assert all(re.fullmatch(r"[a-zA-Z_][a-zA-Z0-9_]*", label) for label in metric.labels), metric
        assert metric.roles in ("broker", "controller", "both") and metric.kind in ("counter", "gauge", "histogram")
    assert METRICS["kafka.network:type=RequestMetrics,name=ErrorsPerSec,request=,error="].labels == \
        ("request", "error")
    assert METRICS["kafka.server:type=raft-metrics/current-state"].labels == ("current_state",)


def test_a_name_that_is_not_a_kafka_mbean_is_refused():
    with pytest.raises(ValueError, match="not a Kafka MBean"):
        render("java.lang:type=Memory", "gauge")


def test_the_readme_lists_the_table_as_the_code_has_it():
    assert markdown_table() in README.read_text(), "README.md's metric table is not the code's: paste markdown_table()"


def test_request_names_are_kafkas():
    for key in ApiKey:
        for version in range(20):
            try:
                cls = request_class(int(key), version)
            except Exception:  # a version kio has no class for
                continue
            assert kafka_api_name(int(key)) == cls.__name__.removesuffix("Request")
            break
    assert kafka_api_name(ApiKey.INIT_PRODUCER_ID) == "InitProducerId" and kafka_api_name(9999) == "9999"


def _produce_answer(*errors: ErrorCode):
    parts = tuple(produce_response.PartitionProduceResponse(
        index=i32(i), error_code=error, base_offset=i64(0), log_append_time=None, log_start_offset=i64(0),
        record_errors=(), error_message=None) for i, error in enumerate(errors))
    topic = produce_response.TopicProduceResponse(name="t", partition_responses=parts)
    return produce_response.ProduceResponse(responses=(topic,), throttle_time=i32Timedelta.parse(datetime.timedelta(0)))


def test_the_error_codes_of_an_answer_are_counted_as_kafka_counts_them():
    answer = _produce_answer(ErrorCode.NONE, ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.NONE)
    assert error_counts(answer) == {ErrorCode.NONE: 2, ErrorCode.NOT_LEADER_OR_FOLLOWER: 1}
    fetch = fetch_response.FetchResponse(
        throttle_time=i32Timedelta.parse(datetime.timedelta(0)), error_code=ErrorCode.NONE, session_id=i32(0), responses=(
            fetch_response.FetchableTopicResponse(topic_id=uuid.uuid4(), partitions=(
                fetch_response.PartitionData(
                    partition_index=i32(0), error_code=ErrorCode.OFFSET_OUT_OF_RANGE, high_watermark=i64(0),
                    last_stable_offset=i64(0), log_start_offset=i64(0),
                    aborted_transactions=(), preferred_read_replica=i32(-1), records=b"x" * 10),)),),
        node_endpoints=())
    assert error_counts(fetch) == {ErrorCode.NONE: 1, ErrorCode.OFFSET_OUT_OF_RANGE: 1}


def test_a_fetch_counts_as_fetch_and_as_follower_or_consumer():
    stats = RequestStats()
    follower = type("Req", (), {"replica_state": type("S", (), {"replica_id": 2})()})()
    consumer = type("Req", (), {"replica_state": type("S", (), {"replica_id": -1})()})()
    answer = _produce_answer(ErrorCode.NONE)  # any answer: only its error codes are read
    stats.record(ApiKey.FETCH, 17, follower, answer, 0.002)
    stats.record(ApiKey.FETCH, 17, consumer, answer, 0.004)
    stats.record_failure(ApiKey.PRODUCE, 9, 0.001)
    assert stats.by_name["Fetch"].versions == {17: 2}
    assert stats.by_name["FetchFollower"].versions == {17: 1} and stats.by_name["FetchConsumer"].versions == {17: 1}
    assert stats.by_name["Produce"].errors == {ErrorCode.UNKNOWN_SERVER_ERROR: 1}
    assert stats.by_name["Fetch"].time.count == 2 and stats.by_name["Fetch"].time.total == pytest.approx(0.006)


def test_windowed_stats_are_kafkas_avg_max_and_rate():
    stat = WindowedStat(samples=2, window_ms=30_000)
    assert math.isnan(stat.avg(0)) and math.isnan(stat.max(0)) and stat.rate(0) == 0.0
    stat.record(10, 1_000)
    stat.record(30, 2_000)
    assert stat.avg(2_000) == 20 and stat.max(2_000) == 30
    assert stat.rate(2_000) == pytest.approx(40 / 30)  # at least one full window of elapsed time
    stat.record(5, 40_000)  # a second sample
    assert stat.avg(40_000) == 15 and stat.max(40_000) == 30
    assert stat.rate(40_000) == pytest.approx(45 / 39)
    assert stat.avg(61_000) == 5  # the first sample (from 1 s) is older than 2 x 30 s: gone
    assert math.isnan(stat.max(200_000))


def test_a_deleted_topics_counts_stay_in_the_totals():
    stats = BrokerTopicStats()
    stats.of("a").bytes_in += 100
    stats.of("b").bytes_in += 50
    stats.of("a").produce_failed(ErrorCode.MESSAGE_TOO_LARGE, 7)
    stats.of("a").produce_failed(ErrorCode.NOT_ENOUGH_REPLICAS, 7)
    stats.of("a").produce_failed(ErrorCode.NOT_LEADER_OR_FOLLOWER, 7)
    assert stats.of("a").bytes_rejected == 7 and stats.of("a").failed_produce_requests == 1
    stats.retire("a")
    assert set(stats.topics) == {"b"} and stats.totals().bytes_in == 150
    assert stats.totals().failed_produce_requests == 1


def test_every_raft_drop_counter_has_a_row_and_every_row_a_counter() -> None:
    from pykraft.node.runtime.metrics import RAFT_CORE_COUNTERS

    rows = {m.kafka.split("/")[1] for m in TABLE
            if m.kafka.startswith("kafka.server:type=raft-metrics/") and m.kind == "counter"}
    assert set(RAFT_CORE_COUNTERS) == rows - {"append-records", "fetch-records"}


def test_metadata_apply_errors_count_undecodable_and_unreplayable_records() -> None:
    from types import SimpleNamespace

    from pykraft.node.runtime.broker_metrics import _metadata_families
    from pykraft.node.runtime.metric_names import broker_metadata_name

    broker = SimpleNamespace(last_applied_timestamp_ms=None, last_applied_offset=7, unloadable_records=0,
                             undecodable_records=2, cache=SimpleNamespace(apply_errors=3))
    values = {family.name: family.samples[0].value for family in _metadata_families(broker, 0)}
    assert values[broker_metadata_name("metadata-apply-error-count")] == 5
