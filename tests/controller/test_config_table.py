"""The config table (controller/config_table.py) and what is derived from it: Kafka's definitions, validators,
synonyms, the effective value of a topic config, and pykraft's status of each key."""

from __future__ import annotations

import pytest

from pykraft.controller.config_defs import (BROKER_CONFIGS, DEFAULT_ONLY, HONOURED, IGNORED, LIVE, REFUSED,
                                            TOPIC_CONFIGS, ConfigType, check_topic_configs, check_value, normalized)
from pykraft.controller.config_schema import (PRIMARY_SYNONYM, SOURCE_DEFAULT, SOURCE_DYNAMIC_BROKER,
                                              SOURCE_DYNAMIC_DEFAULT_BROKER, SOURCE_STATIC_BROKER, SOURCE_TOPIC,
                                              TOPIC_SYNONYMS, broker_definition, broker_synonyms, did_you_mean,
                                              effective_topic_config, effective_topic_configs, listener_base)


def test_every_key_has_a_known_status_and_every_default_passes_its_own_validator():
    assert {d.status for d in BROKER_CONFIGS.values()} == {HONOURED, LIVE, IGNORED, REFUSED}
    assert {d.status for d in TOPIC_CONFIGS.values()} == {HONOURED, DEFAULT_ONLY}
    for definition in (*BROKER_CONFIGS.values(), *TOPIC_CONFIGS.values()):
        if definition.default not in (None, ""):
            assert check_value(definition, definition.default) is None, definition.name


def test_only_keys_kafka_changes_dynamically_are_live():
    live = {name for name, d in BROKER_CONFIGS.items() if d.status == LIVE}
    assert all(BROKER_CONFIGS[name].dynamic for name in live)
    assert {"log.retention.ms", "min.insync.replicas", "message.max.bytes", "log.segment.bytes",
            "num.replica.fetchers"} <= live
    assert BROKER_CONFIGS["log.retention.hours"].mode == "read-only"  # Kafka: only the .ms form is dynamic
    assert BROKER_CONFIGS["listeners"].mode == "per-broker" and BROKER_CONFIGS["log.dirs"].mode == "read-only"


def test_every_topic_synonym_names_known_keys():
    assert set(TOPIC_SYNONYMS) <= set(TOPIC_CONFIGS)
    assert set(TOPIC_CONFIGS) - set(TOPIC_SYNONYMS) == {  # Kafka gives these no broker default
        "follower.replication.throttled.replicas", "leader.replication.throttled.replicas", "remote.storage.enable",
        "remote.log.copy.disable", "remote.log.delete.on.disable"}
    for keys in TOPIC_SYNONYMS.values():
        assert all(key in BROKER_CONFIGS for key, _ in keys)
    assert TOPIC_SYNONYMS["retention.ms"] == (("log.retention.ms", 1), ("log.retention.minutes", 60_000),
                                              ("log.retention.hours", 3_600_000))
    assert PRIMARY_SYNONYM["max.message.bytes"] == "message.max.bytes"


@pytest.mark.parametrize(("name", "value", "reason"), [
    ("log.retention.ms", "x", "Not a number of type LONG"),
    ("num.partitions", "0", "Value must be at least 1"),
    ("log.cleaner.min.cleanable.ratio", "1.5", "Value must be no more than 1"),
    ("log.cleanup.policy", "compact,forever", "String must be one of: compact, delete"),
    ("group.consumer.migration.policy", "sideways",
     "String must be one of (case insensitive): DISABLED, DOWNGRADE, UPGRADE, BIDIRECTIONAL"),
    ("remote.log.storage.manager.impl.prefix", "", "String must be non-empty"),
    ("compression.gzip.level", "10", "Value must be one of: -1, [1,...,9]"),
])
def test_kafkas_validators_refuse_in_kafkas_words(name, value, reason):
    assert check_value(BROKER_CONFIGS[name], value) == f"Invalid value {value} for configuration {name}: {reason}"


def test_a_throttled_replica_list_is_checked_as_kafka_does():
    definition = TOPIC_CONFIGS["leader.replication.throttled.replicas"]
    assert check_value(definition, "0:1,1:2") is None and check_value(definition, "*") is None
    assert check_value(definition, "zero").endswith(
        "must be the literal '*' or a list of replicas in the following format: "
        "[partitionId]:[brokerId],[partitionId]:[brokerId],...")


def test_values_are_normalized_as_kafka_prints_them():
    assert normalized(TOPIC_CONFIGS["cleanup.policy"], "compact, delete") == "compact,delete"
    assert normalized(TOPIC_CONFIGS["preallocate"], "FALSE") == "false"
    assert normalized(BROKER_CONFIGS["log.cleaner.min.cleanable.ratio"], "1e-5") == "1.0E-5"
    assert normalized(TOPIC_CONFIGS["retention.ms"], "soon") == "soon"  # unchanged when it does not parse


def test_a_topic_config_pykraft_does_not_implement_is_accepted_only_at_its_default():
    assert check_topic_configs({"compression.type": "producer", "preallocate": "False"}) is None
    assert check_topic_configs({"compression.type": "zstd"}) == (
        "pykraft does not implement the topic config compression.type: only its default value producer is "
        "accepted, not zstd")
    # Kafka's own checks come first: a bad value is Kafka's error, not pykraft's
    assert check_topic_configs({"compression.type": "brotli"}).startswith("Invalid value brotli")


def test_broker_synonyms_are_kafkas():
    assert broker_synonyms("log.retention.hours") == ["log.retention.ms", "log.retention.minutes",
                                                      "log.retention.hours"]
    assert broker_synonyms("log.roll.ms") == ["log.roll.ms", "log.roll.hours"]
    assert broker_synonyms("log.flush.interval.ms") == ["log.flush.interval.ms", "log.flush.scheduler.interval.ms"]
    assert broker_synonyms("log.flush.scheduler.interval.ms") == ["log.flush.scheduler.interval.ms"]
    assert broker_synonyms("listener.name.external.ssl.keystore.location") == [
        "listener.name.external.ssl.keystore.location", "ssl.keystore.location"]
    assert broker_synonyms("listener.name.sasl_ssl.plain.sasl.jaas.config") == [
        "listener.name.sasl_ssl.plain.sasl.jaas.config", "sasl.jaas.config"]
    assert broker_synonyms("listener.name.x.ssl.keystore.location", match_listener_override=False) == [
        "listener.name.x.ssl.keystore.location"]
    assert listener_base("ssl.keystore.location") is None
    assert broker_definition("listener.name.x.ssl.keystore.password").type == ConfigType.PASSWORD


def test_did_you_mean_finds_the_typo_and_nothing_for_unrelated_names():
    assert did_you_mean("min.insync.replica", BROKER_CONFIGS) == "min.insync.replicas"
    assert did_you_mean("log.retention.msec", BROKER_CONFIGS) == "log.retention.ms"
    assert did_you_mean("foo.bar", BROKER_CONFIGS) is None


RETENTION = TOPIC_CONFIGS["retention.ms"]


@pytest.mark.parametrize(("topic", "node", "cluster", "static", "expected"), [
    ({}, {}, {}, {}, ("604800000", SOURCE_DEFAULT)),
    ({}, {}, {}, {"log.retention.hours": "1"}, ("3600000", SOURCE_STATIC_BROKER)),
    ({}, {}, {}, {"log.retention.hours": "1", "log.retention.minutes": "2"}, ("120000", SOURCE_STATIC_BROKER)),
    ({}, {}, {"log.retention.ms": "5"}, {"log.retention.ms": "9"}, ("5", SOURCE_DYNAMIC_DEFAULT_BROKER)),
    ({}, {"log.retention.hours": "2"}, {"log.retention.ms": "5"}, {}, ("7200000", SOURCE_DYNAMIC_BROKER)),
    ({"retention.ms": "42"}, {"log.retention.ms": "1"}, {"log.retention.ms": "5"}, {}, ("42", SOURCE_TOPIC)),
    ({}, {}, {}, {"log.retention.hours": "-1"}, ("-1", SOURCE_STATIC_BROKER)),  # "forever" is not multiplied
])
def test_a_topic_configs_effective_value_follows_kafkas_precedence(topic, node, cluster, static, expected):
    assert effective_topic_config(RETENTION, topic, node, cluster, static) == expected


def test_the_effective_configs_of_a_new_topic_list_every_topic_config_by_name():
    found = effective_topic_configs({"cleanup.policy": "compact"}, {}, {"min.insync.replicas": "2"}, {})
    assert [name for name, *_ in found] == sorted(TOPIC_CONFIGS)
    by_name = {name: (value, source) for name, value, source, _ in found}
    assert by_name["cleanup.policy"] == ("compact", SOURCE_TOPIC)
    assert by_name["min.insync.replicas"] == ("2", SOURCE_DYNAMIC_DEFAULT_BROKER)
    assert by_name["segment.bytes"] == ("1073741824", SOURCE_DEFAULT)


def test_every_live_broker_key_is_applied_by_the_data_plane_or_named_here():
    from pykraft.broker.topic_settings import BROKER_KEYS
    live = {name for name, d in BROKER_CONFIGS.items() if d.status == LIVE}
    elsewhere = {
        "num.replica.fetchers", "producer.id.expiration.ms",  # node/hosts: TopicSettingsCache.broker_int
        "unclean.leader.election.enable",  # controller/configs.py: ConfigControl.unclean_election_enabled
    }
    assert live - BROKER_KEYS == elsewhere
    # what the data plane reads from server.properties is honoured (live where Kafka changes it dynamically)
    assert all(BROKER_CONFIGS[key].status in (HONOURED, LIVE) for key in BROKER_KEYS)
