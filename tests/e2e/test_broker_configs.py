"""Issues 35 and 29: broker configs as Kafka serves them, applied live, and `pykraft configs` (kafka-configs).

One controller and two brokers started through the CLI, with a static `log.retention.hours` and an ignored
`num.io.threads` in their server.properties. Stock clients describe a broker's whole configuration (sources,
synonyms, read-only flags, masked passwords), the cluster default is altered and the data plane applies it without a
restart (a topic without its own retention.ms loses its old segments), a per-broker value beats the default, and
what pykraft would not apply is refused in Kafka's words. Then the command lines of Kafka's documentation run with
`pykraft configs` in place of kafka-configs.sh.
"""

from __future__ import annotations

import json
import time

import pytest

from pykraft.node.local_cluster import LocalCluster

from .helpers import FAST_TIMEOUTS, brokers_serving, wait_for

MAINTENANCE_S = 5.0  # the brokers' retention round (node/roles/data_plane.py MAINTENANCE_INTERVAL_S)
STATIC = {"log.retention.hours": "168", "num.io.threads": "4", "ssl.keystore.password": "secret"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    cluster = LocalCluster(tmp_path_factory.mktemp("broker-configs") / "cluster", controllers=1, brokers=2,
                           properties={**FAST_TIMEOUTS, "broker.heartbeat.interval.ms": "300", **STATIC})
    cluster.format_all()
    cluster.start_all()

    def unfenced() -> bool:
        listed = cluster.cli("brokers", "list", "--json", "--bootstrap-controller", cluster.bootstrap_servers())
        return sum(not b["fenced"] for b in json.loads(listed.stdout)) == 2
    wait_for(unfenced, "both brokers registered and unfenced")
    wait_for(lambda: brokers_serving(cluster), "both brokers taking connections")
    yield cluster
    cluster.stop_all(timeout=20)


def server(cluster: LocalCluster, broker: int | None = None) -> str:
    return f"127.0.0.1:{cluster.nodes[broker if broker is not None else cluster.broker_ids[0]].port}"


def confluent(cluster: LocalCluster):
    from confluent_kafka.admin import AdminClient
    return AdminClient({"bootstrap.servers": server(cluster)})


def alter_default(cluster, **changes: str | None) -> None:
    """The cluster default (the BROKER resource with the empty name). None of the three Python clients can name it
    (kafka-python and aiokafka parse the name as a broker id, librdkafka refuses an empty name): pykraft's own
    admin client does it, as Kafka's Java Admin would."""
    import asyncio

    from pykraft.admin.client import AdminClient
    from pykraft.admin.configs import BROKER, DELETE, SET

    async def go() -> None:
        async with AdminClient([("127.0.0.1", cluster.nodes[cluster.broker_ids[0]].port)],
                               bootstrap_kind="server") as client:
            await client.alter_configs(BROKER, "", [(k.replace("_", "."), DELETE if v is None else SET, v)
                                                    for k, v in changes.items()])
    asyncio.run(go())


def confluent_alter(cluster, kind: str, name: str, **changes: str | None):
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource
    entries = [ConfigEntry(k.replace("_", "."), v, incremental_operation=AlterConfigOpType.DELETE if v is None
                           else AlterConfigOpType.SET) for k, v in changes.items()]
    resource = ConfigResource(kind, name, incremental_configs=entries)
    admin = confluent(cluster)  # kept referenced: librdkafka fails the call if its handle goes first
    (future,) = admin.incremental_alter_configs([resource]).values()
    return future.result(timeout=20)


def test_kafka_python_describes_a_brokers_whole_configuration(cluster):
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient
    broker = cluster.broker_ids[0]
    admin = KafkaAdminClient(bootstrap_servers=server(cluster), request_timeout_ms=20_000)
    try:  # kafka-python sends a broker's resource to that broker once its metadata names it
        answer = wait_for(lambda: admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, str(broker))],
                                                         include_synonyms=True, config_filter="all"),
                          "kafka-python's answer from the broker", timeout=30)
    finally:
        admin.close()
    configs = answer["broker"][str(broker)]
    assert len(configs) > 250  # every key Kafka defines for a broker, not only the dynamic ones
    hours = configs["log.retention.hours"]
    assert (hours["value"], hours["config_source"], hours["read_only"]) == ("168", "STATIC_BROKER_CONFIG", True)
    assert [(s["name"], s["source"]) for s in hours["synonyms"]] == [
        ("log.retention.hours", "STATIC_BROKER_CONFIG"), ("log.retention.hours", "DEFAULT_CONFIG")]
    assert configs["node.id"]["value"] == str(broker)
    assert configs["log.retention.ms"]["read_only"] is False and configs["log.dirs"]["read_only"] is True
    password = configs["ssl.keystore.password"]
    assert (password["value"], password["is_sensitive"]) == (None, True)


def test_the_cluster_default_applies_live_and_a_broker_override_beats_it(cluster):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition
    a, b = cluster.broker_ids
    for name, broker in (("kept_on_a", a), ("trimmed_on_b", b)):
        cluster.cli("topics", "--create", "--topic", name, "--replica-assignment", str(broker), "--config",
                    "segment.ms=100", "--bootstrap-server", server(cluster))
    confluent_alter(cluster, "broker", str(a), log_retention_ms="3600000")
    producer = KafkaProducer(bootstrap_servers=server(cluster), acks=1)
    consumer = KafkaConsumer(bootstrap_servers=server(cluster))
    try:
        for _ in range(4):  # four batches 300 ms apart: each rolls a new segment (segment.ms=100)
            for name in ("kept_on_a", "trimmed_on_b"):
                producer.send(name, b"x" * 100).get(timeout=20)
            time.sleep(0.3)
        parts = [TopicPartition("kept_on_a", 0), TopicPartition("trimmed_on_b", 0)]
        assert set(consumer.beginning_offsets(parts).values()) == {0}
        alter_default(cluster, log_retention_ms="1000")

        def start(partition) -> int:
            return consumer.beginning_offsets([partition])[partition]
        wait_for(lambda: start(parts[1]) > 0, "trimmed_on_b's old segments deleted by the new default", timeout=60)
        time.sleep(2 * MAINTENANCE_S + 1)  # two more retention rounds on both brokers
        assert start(parts[0]) == 0  # broker a's own log.retention.ms (1 hour) beats the default
        confluent_alter(cluster, "broker", str(a), log_retention_ms=None)
        wait_for(lambda: start(parts[0]) > 0, "kept_on_a trimmed once the override is deleted", timeout=60)
    finally:
        producer.close()
        consumer.close()
        alter_default(cluster, log_retention_ms=None)


def test_more_replica_fetchers_split_the_partitions_and_replication_goes_on(cluster):
    """num.replica.fetchers=3 as the cluster default, without a restart: each broker fetches its followed partitions
    with up to three tasks per leader (Kafka's hash of topic and partition), and every partition still replicates:
    each acks=all write is acknowledged only once the follower fetched it, the ISRs stay full, every record reads
    back."""
    from kafka import KafkaConsumer, KafkaProducer

    from .metadata_probe import image_of
    alter_default(cluster, num_replica_fetchers="3")
    try:
        cluster.cli("topics", "--create", "--topic", "fetched", "--partitions", "6", "--replication-factor", "2",
                    "--bootstrap-server", server(cluster))
        producer = KafkaProducer(bootstrap_servers=server(cluster), acks="all")
        try:
            for i in range(60):
                producer.send("fetched", str(i).encode(), partition=i % 6).get(timeout=20)
        finally:
            producer.close()
        controller = cluster.nodes[cluster.controller_ids[0]]

        image = image_of(controller)
        topic_id = image.topic_id("fetched")
        assert all(len(image.partition(topic_id, p).isr) == 2 for p in range(6))
        consumer = KafkaConsumer("fetched", bootstrap_servers=server(cluster), auto_offset_reset="earliest",
                                 consumer_timeout_ms=10_000)
        try:
            assert sorted(int(m.value) for m in consumer) == list(range(60))
        finally:
            consumer.close()
    finally:
        alter_default(cluster, num_replica_fetchers=None)


def test_confluent_describes_a_broker_override_over_the_default_with_kafkas_sources(cluster):
    from confluent_kafka.admin import ConfigResource
    a = cluster.broker_ids[0]
    alter_default(cluster, min_insync_replicas="1", log_retention_bytes="-1")
    confluent_alter(cluster, "broker", str(a), log_retention_bytes="1073741824")
    try:
        admin = confluent(cluster)

        def described() -> dict | None:
            (own,) = admin.describe_configs([ConfigResource("broker", str(a))]).values()
            found = own.result(timeout=20)
            return found if found["log.retention.bytes"].value == "1073741824" else None
        entries = wait_for(described, "the override in the broker's metadata image", timeout=30)
        entry = entries["log.retention.bytes"]
        assert (entry.value, entry.source, entry.is_read_only) == ("1073741824", 2, False)  # DYNAMIC_BROKER_CONFIG
        assert entries["min.insync.replicas"].source == 3  # DYNAMIC_DEFAULT_BROKER_CONFIG
    finally:
        alter_default(cluster, min_insync_replicas=None, log_retention_bytes=None)
        confluent_alter(cluster, "broker", str(a), log_retention_bytes=None)


@pytest.mark.parametrize(("name", "changes", "message"), [
    ("1", {"log.dirs": "/elsewhere"}, "Cannot update these configs dynamically: Set(log.dirs)"),
    ("", {"listeners": "PLAINTEXT://:1"},
     "Cannot update these configs at default cluster level, broker id must be specified: Set(listeners)"),
    ("", {"log.retention.ms": "soon"}, "Invalid value soon for configuration log.retention.ms: Not a number of "
                                       "type LONG"),
    ("", {"num.io.threads": "16"}, "pykraft does not implement these configs: Set(num.io.threads)"),
    ("", {"min.insync.replica": "2"}, "Unknown broker config name: min.insync.replica. Did you mean "
                                      "min.insync.replicas?"),
], ids=["read-only", "per-broker-only", "bad-value", "not-implemented", "typo"])
def test_what_pykraft_would_not_apply_is_refused(cluster, name, changes, message):
    changes = {k.replace(".", "_"): v for k, v in changes.items()}
    with pytest.raises(Exception, match=message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        if name:
            confluent_alter(cluster, "broker", str(cluster.broker_ids[0]), **changes)
        else:
            alter_default(cluster, **changes)


# ---- pykraft configs: the lines of Kafka's documentation ---------------------------------------------------------
def configs(cluster, *args: str, check: bool = True):
    return cluster.cli("configs", "--bootstrap-server", server(cluster), *args, check=check)


def described_as(cluster, args: list[str], expected: list[str]) -> None:
    """The tool describes what the broker's image holds: an alter is answered once the controller committed it,
    and the broker replays it a moment later (as in Kafka), so a describe right after may still see the old value."""
    last: list[list[str]] = []

    def matches() -> bool:
        last[:] = [configs(cluster, *args).stdout.splitlines()]
        return last[0] == expected
    try:
        wait_for(matches, f"configs {' '.join(args)}", timeout=15)
    except AssertionError:
        assert last[0] == expected  # the difference, as pytest shows it
        raise


def test_configs_tool_alters_and_describes_brokers_as_kafka_configs_does(cluster):
    a = str(cluster.broker_ids[0])
    done = configs(cluster, "--entity-type", "brokers", "--entity-default", "--alter", "--add-config",
                   "log.retention.ms=604800000")
    assert done.stdout == "Completed updating default config for brokers in the cluster.\n"
    done = configs(cluster, "--entity-type", "brokers", "--entity-name", a, "--alter", "--add-config",
                   "log.retention.ms=86400000")
    assert done.stdout == f"Completed updating config for broker {a}.\n"
    described_as(cluster, ["--entity-type", "brokers", "--entity-name", a, "--describe"], [
        f"Dynamic configs for broker {a} are:",
        "  log.retention.ms=86400000 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.retention.ms=86400000, "
        "DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=604800000, STATIC_BROKER_CONFIG:log.retention.hours=168, "
        "DEFAULT_CONFIG:log.retention.hours=168}"])
    everything = configs(cluster, "--entity-type", "brokers", "--entity-name", a, "--describe", "--all").stdout
    assert everything.startswith(f"All configs for broker {a} are:\n")
    assert "  ssl.keystore.password=null sensitive=true synonyms={STATIC_BROKER_CONFIG:ssl.keystore.password=null}" \
        in everything.splitlines()
    described_as(cluster, ["--entity-type", "brokers", "--entity-default", "--describe"], [
        "Default configs for brokers in the cluster are:",
        "  log.retention.ms=604800000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:"
        "log.retention.ms=604800000}"])
    configs(cluster, "--entity-type", "brokers", "--entity-name", a, "--alter", "--delete-config", "log.retention.ms")
    configs(cluster, "--entity-type", "brokers", "--entity-default", "--alter", "--delete-config", "log.retention.ms")
    described_as(cluster, ["--entity-type", "brokers", "--describe"],
                 [*(f"Dynamic configs for broker {b} are:" for b in cluster.broker_ids),
                  "Default configs for brokers in the cluster are:"])


def test_configs_tool_on_topics_and_broker_loggers(cluster):
    cluster.cli("topics", "--create", "--topic", "tool_topic", "--bootstrap-server", server(cluster))
    done = configs(cluster, "--entity-type", "topics", "--entity-name", "tool_topic", "--alter", "--add-config",
                   "retention.ms=3600000,cleanup.policy=[delete,compact]")
    assert done.stdout == "Completed updating config for topic tool_topic.\n"
    described_as(cluster, ["--entity-type", "topics", "--entity-name", "tool_topic", "--describe"], [
        "Dynamic configs for topic tool_topic are:",
        "  cleanup.policy=delete,compact sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=delete,compact,"
        " DEFAULT_CONFIG:log.cleanup.policy=delete}",
        "  retention.ms=3600000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=3600000}"])
    a = str(cluster.broker_ids[0])
    loggers = configs(cluster, "--entity-type", "broker-loggers", "--entity-name", a, "--describe").stdout
    assert "  root=INFO sensitive=false synonyms={}" in loggers.splitlines()
    done = configs(cluster, "--entity-type", "broker-loggers", "--entity-name", a, "--alter", "--add-config",
                   "pykraft.node.fetcher=DEBUG")
    assert done.stdout == f"Completed updating config for broker-logger {a}.\n"
    loggers = configs(cluster, "--entity-type", "broker-loggers", "--entity-name", a, "--describe").stdout
    assert "  pykraft.node.fetcher=DEBUG sensitive=false synonyms={}" in loggers.splitlines()


@pytest.mark.parametrize(("args", "line"), [
    (["--entity-type", "brokers", "--entity-default", "--alter", "--delete-config", "log.cleaner.threads"],
     "Invalid config(s): log.cleaner.threads"),
    (["--entity-type", "brokers", "--entity-name", "x", "--describe"],
     "The entity name for brokers must be a valid integer broker id, but it is: x"),
    (["--entity-type", "topics", "--entity-name", "t", "--describe", "--alter"],
     "Command must include exactly one action: --describe, --alter"),
    (["--entity-type", "topics", "--entity-name", "no_such_topic", "--describe"],
     "UnknownTopicOrPartitionException: This server does not host this topic-partition."),
    # Client quotas are not served (users describe their SCRAM credentials: tests/e2e/test_sasl_processes.py).
    (["--entity-type", "clients", "--entity-name", "app", "--describe"],
     "UnsupportedVersionException: The node does not support DESCRIBE_CLIENT_QUOTAS"),
])
def test_configs_tool_refusals_are_one_line_and_exit_1(cluster, args, line):
    result = configs(cluster, *args, check=False)
    assert result.returncode == 1 and result.stdout == ""
    (only,) = result.stderr.splitlines()
    assert only.endswith(line)


# ---- last: stops and kills the brokers ----------------------------------------------------------------------------
def test_unclean_election_allowed_dynamically_brings_a_leaderless_partition_back(cluster):
    """The only ISR member dies; once the topic allows unclean elections (a dynamic topic config), the other
    replica coming back is elected outside the ISR, reports the partition recovered, and takes writes again."""
    from kafka import KafkaProducer

    from pykraft.controller.partitions import LeaderRecoveryState

    from .metadata_probe import image_of
    a, b = cluster.broker_ids
    controller = cluster.nodes[cluster.controller_ids[0]]
    cluster.cli("topics", "--create", "--topic", "unclean", "--replica-assignment", f"{a}:{b}",
                "--bootstrap-server", server(cluster))

    def state():
        image = image_of(controller)
        topic_id = image.topic_id("unclean")
        return None if topic_id is None else image.partition(topic_id, 0)
    try:
        wait_for(lambda: state() is not None and state().leader == a, "the partition led by its first replica")
        cluster.stop(b)  # controlled shutdown: b leaves the ISR
        wait_for(lambda: state().isr == (a,), "the ISR down to broker a")
        cluster.kill(a)
        wait_for(lambda: state().leader == -1, "the partition leaderless once its only ISR member is fenced")
        cluster.cli("configs", "--bootstrap-controller", cluster.bootstrap_servers(), "--entity-type", "topics",
                    "--entity-name", "unclean", "--alter", "--add-config", "unclean.leader.election.enable=true")
        cluster.start(b)
        wait_for(lambda: state().leader == b and state().leader_recovery_state is LeaderRecoveryState.RECOVERED,
                 "broker b elected uncleanly and the partition reported recovered", timeout=90)
        producer = KafkaProducer(bootstrap_servers=f"127.0.0.1:{cluster.nodes[b].port}", acks="all")
        try:
            producer.send("unclean", b"after").get(timeout=30)
        finally:
            producer.close()
    finally:
        for node in (a, b):
            if not cluster.nodes[node].is_running():
                cluster.start(node)
