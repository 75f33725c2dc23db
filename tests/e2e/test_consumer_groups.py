"""Issue 14 item 6 with real processes: stock consumers in a group on a 3-broker cluster (RF-3 topic).

Each client reads part of the acknowledged records in a group, commits and leaves; a restarted member resumes at
the committed offset (nothing lost, nothing read twice). Two kafka-python members split a topic's partitions. A
SIGKILLed coordinator: the group moves with its __consumer_offsets partition's leadership and the committed
offsets survive. Waits poll with deadlines; nothing asserts a duration.
"""

from __future__ import annotations

import threading
import time

import pytest

from pykraft.records.group_records import partition_for

from .data_plane_checks import QueueCheck, bootstrap, partition, start_cluster
from .helpers import wait_for
from .stock_clients import CLIENTS, consume_group, produce

kafka = pytest.importorskip("kafka")
TOPIC = "events"
RECORDS = 200
OFFSETS_PARTITIONS = 5
GROUP_PROPERTIES = {"offsets.topic.num.partitions": str(OFFSETS_PARTITIONS),
                    "group.initial.rebalance.delay.ms": "200"}


@pytest.fixture
def cluster(tmp_path):
    cluster = start_cluster(tmp_path / "cluster", TOPIC, GROUP_PROPERTIES)
    yield cluster
    cluster.stop_all(timeout=20)


def _produced(cluster) -> set[int]:
    acknowledged = produce("kafka-python", bootstrap(cluster), TOPIC, RECORDS, lambda i: None)
    assert len(acknowledged) == RECORDS
    return acknowledged


def _resume_check(cluster, client: str, group: str, acknowledged: set[int]) -> None:
    first = consume_group(client, bootstrap(cluster), TOPIC, group, RECORDS // 2)
    assert RECORDS // 2 <= len(first) < RECORDS, len(first)
    rest = consume_group(client, bootstrap(cluster), TOPIC, group, RECORDS - len(first))
    assert rest and rest[0] == max(first) + 1  # resumed exactly at the committed offset
    check = QueueCheck.of(acknowledged, first + rest)
    assert check.lost == () and check.duplicated == () and check.reordered == 0, check


@pytest.mark.parametrize("client", CLIENTS)
def test_a_group_member_commits_and_a_restarted_one_resumes_there(cluster, client):
    pytest.importorskip({"kafka-python": "kafka", "aiokafka": "aiokafka", "confluent-kafka": "confluent_kafka"}[client])
    _resume_check(cluster, client, f"group-{client}", _produced(cluster))


def test_two_members_of_one_group_split_the_partitions(cluster):
    cluster.cli("topics", "create", "--bootstrap-server", bootstrap(cluster).split(",")[0], "--topic", "wide",
                "--partitions", "4", "--replication-factor", "3")
    assignments: dict[int, set[int]] = {}
    stop = threading.Event()

    def member(n: int) -> None:
        consumer = kafka.KafkaConsumer("wide", bootstrap_servers=bootstrap(cluster), group_id="splitters",
                                       metadata_max_age_ms=1000, session_timeout_ms=10_000)
        try:
            while not stop.is_set():
                consumer.poll(timeout_ms=200)
                assignments[n] = {tp.partition for tp in consumer.assignment()}
        finally:
            consumer.close()

    threads = [threading.Thread(target=member, args=(n,), daemon=True) for n in (1, 2)]
    for thread in threads:
        thread.start()
        time.sleep(1.0)  # the second member joins a group that already has one: a real rebalance
    try:
        split = wait_for(lambda: (lambda a, b: (a, b) if a and b and not a & b and a | b == {0, 1, 2, 3} else None)(
            assignments.get(1, set()), assignments.get(2, set())), "the partitions split between the two members",
            timeout=90)
        assert len(split[0]) == len(split[1]) == 2
    finally:
        stop.set()
        for thread in threads:
            thread.join(30)


def test_committed_offsets_survive_a_sigkilled_coordinator(cluster):
    acknowledged = _produced(cluster)
    group = "failover-group"
    first = consume_group("kafka-python", bootstrap(cluster), TOPIC, group, RECORDS // 2)
    index = partition_for(group, OFFSETS_PARTITIONS)
    coordinator = partition(cluster, "__consumer_offsets", index).leader
    cluster.kill(coordinator)
    moved = wait_for(lambda: (lambda p: p if p.leader not in (coordinator, -1) else None)(
        partition(cluster, "__consumer_offsets", index)), "the __consumer_offsets partition led by another broker",
        timeout=90)
    assert moved.leader != coordinator
    servers = ",".join(f"127.0.0.1:{cluster.nodes[b].port}" for b in cluster.broker_ids if b != coordinator)
    _wait_until_brokers_forget(servers, coordinator)
    rest = consume_group("kafka-python", servers, TOPIC, group, RECORDS - len(first))
    assert rest and rest[0] == max(first) + 1
    check = QueueCheck.of(acknowledged, first + rest)
    assert check.lost == () and check.duplicated == () and check.reordered == 0, check


def _wait_until_brokers_forget(servers: str, dead: int) -> None:
    """Every surviving broker's metadata has fenced the dead one (the controller's log has it a moment before a
    broker's cache): otherwise kafka-python may send its FindCoordinator to the dead address and raise."""
    def forgotten() -> bool:
        for server in servers.split(","):
            admin = kafka.KafkaAdminClient(bootstrap_servers=server, request_timeout_ms=5000)
            try:
                brokers = admin.describe_cluster()["brokers"]  # fenced ones too (IncludeFencedBrokers)
                if any(b["broker_id"] == dead and not b.get("is_fenced") for b in brokers):
                    return False
            finally:
                admin.close()
        return True

    wait_for(forgotten, f"broker {dead} gone from every survivor's metadata", timeout=60)


def test_stock_admin_tools_see_the_group_and_its_offsets(cluster):
    acknowledged = _produced(cluster)
    group = "admin-view"
    read = consume_group("kafka-python", bootstrap(cluster), TOPIC, group, RECORDS // 2)
    admin = kafka.KafkaAdminClient(bootstrap_servers=bootstrap(cluster), request_timeout_ms=10_000)
    try:
        listed = wait_for(lambda: [g for g in admin.list_groups() if g["group_id"] == group] or None,
                          "the group listed by ListGroups", timeout=60)
        assert listed[0]["protocol_type"] == "consumer" and listed[0]["group_state"] == "Empty"  # its member left
        described = admin.describe_groups([group])[group]
        assert described["error"] is None and described["group_state"] == "Empty" and described["members"] == []
        committed = admin.list_group_offsets({group: None})[group]
        assert {tp.partition: om.offset for tp, om in committed.items()} == {0: max(read) + 1}
    finally:
        admin.close()
    assert set(read) <= acknowledged


def test_a_live_member_carries_on_across_a_sigkilled_coordinator(cluster):
    """The member does not restart: it finds the new coordinator (NOT_COORDINATOR / a dead connection), and its
    commits go on there; at the end every acknowledged record was read and the last commit is the log end."""
    acknowledged = _produced(cluster)
    group = "live-failover"
    read: list[int] = []
    errors: list[BaseException] = []
    done = threading.Event()
    survivors: list[str] = []

    def member() -> None:
        consumer = kafka.KafkaConsumer(TOPIC, bootstrap_servers=bootstrap(cluster), group_id=group,
                                       enable_auto_commit=False, auto_offset_reset="earliest", max_poll_records=10,
                                       metadata_max_age_ms=1000, session_timeout_ms=10_000, retry_backoff_ms=200)
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and len(set(read)) < RECORDS:
                for records in consumer.poll(timeout_ms=500).values():
                    read.extend(int(m.value.decode().split("-")[1]) for m in records)
                    try:
                        consumer.commit()
                    except Exception:  # a commit during the failover may fail: the next one retries
                        pass
                time.sleep(0.3)  # slow: the reading spans the failover (the broker is fenced after 3 s)
            consumer.commit()
        except BaseException as exc:  # reported by the test thread
            errors.append(exc)
        finally:
            consumer.close()
            done.set()

    thread = threading.Thread(target=member, daemon=True)
    thread.start()
    wait_for(lambda: len(read) >= RECORDS // 4, "the member reading", timeout=90)
    index = partition_for(group, OFFSETS_PARTITIONS)
    coordinator = partition(cluster, "__consumer_offsets", index).leader
    cluster.kill(coordinator)
    survivors.extend(f"127.0.0.1:{cluster.nodes[b].port}" for b in cluster.broker_ids if b != coordinator)
    assert done.wait(150) and not errors, errors
    assert set(read) == acknowledged
    admin = kafka.KafkaAdminClient(bootstrap_servers=",".join(survivors), request_timeout_ms=10_000)
    try:
        committed = admin.list_group_offsets({group: None})[group]
        assert {tp.partition: om.offset for tp, om in committed.items()} == {0: RECORDS}
    finally:
        admin.close()
    assert partition(cluster, "__consumer_offsets", index).leader not in (coordinator, -1)
