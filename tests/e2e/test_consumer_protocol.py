"""KIP-848's consumer protocol with librdkafka (confluent-kafka, `group.protocol=consumer`) on a 3-broker cluster.

Members join and leave a 6-partition subscription one at a time, committing synchronously, and every record is read
exactly once; confluent's AdminClient describes the group as a CONSUMER group with its assignments; a regex
subscription (librdkafka sends it to the coordinator, which resolves it) picks up a topic created while it runs;
the group's coordinator is SIGKILLed under a member, which goes on with the next coordinator and loses nothing.
Waits poll with deadlines; nothing asserts a duration.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter

import pytest

from pykraft.records.group_records import partition_for

from .data_plane_checks import bootstrap, start_cluster, wait_every_broker_unfenced
from .helpers import wait_for

confluent_kafka = pytest.importorskip("confluent_kafka")
TOPIC = "kip848"
OFFSETS_PARTITIONS = 3
PROPERTIES = {"offsets.topic.num.partitions": str(OFFSETS_PARTITIONS),
              "group.consumer.min.heartbeat.interval.ms": "500", "group.consumer.heartbeat.interval.ms": "1000",
              "group.consumer.min.session.timeout.ms": "6000", "group.consumer.session.timeout.ms": "10000"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    cluster = start_cluster(tmp_path_factory.mktemp("kip848") / "cluster", TOPIC, PROPERTIES, partitions=6)
    yield cluster
    cluster.stop_all(timeout=20)


def produce(servers: str, topic: str, prefix: str, count: int, partitions: int = 6) -> int:
    acknowledged = []
    producer = confluent_kafka.Producer({"bootstrap.servers": servers, "acks": "all", "enable.idempotence": True,
                                         "message.timeout.ms": 120_000})
    for i in range(count):
        producer.produce(topic, f"{prefix}{i}".encode(), partition=i % partitions,
                         on_delivery=lambda err, msg: acknowledged.append(msg) if err is None else None)
        producer.poll(0)
    producer.flush(120)
    return len(acknowledged)


class Member(threading.Thread):
    """A consumer of the group: polls, counts, commits synchronously after each record batch, then leaves."""

    def __init__(self, servers: str, group: str, topics: list[str], seen: Counter) -> None:
        super().__init__(daemon=True)
        self.consumer = confluent_kafka.Consumer({
            "bootstrap.servers": servers, "group.id": group, "group.protocol": "consumer",
            "auto.offset.reset": "earliest", "enable.auto.commit": False, "topic.metadata.refresh.interval.ms": 1000})
        self.topics, self.seen, self.stop = topics, seen, threading.Event()
        self.assigned: set[tuple[str, int]] = set()
        self.errors: list[str] = []

    def run(self) -> None:
        self.consumer.subscribe(self.topics, on_revoke=lambda c, parts: self._commit())
        try:
            while not self.stop.is_set():
                batch = self.consumer.consume(100, timeout=0.2)
                for msg in batch:
                    if msg.error() is None:
                        self.seen[msg.value().decode()] += 1
                if batch:
                    self._commit()
                self.assigned = {(tp.topic, tp.partition) for tp in self.consumer.assignment()}
        finally:
            self.consumer.close()  # leaves the group (member epoch -1)

    def _commit(self) -> None:
        for _ in range(50):
            try:
                self.consumer.commit(asynchronous=False)
                return
            except confluent_kafka.KafkaException as exc:
                code = exc.args[0].code()
                if code == confluent_kafka.KafkaError._NO_OFFSET:
                    return
                if code not in (confluent_kafka.KafkaError.STALE_MEMBER_EPOCH,
                                confluent_kafka.KafkaError.REBALANCE_IN_PROGRESS,
                                confluent_kafka.KafkaError.NOT_COORDINATOR,
                                confluent_kafka.KafkaError.COORDINATOR_NOT_AVAILABLE,
                                confluent_kafka.KafkaError._TRANSPORT, confluent_kafka.KafkaError._TIMED_OUT):
                    self.errors.append(str(exc))
                    return
                time.sleep(0.1)


def settled(members: list[Member], partitions: int = 6) -> bool:
    owned = [m.assigned for m in members]
    return all(owned) and sum(map(len, owned)) == partitions and len(set().union(*owned)) == partitions


def test_members_join_and_leave_one_at_a_time_and_read_each_record_once(cluster):
    servers, seen, members, produced = bootstrap(cluster), Counter(), [], 0
    for step in range(3):
        member = Member(servers, "joiners", [TOPIC], seen)
        member.start()
        members.append(member)
        wait_for(lambda: settled(members), f"{len(members)} members sharing the 6 partitions", timeout=90)
        produced += produce(servers, TOPIC, f"join{step}-", 120)
        wait_for(lambda: len(seen) >= produced, f"{produced} records read", timeout=90)
    described = describe(servers, "joiners")
    assert described.type == confluent_kafka.ConsumerGroupType.CONSUMER
    assert len(described.members) == 3
    assert sorted((tp.topic, tp.partition) for m in described.members for tp in m.assignment.topic_partitions) == [
        (TOPIC, p) for p in range(6)]
    for step in range(2):
        leaving = members.pop(0)
        leaving.stop.set()
        leaving.join(30)
        wait_for(lambda: settled(members), f"{len(members)} members sharing the 6 partitions", timeout=90)
        produced += produce(servers, TOPIC, f"leave{step}-", 120)
        wait_for(lambda: len(seen) >= produced, f"{produced} records read", timeout=90)
    members[0].stop.set()
    members[0].join(30)
    assert len(seen) == produced == 600
    assert [value for value, times in seen.items() if times > 1] == []
    assert not any(m.errors for m in members)


def describe(servers: str, group: str):
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": servers})
    return admin.describe_consumer_groups([group])[group].result(30)


def test_a_regex_subscription_is_resolved_by_the_coordinator_and_picks_up_a_new_topic(cluster):
    servers, seen = bootstrap(cluster), Counter()
    cluster.cli("topics", "create", "--bootstrap-server", servers.split(",")[0], "--topic", "rx-a",
                "--partitions", "2", "--replication-factor", "3")
    member = Member(servers, "regexers", ["^rx-.*"], seen)
    member.start()
    try:
        assert produce(servers, "rx-a", "a", 10, partitions=2) == 10
        wait_for(lambda: len(seen) >= 10, "the records of rx-a read", timeout=90)
        regex = cluster.cli("consumer-groups", "--bootstrap-server", servers.split(",")[0], "--describe",
                            "--group", "regexers", "--members", "--verbose")
        assert "rx-a:0,1" in regex.stdout, regex.stdout
        described = asyncio.run(_describe_with_pykraft(servers, "regexers"))
        # librdkafka sends its patterns to the coordinator, each in a group, which resolves them over the topics
        assert [m.subscribed_topic_regex for m in described.members] == ["(^rx-.*)"]
        cluster.cli("topics", "create", "--bootstrap-server", servers.split(",")[0], "--topic", "rx-b",
                    "--partitions", "2", "--replication-factor", "3")
        assert produce(servers, "rx-b", "b", 10, partitions=2) == 10
        wait_for(lambda: len(seen) >= 20, "the records of the new topic rx-b read", timeout=120)
        assert ("rx-b", 0) in member.assigned or ("rx-b", 1) in member.assigned
    finally:
        member.stop.set()
        member.join(30)
    assert sorted(seen) == sorted([f"a{i}" for i in range(10)] + [f"b{i}" for i in range(10)])


async def _describe_with_pykraft(servers: str, group: str):
    from pykraft.admin import groups
    from pykraft.admin.brokers import BrokerClient
    host, port = servers.split(",")[0].split(":")
    async with BrokerClient([(host, int(port))]) as client:
        return (await groups.describe_groups(client, [group]))[group]


def _leader_of(cluster, servers: str, partition_index: int) -> int:
    described = cluster.cli("topics", "describe", "--bootstrap-server", servers.split(",")[0],
                            "--topic", "__consumer_offsets")
    for line in described.stdout.splitlines():
        fields = dict(part.split(": ", 1) for part in line.strip().split("\t") if ": " in part)
        if fields.get("Partition") == str(partition_index):
            return int(fields["Leader"])
    raise AssertionError(described.stdout)


def test_the_coordinator_sigkilled_under_a_member_nothing_is_lost(cluster):
    servers, seen, group = bootstrap(cluster), Counter(), "survivors"
    cluster.cli("topics", "create", "--bootstrap-server", servers.split(",")[0], "--topic", "killed",
                "--partitions", "6", "--replication-factor", "3")
    assert produce(servers, "killed", "before-", 300) == 300
    member = Member(servers, group, ["killed"], seen)
    member.start()
    try:
        wait_for(lambda: len(seen) > 0, "the member reading", timeout=90)
        victim = _leader_of(cluster, servers, partition_for(group, OFFSETS_PARTITIONS))
        cluster.kill(victim)
        alive = ",".join(f"127.0.0.1:{cluster.nodes[b].port}" for b in cluster.broker_ids if b != victim)
        assert produce(alive, "killed", "after-", 300) == 300
        wait_for(lambda: len(seen) >= 600, "every record read after the coordinator's death", timeout=180)
    finally:
        member.stop.set()
        member.join(30)
    assert len(seen) == 600
    cluster.start(victim)
    wait_every_broker_unfenced(cluster)  # the next test's topics need all three brokers


def test_a_static_member_restarts_without_a_rebalance(cluster):
    """librdkafka closes a static member with member epoch -2; the instance back under a new member id gets the same
    partitions, the other member's stay where they were and the group epoch does not move."""
    servers, seen = bootstrap(cluster), Counter()
    cluster.cli("topics", "create", "--bootstrap-server", servers.split(",")[0], "--topic", "statics",
                "--partitions", "6", "--replication-factor", "3")

    def static_member() -> Member:
        member = Member(servers, "statics", ["statics"], seen)
        member.consumer.close()
        member.consumer = confluent_kafka.Consumer({
            "bootstrap.servers": servers, "group.id": "statics", "group.protocol": "consumer",
            "group.instance.id": "instance-1", "auto.offset.reset": "earliest", "enable.auto.commit": False})
        return member

    first, other = static_member(), Member(servers, "statics", ["statics"], seen)
    first.start()
    other.start()
    wait_for(lambda: settled([first, other]), "two members sharing the 6 partitions", timeout=90)
    before = asyncio.run(_describe_with_pykraft(servers, "statics"))
    kept, others = set(first.assigned), set(other.assigned)
    first.stop.set()
    first.join(30)
    back = static_member()
    back.start()
    try:
        wait_for(lambda: back.assigned == kept, "the restarted instance holding its partitions again", timeout=60)
        after = asyncio.run(_describe_with_pykraft(servers, "statics"))
        assert other.assigned == others and after.group_epoch == before.group_epoch
        assert {m.instance_id for m in after.members} == {"instance-1", None}
        assert next(m for m in after.members if m.instance_id).member_id != next(
            m for m in before.members if m.instance_id).member_id
    finally:
        for member in (back, other):
            member.stop.set()
            member.join(30)
