"""The perf tools' figures and lines, get-offsets' filters and broker-api-versions' format, against Kafka's."""

from __future__ import annotations

import time

import pytest

from pykraft.cli.broker_api_versions_cmd import client_apis, node_versions_text, version_text
from pykraft.cli.get_offsets_cmd import offset_spec, rules_of
from pykraft.cli.kafka_args import ToolError, parse
from pykraft.cli.perf_stats import ProducerStats, consumer_summary, java_date, java_fixed


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_producer_stats_windows_and_the_total_line():
    clock, printed = Clock(), []
    stats = ProducerStats(1000, reporting_ms=5000, clock=clock, out=printed.append)
    for latency in range(1, 1001):
        clock.now += 0.006  # 6 s for the run: one window line after 5 s
        stats.record(latency, 100)
    assert len(printed) == 1 and printed[0].startswith("834 records sent, 166.7 records/sec (0.02 MB/sec), 417.5 ms "
                                                       "avg latency, 834.0 ms max latency.")
    assert stats.percentiles(0.5, 0.95, 0.99, 0.999) == [501, 951, 991, 1000]
    assert stats.total_line() == ("1000 records sent, 166.7 records/sec (0.02 MB/sec), 500.50 ms avg latency, "
                                  "1000.00 ms max latency, 501 ms 50th, 951 ms 95th, 991 ms 99th, 1000 ms 99.9th.")


def test_java_number_and_date_formats():
    assert java_fixed(0.125, 2) == "0.13" and java_fixed(2.5, 0) == "3" and java_fixed(float("inf"), 4) == "Infinity"
    moment = time.mktime((2024, 1, 2, 3, 4, 5, 0, 0, -1)) * 1000 + 6
    assert java_date("yyyy-MM-dd HH:mm:ss:SSS", moment) == "2024-01-02 03:04:05:006"
    assert java_date("d/M/yy 'at' H", moment) == "2/1/24 at 3"
    assert consumer_summary("yyyy", moment, moment + 2000, 2 * 1024 * 1024, 100, 500).split(", ")[2:] == [
        "2.0000", "1.0000", "100", "50.0000", "500", "1500", "1.3333", "66.6667"]


def test_get_offsets_times_and_filters():
    assert [offset_spec(t) for t in ("latest", "-1", "earliest", "-2", "max-timestamp", "-3", "earliest-local",
                                     "-4", "123")] == [-1, -1, -2, -2, -3, -3, -2, -2, 123]
    assert offset_spec("latest-tiered") is None and offset_spec("-5") is None
    with pytest.raises(ToolError, match="Malformed time argument x"):
        offset_spec("x")
    from pykraft.cli.get_offsets_cmd import FLAGS

    rules = rules_of(parse(FLAGS, ["--topic-partitions", "orders:1,pay.*:2-4,:-1,logs:5-"]))
    allowed = {(t, p) for t in ("orders", "payments", "logs", "x") for p in range(8)
               if any(r.allows(t, p) for r in rules)}
    assert allowed == ({("orders", 1), ("payments", 2), ("payments", 3), ("logs", 0)}
                       | {("logs", p) for p in range(5, 8)} | {(t, 0) for t in ("orders", "payments", "x")})
    plain = rules_of(parse(FLAGS, ["--topic", "orders", "--partitions", "0,2"]))
    assert [p for p in range(4) if any(r.allows("orders", p) for r in plain)] == [0, 2]
    with pytest.raises(ToolError, match="--partitions expects a comma separated list"):
        rules_of(parse(FLAGS, ["--partitions", "a"]))


def test_broker_api_versions_as_nodeapiversions_prints_them():
    apis = client_apis()
    assert apis[0][0] == "Produce" and apis[18][0] == "ApiVersions" and apis[60][0] == "DescribeCluster"
    latest_produce = apis[0][2]
    assert version_text(0, 3, 12) == f"Produce(0): 3 to 12 [usable: {min(12, latest_produce)}]"
    assert version_text(18, 4, 4) == "ApiVersions(18): 4 [usable: 4]"
    assert version_text(9999, 0, 1) == "UNKNOWN(9999): 0 to 1"
    text = node_versions_text({18: (0, 4)})
    assert text.startswith("(\n\tProduce(0): UNSUPPORTED,\n") and text.endswith("\n)")
    assert "\tApiVersions(18): 0 to 4 [usable: " in text
