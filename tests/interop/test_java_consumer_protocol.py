"""KIP-848's consumer protocol through Kafka's own Java client (kafka-clients 3.9.1, `group.protocol=consumer`).

ConsumerProtocol.java: members join and leave a 6-partition subscription one at a time with commitSync, each record
read exactly once; Admin describeConsumerGroups shows type CONSUMER and the assignments, listConsumerGroups filters
by type; a pattern subscription picks up a topic created while it runs (the 3.9 client resolves patterns itself
and sends topic names; the coordinator's own regex resolution is checked with librdkafka in
tests/e2e/test_consumer_protocol.py). Then the group's coordinator is SIGKILLed under a reading member: it goes on
with the new coordinator (the group loaded from `__consumer_offsets`) and reads every record.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import pytest

from pykraft.node.local_cluster import LocalCluster
from pykraft.records.group_records import partition_for

from tests.e2e.data_plane_checks import DATA_PLANE_TIMING
from tests.e2e.helpers import wait_for

from .conftest import brokers_of, running_cluster, unfenced_brokers
from .java_programs import failures

OFFSETS_PARTITIONS = 3
CONSUMER_PROTOCOL = {"offsets.topic.num.partitions": str(OFFSETS_PARTITIONS),
                     "group.consumer.min.heartbeat.interval.ms": "500",
                     "group.consumer.heartbeat.interval.ms": "1000",
                     "group.consumer.min.session.timeout.ms": "6000",
                     "group.consumer.session.timeout.ms": "10000"}
CHECKS = ["members_join_and_leave_one_at_a_time_exactly_once", "describe_consumer_group_type_consumer",
          "pattern_subscription_picks_up_a_new_topic"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    cluster = LocalCluster(tmp_path_factory.mktemp("kip848") / "cluster", controllers=1, brokers=3,
                           properties={**DATA_PLANE_TIMING, **CONSUMER_PROTOCOL})
    with running_cluster(cluster):
        yield cluster


@pytest.fixture(scope="module")
def protocol(java, cluster):
    return java.run("ConsumerProtocol", brokers_of(cluster), "java", timeout=600)


@pytest.mark.parametrize("check", CHECKS)
def test_consumer_protocol_with_kafkas_java_client(protocol, check):
    assert not failures(protocol, [check])


def _produce(servers: str, topic: str, prefix: str, count: int) -> int:
    """Distinct values (`prefix` + i), acks=all, idempotent; how many were acknowledged."""
    from confluent_kafka import Producer
    acknowledged = []
    producer = Producer({"bootstrap.servers": servers, "acks": "all", "enable.idempotence": True,
                         "message.timeout.ms": 120_000})
    for i in range(count):
        producer.produce(topic, f"{prefix}{i}".encode(), partition=i % 6,
                         on_delivery=lambda err, msg: acknowledged.append(msg) if err is None else None)
        producer.poll(0)
    producer.flush(120)
    return len(acknowledged)


def _coordinator(cluster: LocalCluster, group: str) -> int:
    """The broker leading the group's __consumer_offsets partition, from the topic's description."""
    described = cluster.cli("topics", "describe", "--bootstrap-server", brokers_of(cluster).split(",")[0],
                            "--topic", "__consumer_offsets")
    wanted = partition_for(group, OFFSETS_PARTITIONS)
    for line in described.stdout.splitlines():
        fields = dict(part.split(": ", 1) for part in line.strip().split("\t") if ": " in part)
        if fields.get("Partition") == str(wanted):
            return int(fields["Leader"])
    raise AssertionError(f"no partition {wanted} in {described.stdout}")


def test_coordinator_sigkilled_under_a_java_member(protocol, java, cluster):
    """A member reads a topic while the broker coordinating its group is SIGKILLed: it finds the new coordinator
    (which loaded the group from the log) and reads every record; nothing is lost."""
    topic, group, count = "killed-848", "killed-848-group", 600
    cluster.cli("topics", "create", "--bootstrap-server", brokers_of(cluster).split(",")[0], "--topic", topic,
                "--partitions", "6", "--replication-factor", "3")
    assert _produce(brokers_of(cluster), topic, "before-", count // 2) == count // 2
    member = subprocess.Popen(["java", "-cp", java.classpath, "ConsumerProtocol", brokers_of(cluster), "x", "consume",
                               topic, group, str(count), "180000"], stdout=subprocess.PIPE, text=True)
    try:
        progress = 0
        while progress == 0:  # the member is in the group and has read something
            line = member.stdout.readline()  # type: ignore[union-attr]
            assert line, "the Java member ended before reading anything"
            if line.startswith('{"progress"'):
                progress = json.loads(line)["progress"]
        victim = _coordinator(cluster, group)
        cluster.kill(victim)
        servers = ",".join(f"127.0.0.1:{cluster.nodes[b].port}" for b in cluster.broker_ids if b != victim)
        assert _produce(servers, topic, "after-", count - count // 2) == count - count // 2
        out, _ = member.communicate(timeout=240)
    finally:
        if member.poll() is None:
            member.kill()
    results = [json.loads(line) for line in out.splitlines() if line.startswith('{"check"')]
    assert results and results[0]["ok"], results
    assert results[0]["detail"]["distinct"] == count, results[0]
    cluster.start(victim)
    wait_for(lambda: victim in unfenced_brokers(cluster), "the killed broker back", timeout=120)
