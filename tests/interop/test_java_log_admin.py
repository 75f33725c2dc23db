"""Kafka's own Java Admin (kafka-clients 3.9.1) on the brokers' logs: deleteRecords, describeLogDirs,
describeReplicaLogDirs, describeProducers, and describeTopics through DescribeTopicPartitions with paging
(tests/interop/java/LogAdmin.java). Each Java check is one assertion here, named by its check."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pykraft.node.local_cluster import LocalCluster

from tests.e2e.data_plane_checks import DATA_PLANE_TIMING

from .conftest import brokers_of, running_cluster
from .java_programs import failures

CHECKS = ["delete_records", "list_offsets_earliest_after_delete", "consume_from_beginning_starts_at_the_new_start",
          "delete_records_above_the_high_watermark", "delete_records_unknown_topic_times_out", "describe_log_dirs",
          "describe_replica_log_dirs", "describe_producers", "describe_topics_paged"]


@pytest.fixture(scope="module")
def log_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """One controller, three brokers; pages of 7 partitions, so a 30-partition topic takes five answers."""
    cluster = LocalCluster(tmp_path_factory.mktemp("interop-logs") / "cluster", controllers=1, brokers=3,
                           properties={**DATA_PLANE_TIMING, "max.request.partition.size.limit": "7"})
    with running_cluster(cluster):
        yield cluster


@pytest.fixture(scope="module")
def log_admin(java, log_cluster):
    return java.run("LogAdmin", brokers_of(log_cluster), "java")


@pytest.mark.parametrize("check", CHECKS)
def test_kafka_java_admin_on_logs(log_admin, check):
    assert not failures(log_admin, [check])
