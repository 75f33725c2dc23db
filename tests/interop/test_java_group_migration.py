"""KIP-848's online migration of a non-empty group, judged by Kafka's Java client (kafka-clients 3.9.1), kafka-python
and librdkafka: two classic members (kafka-python and confluent-kafka, their default eager assignors) consume a 6-partition topic with commitSync; a
Java member with `group.protocol=consumer` joins the same group, which the coordinator converts to a consumer group
while the classic members keep consuming through JoinGroup/SyncGroup/Heartbeat (they rejoin to reconcile); when the
Java member leaves, the group is converted back to a classic group. Records are produced in each phase: every one
is read exactly once, and the group's type switches as Kafka's does (ListGroups through `pykraft consumer-groups
--list --type`; `--describe --members` shows the classic members inside the consumer group).
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Iterator

import pytest

from pykraft.node.local_cluster import LocalCluster

from tests.e2e.data_plane_checks import DATA_PLANE_TIMING, stop_cluster
from tests.e2e.helpers import wait_for

from .conftest import brokers_of, unfenced_brokers

pytestmark = pytest.mark.interop_java

SETTINGS = {"min.insync.replicas": "1", "offsets.topic.replication.factor": "1", "offsets.topic.num.partitions": "1",
            "group.consumer.min.heartbeat.interval.ms": "500", "group.consumer.heartbeat.interval.ms": "1000",
            "group.consumer.min.session.timeout.ms": "6000", "group.consumer.session.timeout.ms": "10000"}
TOPIC, GROUP, PER_PHASE = "migrating", "migrating-group", 300


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    cluster = LocalCluster(tmp_path_factory.mktemp("migration") / "cluster", controllers=1, brokers=1,
                           properties={**DATA_PLANE_TIMING, **SETTINGS})
    cluster.format_all()
    cluster.start_all()
    try:
        wait_for(lambda: len(unfenced_brokers(cluster)) == 1, "the broker unfenced", timeout=120)
        yield cluster
    finally:
        stop_cluster(cluster)


class ClassicMember(threading.Thread):
    """A kafka-python consumer (classic protocol, its default eager assignors): poll, note, commit synchronously.
    With `librdkafka`, a confluent-kafka consumer (group.protocol=classic) doing the same."""

    def __init__(self, servers: str, name: str) -> None:
        super().__init__(daemon=True, name=name)
        self.servers, self.stop, self.values, self.assigned = servers, threading.Event(), [], 0
        self.commit_errors: list[str] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        if self.name.startswith("rd-"):
            self._run_librdkafka()
            return
        from kafka import KafkaConsumer
        from kafka.errors import CommitFailedError, RebalanceInProgressError
        try:
            consumer = KafkaConsumer(TOPIC, bootstrap_servers=self.servers, group_id=GROUP, client_id=self.name,
                                     enable_auto_commit=False, auto_offset_reset="earliest",
                                     heartbeat_interval_ms=500, session_timeout_ms=10000)
            while not self.stop.is_set():
                batch = consumer.poll(timeout_ms=200)
                for records in batch.values():
                    self.values += [r.value.decode() for r in records]
                if batch:
                    try:
                        consumer.commit()
                    except (CommitFailedError, RebalanceInProgressError) as exc:
                        self.commit_errors.append(repr(exc))
                self.assigned = len(consumer.assignment())
            consumer.close()
        except BaseException as exc:  # reported by the test
            self.error = exc


    def _run_librdkafka(self) -> None:
        from confluent_kafka import Consumer, KafkaException
        try:
            consumer = Consumer({"bootstrap.servers": self.servers, "group.id": GROUP, "client.id": self.name,
                                 "group.protocol": "classic", "enable.auto.commit": False,
                                 "auto.offset.reset": "earliest", "heartbeat.interval.ms": 500,
                                 "session.timeout.ms": 10000})
            consumer.subscribe([TOPIC])
            while not self.stop.is_set():
                batch = [m for m in consumer.consume(500, timeout=0.2) if m.error() is None]
                self.values += [m.value().decode() for m in batch]
                if batch:
                    try:
                        consumer.commit(asynchronous=False)
                    except KafkaException as exc:
                        self.commit_errors.append(repr(exc))
                self.assigned = len(consumer.assignment())
            consumer.close()
        except BaseException as exc:  # reported by the test
            self.error = exc


def _produce(servers: str, prefix: str) -> None:
    from confluent_kafka import Producer
    acknowledged = []
    producer = Producer({"bootstrap.servers": servers, "acks": "all", "enable.idempotence": True})
    for i in range(PER_PHASE):
        producer.produce(TOPIC, f"{prefix}{i}".encode(), partition=i % 6,
                         on_delivery=lambda err, msg: acknowledged.append(msg) if err is None else None)
    producer.flush(60)
    assert len(acknowledged) == PER_PHASE


def _group_type(cluster: LocalCluster, servers: str) -> str:
    listed = cluster.cli("consumer-groups", "--bootstrap-server", servers, "--list", "--type")
    rows = [line.split() for line in listed.stdout.splitlines()[1:]]
    return next((row[1] for row in rows if row and row[0] == GROUP), "absent")


def test_classic_members_and_a_java_consumer_member_migrate_the_group_both_ways(java, cluster):
    servers = brokers_of(cluster)
    cluster.cli("topics", "create", "--bootstrap-server", servers, "--topic", TOPIC, "--partitions", "6",
                "--replication-factor", "1")
    classic = [ClassicMember(servers, "py-a"), ClassicMember(servers, "rd-b")]
    for member in classic:
        member.start()
    java_member = None
    try:
        _produce(servers, "classic-")
        wait_for(lambda: sum(len(m.values) for m in classic) >= PER_PHASE and all(m.assigned for m in classic),
                 "the classic members sharing the topic", timeout=120)
        assert _group_type(cluster, servers) == "classic"

        java_member = subprocess.Popen(["java", "-cp", java.classpath, "Migration", servers, TOPIC, GROUP],
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        lines: list[str] = []
        threading.Thread(target=lambda: lines.extend(java_member.stdout), daemon=True).start()  # type: ignore[arg-type]
        wait_for(lambda: any(line.startswith('{"assigned":') and not line.startswith('{"assigned":0')
                             for line in lines), "the Java member assigned partitions", timeout=120)
        assert _group_type(cluster, servers) == "consumer"
        described = cluster.cli("consumer-groups", "--bootstrap-server", servers, "--describe", "--group", GROUP,
                                "--members").stdout
        assert "py-a" in described and "rd-b" in described, described  # the classic members, inside it
        _produce(servers, "mixed-")
        read = lambda: sum(len(m.values) for m in classic) + max(
            [int(line.split('"read":')[1].rstrip("}\n")) for line in lines if '"read":' in line] or [0])
        wait_for(lambda: read() >= 2 * PER_PHASE, "the mixed group reading the second phase", timeout=120)

        java_member.stdin.write("stop\n")  # type: ignore[union-attr]
        java_member.stdin.flush()  # type: ignore[union-attr]
        java_member.wait(timeout=120)
        wait_for(lambda: _group_type(cluster, servers) == "classic", "the group classic again", timeout=60)
        _produce(servers, "classic-again-")
        wait_for(lambda: read() >= 3 * PER_PHASE, "the classic members reading the third phase", timeout=120)
        time.sleep(2)  # anything read twice would show up by now
    finally:
        for member in classic:
            member.stop.set()
        for member in classic:
            member.join(timeout=60)
        if java_member is not None and java_member.poll() is None:
            java_member.kill()
    import json
    result = json.loads(next(line for line in lines if line.startswith('{"check"')))
    assert result["ok"], result
    assert not [m.error for m in classic if m.error], [m.error for m in classic]
    everything = [v for m in classic for v in m.values] + result["detail"]["values"]
    duplicates = sorted({v for v in everything if everything.count(v) > 1})
    assert not duplicates, (duplicates[:20], [m.commit_errors for m in classic])
    wanted = {f"{prefix}{i}" for prefix in ("classic-", "mixed-", "classic-again-") for i in range(PER_PHASE)}
    assert set(everything) == wanted
    assert any(v.startswith("mixed-") for v in result["detail"]["values"])  # the Java member did take a share
    _check_records(cluster)


def _check_records(cluster: LocalCluster) -> None:
    """What the coordinator wrote, as Kafka's record types read back by dump-log's offsets decoder: the classic
    group's tombstone then the consumer group's records with each classic member's ClassicMemberMetadata; at the
    downgrade the consumer group's tombstones then a GroupMetadata at generation = the group epoch."""
    (segment,) = (cluster.nodes[cluster.broker_ids[0]].data_dir / "__consumer_offsets-0").glob("*.log")
    dumped = cluster.cli("dump-log", "--offsets-decoder", "--files", str(segment)).stdout
    records = [line for line in dumped.splitlines() if line.startswith("| offset") and '"type":"1"' not in line]
    kinds = [(line.split('"type":"')[1].split('"')[0], "payload: <DELETE>" in line) for line in records]
    upgrade = kinds.index(("2", True))  # the classic group's tombstone ...
    assert kinds[upgrade + 1] == ("5", False) and "classicMemberMetadata" in records[upgrade + 1]  # ... then it
    downgrade = kinds.index(("3", True))  # the consumer group's epoch tombstone, last of its tombstones ...
    assert kinds[downgrade + 1] == ("2", False) and '"protocolType":"consumer"' in records[downgrade + 1]
    assert all(deleted for _, deleted in kinds[downgrade - 3:downgrade])
