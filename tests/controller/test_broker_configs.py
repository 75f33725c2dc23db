"""Broker configs on the controller and in DescribeConfigs: Kafka's checks of a dynamic change (and pykraft's refusal
of what it would not apply live), a broker's description (values in effect, sources, synonyms, read-only, masking,
types, documentation), CreateTopics' configs, and unclean.leader.election.enable read from the configs."""

from __future__ import annotations

import random

import pytest
from kio.schema.describe_configs.v4 import request as dc
from kio.schema.incremental_alter_configs.v1 import request as iac
from kio.static.primitive import i8

from pykraft.controller.broker_configs import BrokerConfigError, check_broker_changes, scala_set
from pykraft.controller.configs import ConfigControl
from pykraft.controller.controller import QuorumController
from pykraft.controller.describe_configs import NodeView, describe_configs
from pykraft.protocol.codec import encode_response
from pykraft.protocol.errors import ErrorCode

from .test_topic_configs import FIVE, config, create_request, with_configs

TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8


def refusal(changes, per_broker=True):
    with pytest.raises(BrokerConfigError) as info:
        check_broker_changes(changes, per_broker)
    return info.value.code, info.value.message


def test_kafkas_checks_come_first_in_kafkas_order_and_words():
    assert refusal({"log.dirs": "/x", "num.io.threads": "2"}) == (
        ErrorCode.INVALID_REQUEST, "Cannot update these configs dynamically: Set(log.dirs)")
    assert refusal({"ssl.keystore.location": "/k"}) == (
        ErrorCode.INVALID_REQUEST, "These security configs can be dynamically updated only per-listener using the "
                                   "listener prefix: Set(ssl.keystore.location)")
    assert refusal({"log.retention.ms": "soon"}) == (
        ErrorCode.INVALID_REQUEST, "Invalid value soon for configuration log.retention.ms: Not a number of type LONG")
    assert refusal({"listener.name.external.ssl.keystore.type": "PKCS12", "listeners": "P://:1"},
                   per_broker=False) == (
        ErrorCode.INVALID_REQUEST, "Cannot update these configs at default cluster level, broker id must be "
                                   "specified: Set(listener.name.external.ssl.keystore.type, listeners)")
    code, message = refusal({"num.replica.fetchers": "0"})
    assert code == ErrorCode.INVALID_REQUEST and "value should be at least 1" in message


def test_pykraft_refuses_what_it_would_not_apply_live():
    assert refusal({"min.insync.replica": "2"}) == (
        ErrorCode.INVALID_CONFIG, "Unknown broker config name: min.insync.replica. Did you mean min.insync.replicas?")
    assert refusal({"num.io.threads": "16"}) == (
        ErrorCode.INVALID_CONFIG, "pykraft does not implement these configs: Set(num.io.threads)")
    assert refusal({"listener.name.external.ssl.keystore.location": "/k"}) == (
        ErrorCode.INVALID_CONFIG, "pykraft does not implement these configs: "
                                  "Set(listener.name.external.ssl.keystore.location)")
    assert refusal({"log.cleaner.threads": "2"}) == (
        ErrorCode.INVALID_CONFIG, "pykraft applies these configs only at start (server.properties), not "
                                  "dynamically: Set(log.cleaner.threads)")


def test_live_keys_and_removals_are_accepted():
    check_broker_changes({"log.retention.ms": "1000", "min.insync.replicas": "2", "num.replica.fetchers": "2",
                          "log.dirs": None, "foo": None}, per_broker=False)


def test_scala_sets_print_as_kafkas():
    assert scala_set(["b", "a"]) == "Set(a, b)"
    assert scala_set("abcde") == "HashSet(a, b, c, d, e)"


def alter(control: ConfigControl, kind, name, *ops):
    request = iac.IncrementalAlterConfigsRequest(resources=(iac.AlterConfigsResource(
        resource_type=i8(kind), resource_name=name, configs=tuple(
            iac.AlterableConfig(name=k, config_operation=i8(op), value=v) for k, op, v in ops)),), validate_only=False)
    result = control.incremental_alter(request, controller.replication)
    for record in result.records:
        control.replay(record)
    (answer,) = result.response.responses
    return answer.error_code, answer.error_message


controller = QuorumController(config(3000), random.Random(1))


def describe(control, kind, name, node, *, synonyms=True, docs=False, keys=None):
    request = dc.DescribeConfigsRequest(resources=(dc.DescribeConfigsResource(
        resource_type=i8(kind), resource_name=name, configuration_keys=keys),), include_synonyms=synonyms,
        include_documentation=docs)
    response = describe_configs(control, lambda t: t == "t", request, node)
    encode_response(1, response)
    (result,) = response.results
    return result


def test_incremental_alter_of_a_broker_checks_appends_and_refuses_nulls():
    control = ConfigControl()
    assert alter(control, BROKER, "", ("log.cleanup.policy", 2, "compact")) == (ErrorCode.NONE, None)
    assert control.of(BROKER, "") == {"log.cleanup.policy": "delete,compact"}
    assert alter(control, BROKER, "1", ("log.retention.ms", 0, None)) == (
        ErrorCode.INVALID_REQUEST, "Null value not supported for : log.retention.ms")
    assert alter(control, BROKER, "-1", ("log.retention.ms", 0, "1")) == (
        ErrorCode.INVALID_REQUEST, "Invalid negative broker ID.")
    assert alter(control, BROKER, "1", ("log.retention.ms", 0, "1"), ("log.retention.ms", 0, "2")) == (
        ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")


def test_a_broker_describes_every_key_with_the_value_in_effect_and_kafkas_synonyms():
    control = ConfigControl()
    alter(control, BROKER, "", ("log.retention.ms", 0, "1000"))
    alter(control, BROKER, "7", ("log.retention.hours", 1, None), ("min.insync.replicas", 0, "2"))
    node = NodeView(7, {"node.id": "7", "log.retention.hours": "24", "ssl.keystore.password": "secret",
                        "custom.key": "x", "pykraft.metrics.port": "9000"})
    result = describe(control, BROKER, "7", node)
    assert result.error_code == ErrorCode.NONE
    entries = {c.name: c for c in result.configs}
    assert len(entries) > 250 and list(entries) == sorted(entries)
    ms = entries["log.retention.ms"]
    assert (ms.value, int(ms.config_source), ms.read_only, ms.is_sensitive) == ("1000", 3, False, False)
    assert [(s.name, s.value, int(s.source)) for s in ms.synonyms] == [
        ("log.retention.ms", "1000", 3), ("log.retention.hours", "24", 4), ("log.retention.hours", "168", 5)]
    hours = entries["log.retention.hours"]
    # the dynamic .ms replaced the static .hours in the config in effect: its value is Kafka's default again
    assert (hours.value, int(hours.config_source), hours.read_only) == ("168", 4, True)
    assert [(s.name, int(s.source)) for s in hours.synonyms] == [("log.retention.hours", 4),
                                                                ("log.retention.hours", 5)]
    assert (entries["min.insync.replicas"].value, int(entries["min.insync.replicas"].config_source)) == ("2", 2)
    assert entries["broker.id"].value == "7"  # Kafka's synonym of node.id
    secret = entries["ssl.keystore.password"]
    assert (secret.value, secret.is_sensitive, [s.value for s in secret.synonyms]) == (None, True, [None])
    custom = entries["custom.key"]  # a key Kafka does not know: its type is unknown, so it is masked
    assert (custom.value, custom.is_sensitive, int(custom.config_type)) == (None, True, 0)
    assert (entries["pykraft.metrics.port"].value, entries["pykraft.metrics.port"].is_sensitive) == ("9000", False)
    assert int(entries["log.retention.ms"].config_type) == 5 and entries["log.retention.ms"].documentation is None
    assert "leader.replication.throttled.rate" not in entries  # a dynamic-only quota, not a KafkaConfig key


def test_the_default_resource_lists_the_dynamic_defaults_only_with_their_own_synonyms():
    control = ConfigControl()
    alter(control, BROKER, "", ("log.retention.ms", 0, "1000"))
    result = describe(control, BROKER, "", NodeView(1, {"log.retention.hours": "24"}))
    (entry,) = result.configs
    assert (entry.name, entry.value, int(entry.config_source)) == ("log.retention.ms", "1000", 3)
    assert [(s.name, int(s.source)) for s in entry.synonyms] == [("log.retention.ms", 3)]


def test_synonyms_and_documentation_only_when_asked_and_keys_filter():
    control = ConfigControl()
    node = NodeView(1, {"log.retention.hours": "24"})
    plain = describe(control, BROKER, "1", node, synonyms=False, keys=("log.retention.hours",))
    (entry,) = plain.configs
    assert entry.synonyms == () and entry.documentation is None and int(entry.config_source) == 4
    documented = describe(control, BROKER, "1", node, docs=True, keys=("log.retention.hours", "num.io.threads"))
    docs = {c.name: c.documentation for c in documented.configs}
    assert "hours" in docs["log.retention.hours"] and "does not implement" in docs["num.io.threads"]
    assert len(describe(control, BROKER, "1", node, keys=()).configs) > 250  # an empty list means every key


@pytest.mark.parametrize(("kind", "name", "message"), [
    (BROKER, "2", "Unexpected broker id, expected 1 or empty string, but received 2"),
    (BROKER, "x", "Broker id must be an integer, but it is: x"),
    (BROKER_LOGGER, "", "Broker id must not be empty"),
    (BROKER_LOGGER, "2", "Unexpected broker id, expected 1 but received 2"),
    (32, "g", "Unsupported resource type: GROUP"),
])
def test_resources_a_node_does_not_describe_are_refused_alone(kind, name, message):
    result = describe(ConfigControl(), kind, name, NodeView(1))
    assert (result.error_code, result.error_message, result.configs) == (ErrorCode.INVALID_REQUEST, message, ())


def test_topics_describe_with_the_nodes_broker_settings_and_kafkas_synonyms():
    control = ConfigControl()
    alter(control, BROKER, "", ("log.retention.ms", 0, "5000"))
    result = describe(control, TOPIC, "t", NodeView(1, {"log.retention.hours": "1", "log.segment.bytes": "2097152"}))
    entries = {c.name: c for c in result.configs}
    retention = entries["retention.ms"]
    assert (retention.value, int(retention.config_source)) == ("5000", 3)
    assert [(s.name, s.value, int(s.source)) for s in retention.synonyms] == [
        ("log.retention.ms", "5000", 3), ("log.retention.hours", "1", 4), ("log.retention.hours", "168", 5)]
    segment = entries["segment.bytes"]
    assert (segment.value, int(segment.config_source), segment.read_only) == ("2097152", 4, False)
    missing = describe(control, TOPIC, "other", NodeView(1))
    assert (missing.error_code, missing.error_message) == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)
    bad = describe(control, TOPIC, "a/b", NodeView(1))
    assert bad.error_code == ErrorCode.INVALID_TOPIC_EXCEPTION


def test_broker_loggers_are_described_from_what_the_node_hands_in():
    node = NodeView(1, loggers=lambda: {"root": "INFO", "pykraft.node": "DEBUG"})
    result = describe(ConfigControl(), BROKER_LOGGER, "1", node)
    assert [(c.name, c.value, int(c.config_source)) for c in result.configs] == [("pykraft.node", "DEBUG", 6),
                                                                                 ("root", "INFO", 6)]


def test_create_topics_answers_every_config_of_the_new_topic():
    quorum = QuorumController(config(3000), random.Random(1))
    quorum.configs.replay_side(4, _record(BROKER, "", "min.insync.replicas", "2"), quorum.replication)
    request = create_request(with_configs("t", retention_ms="1000"))
    result = quorum.replication.handle_create_topics(request, FIVE, 0, quorum._effective_topic_configs)
    (topic,) = result.response.topics
    by_name = {c.name: (c.value, int(c.config_source), c.read_only, c.is_sensitive) for c in topic.configs}
    assert [c.name for c in topic.configs] == sorted(by_name) and len(by_name) == 33
    assert by_name["retention.ms"] == ("1000", 1, False, False)
    assert by_name["min.insync.replicas"] == ("2", 3, False, False)
    assert by_name["segment.bytes"] == ("1073741824", 5, False, False)
    assert (int(topic.num_partitions), int(topic.replication_factor)) == (2, 1)


def _record(kind, name, key, value):
    from pykraft.records.metadata.schema.config_record import ConfigRecordV0
    return ConfigRecordV0(resource_type=i8(kind), resource_name=name, name=key, value=value)


def test_unclean_leader_election_follows_the_topic_then_the_brokers_configs():
    quorum = QuorumController(config(3000), random.Random(1))
    enabled = quorum.replication.unclean_election_enabled
    assert enabled("t") is False
    quorum.configs.replay(_record(BROKER, "", "unclean.leader.election.enable", "true"))
    assert enabled("t") is True
    quorum.configs.replay(_record(TOPIC, "t", "unclean.leader.election.enable", "false"))
    assert enabled("t") is False and enabled("u") is True


def test_a_leaderless_partition_is_elected_uncleanly_once_its_topic_allows_it():
    """The periodic check (Kafka's electUnclean task): nothing while the topic forbids it; once
    unclean.leader.election.enable=true (a dynamic topic config), the next check elects the live replica outside the
    ISR and leaves the partition RECOVERING."""
    from pykraft.controller.controller import INCREMENTAL_ALTER_CONFIGS
    from pykraft.controller.partitions import LeaderRecoveryState
    from pykraft.records.metadata.schema.partition_change_record import PartitionChangeRecordV2

    from .controller_cluster import Quorum
    q = Quorum(max_idle_interval_ms=0, auto_leader_rebalance=False, unclean_check_interval_ms=60_000)
    q.activate(0, now_ms=0)
    q.start_brokers(1, 2)
    q.create_topic("t", partitions=1, replication=2, assignments=[[1, 2]])
    assert q.alter_isr("t", 0, [1]).topics[0].partitions[0].error_code == 0
    q.heartbeat(1, want_fence=True)  # the only ISR member goes: the partition has no leader
    assert q.partitions()[0].leader == -1
    q.heartbeat(2, now_ms=59_000)
    assert q.tick(60_000).records == ()
    request = iac.IncrementalAlterConfigsRequest(resources=(iac.AlterConfigsResource(
        resource_type=i8(TOPIC), resource_name="t", configs=(iac.AlterableConfig(
            name="unclean.leader.election.enable", config_operation=i8(0), value="true"),)),), validate_only=False)
    assert q.request(INCREMENTAL_ALTER_CONFIGS, request, now_ms=60_000).responses[0].error_code == 0
    q.heartbeat(2, now_ms=119_000)
    (change,) = q.tick(120_000).records
    assert isinstance(change, PartitionChangeRecordV2) and change.leader == 2
    (partition,) = q.partitions()
    assert (partition.leader, partition.isr, partition.leader_recovery_state) == (
        2, (2,), LeaderRecoveryState.RECOVERING)
