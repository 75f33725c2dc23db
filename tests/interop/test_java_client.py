"""Kafka's own Java client (kafka-clients 3.9.1) against pykraft, then Kafka's own parser over every file written.

ClientBasics.java does what most applications do (Admin from a broker and from the controllers, topics and
configs, idempotent produce with all five codecs, a consumer group reading each record exactly once, group admin,
offsets, deletion); ParseLogs.java reads every segment and snapshot the nodes wrote, after a clean stop, with
FileRecords and ControlRecordUtils. Each Java check is one assertion here, named by its check.
"""

from __future__ import annotations

import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from pykraft.controller.log_replay import metadata_records
from pykraft.records.metadata.written_versions import written_version

from .conftest import brokers_of
from .java_programs import failures

BASICS = ["describe_cluster_from_broker", "describe_cluster_from_controller", "describe_metadata_quorum",
          "describe_features", "create_topic", "describe_topic", "describe_topic_configs",
          *(f"produce_idempotent_{codec}" for codec in ("none", "gzip", "snappy", "lz4", "zstd")),
          "consume_group_exactly_once", "list_groups", "describe_group", "group_offsets_at_log_end",
          "list_offsets_earliest", "create_and_delete_topic"]


@pytest.fixture(scope="module")
def basics(java, java_cluster):
    return java.run("ClientBasics", brokers_of(java_cluster), java_cluster.bootstrap_servers(), "java")


@pytest.mark.parametrize("check", BASICS)
def test_kafka_java_client(basics, check):
    assert not failures(basics, [check])


PATHS = ["produce_acks_0_and_1", "partitions_for", "record_too_large", "offsets_for_times_and_ends",
         "seek_and_read_committed", "static_member_rejoins_without_rebalance",
         "cooperative_sticky_incremental_rebalance"]


@pytest.fixture(scope="module")
def paths(java, java_cluster):
    return java.run("ClientPaths", brokers_of(java_cluster), "java")


@pytest.mark.parametrize("check", PATHS)
def test_kafka_java_client_paths(paths, check):
    """ClientPaths.java: acks 0/1, partitionsFor, RecordTooLarge, offsetsForTimes, seek, read_committed, static
    membership, cooperative-sticky rebalancing."""
    assert not failures(paths, [check])


def _scrape(cluster, node_id: int) -> list:
    port = cluster.nodes[node_id].extra["pykraft.metrics.port"]
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        return [s for family in text_string_to_metric_families(answer.read().decode()) for s in family.samples]


def test_the_java_clients_traffic_is_counted_under_kafkas_metric_names(basics, java_cluster):
    """The brokers' metrics after ClientBasics, read as a Kafka dashboard reads them: its produce counted per topic
    exactly (5 codecs x 200 idempotent records, compressed batches included), no failed produce, and its requests
    under Kafka's request names (the consumer's fetches as FetchConsumer, the group's RPCs)."""
    samples = [s for broker in java_cluster.broker_ids for s in _scrape(java_cluster, broker)]

    def total(name: str, **labels: str) -> float:
        return sum(s.value for s in samples if s.name == name and labels.items() <= s.labels.items())

    assert total("kafka_server_brokertopicmetrics_messagesin_total", topic="java-basics") == 5 * 200
    assert total("kafka_server_brokertopicmetrics_failedproducerequests_total", topic="java-basics") == 0
    assert total("kafka_server_brokertopicmetrics_bytesout_total", topic="java-basics") > 0
    for request in ("Produce", "FetchConsumer", "Metadata", "ApiVersions", "FindCoordinator", "JoinGroup",
                    "SyncGroup", "OffsetCommit", "InitProducerId"):
        assert total("kafka_network_requestmetrics_requests_total", request=request) > 0, request
    assert total("kafka_network_requestmetrics_errors_total", request="Produce", error="NONE") > 0
    assert total("kafka_network_requestmetrics_totaltime_seconds_count", request="Produce") == \
        total("kafka_network_requestmetrics_requests_total", request="Produce")


def written_files(root: Path) -> tuple[list[Path], list[Path]]:
    """(metadata log segments and snapshots, partition segments) under every node's data directory."""
    metadata, partitions = [], []
    for path in sorted(root.rglob("*")):
        if path.suffix not in (".log", ".checkpoint") or not path.is_file() or path.name == "server.log":
            continue
        (metadata if path.parent.name == "__cluster_metadata-0" else partitions).append(path)
    return metadata, partitions


def test_kafkas_parser_reads_every_file_written(basics, paths, java, java_cluster):
    """After the client run and a clean stop: every batch valid (CRC-32C), every record readable, every control
    record decoded at the version Kafka reads, every snapshot framed by its header and footer."""
    java_cluster.stop_all(timeout=30)
    metadata, partitions = written_files(java_cluster.root)
    assert any(p.suffix == ".checkpoint" for p in metadata), "no snapshot to check: SNAPSHOT_OFTEN did not take"
    assert any("java-basics-" in str(p) for p in partitions) and any("__consumer_offsets-" in str(p) for p in partitions)
    results = {**java.run("ParseLogs", "--metadata", *map(str, metadata)), **java.run("ParseLogs", *map(str, partitions))}
    assert len(results) == len(metadata) + len(partitions)
    assert not failures(results)
    leader_changes = sum(r.detail["control"].get("LEADER_CHANGE", 0) for r in results.values())
    assert leader_changes >= 3  # each voter's copy of the first leader's epoch start, at least


def test_metadata_records_at_the_versions_kafka_writes(basics, java_cluster):
    """Every metadata record in the controllers' logs and snapshots is at the version a Kafka controller at the same
    metadata.version writes it (records/metadata/written_versions.py), e.g. BrokerRegistrationChangeRecord v0 for
    (un)fencing and v1 for controlled shutdown, where the schema allows v2."""
    metadata, _ = written_files(java_cluster.root)
    seen: dict[tuple[str, int], int] = {}
    level = None
    for path in metadata:
        for _, record in metadata_records(path.read_bytes()):
            if type(record).__name__.startswith("FeatureLevelRecord") and record.name == "metadata.version":
                level = int(record.feature_level)
            assert level is not None, f"{path}: a record before metadata.version"
            assert int(record.__version__) == written_version(record, level), (path, record)
            name = (type(record).__name__, int(record.__version__))
            seen[name] = seen.get(name, 0) + 1
    assert ("BrokerRegistrationChangeRecordV0", 0) in seen  # the brokers' unfencing
