"""Kafka's precedence for the settings the data plane applies per topic (broker/topic_settings.py)."""

from __future__ import annotations

import pytest

from pykraft.broker.produce_rules import stamp_log_append_time, validate_batch
from pykraft.broker.topic_settings import WEEK_MS, TopicSettings, static_settings, topic_settings
from pykraft.records import SimpleRecord, encode_batch, iter_batches
from pykraft.records.batch import ATTR_TIMESTAMP_TYPE


def test_kafka_defaults_without_any_config() -> None:
    settings = static_settings({})
    assert settings == TopicSettings()
    assert (settings.min_insync_replicas, settings.max_message_bytes, settings.retention_ms) == (1, 1048588, WEEK_MS)
    assert not settings.log_append_time


def test_topic_beats_broker_dynamic_beats_cluster_default_beats_static() -> None:
    static = static_settings({"min.insync.replicas": "2", "log.retention.bytes": "100", "message.max.bytes": "500"})
    settings, problems = topic_settings(
        static, {"min.insync.replicas": "3"},
        {"min.insync.replicas": "4", "log.retention.bytes": "200"},
        {"min.insync.replicas": "5", "log.retention.bytes": "300", "message.max.bytes": "600"})
    assert problems == []
    assert settings.min_insync_replicas == 3  # topic
    assert settings.retention_bytes == 200  # the broker's own dynamic config
    assert settings.max_message_bytes == 600  # the cluster-wide dynamic default
    assert settings.segment_bytes == 1 << 30  # nothing set anywhere: Kafka's default
    only_static, _ = topic_settings(static, {}, {}, {})
    assert (only_static.min_insync_replicas, only_static.retention_bytes, only_static.max_message_bytes) == (2, 100, 500)


def test_topic_names_differ_from_broker_names() -> None:
    static = static_settings({})
    settings, _ = topic_settings(static, {"retention.ms": "10", "segment.bytes": "2097152", "segment.ms": "20",
                                          "max.message.bytes": "30", "message.timestamp.type": "LogAppendTime"},
                                 {}, {})
    assert (settings.retention_ms, settings.segment_bytes, settings.segment_ms, settings.max_message_bytes) == \
        (10, 2097152, 20, 30)
    assert settings.log_append_time
    # a broker-only name set on the topic level is not a topic config: ignored there
    ignored, _ = topic_settings(static, {"log.retention.ms": "10"}, {}, {})
    assert ignored.retention_ms == WEEK_MS


def test_synonyms_most_precise_first_inside_a_level_and_a_higher_level_wins_whole() -> None:
    static = static_settings({"log.retention.hours": "1", "log.retention.minutes": "2", "log.roll.hours": "3"})
    assert static.retention_ms == 2 * 60_000  # minutes beat hours
    assert static.segment_ms == 3 * 3_600_000
    assert static_settings({"log.retention.ms": "5", "log.retention.hours": "1"}).retention_ms == 5
    # a dynamic hours value overrides a static ms value (Kafka removes the lower level's synonyms)
    settings, _ = topic_settings(static_settings({"log.retention.ms": "5"}), {}, {"log.retention.hours": "2"}, {})
    assert settings.retention_ms == 2 * 3_600_000
    assert static_settings({"log.retention.hours": "-1"}).retention_ms == -1  # no limit stays -1


def test_unusable_dynamic_value_is_skipped_and_reported_static_refuses_start() -> None:
    static = static_settings({"min.insync.replicas": "2"})
    settings, problems = topic_settings(static, {}, {"min.insync.replicas": "many"}, {"min.insync.replicas": "0"})
    assert settings.min_insync_replicas == 2
    assert problems == ["min.insync.replicas: 'many' is not an integer", "min.insync.replicas: 0 is below the minimum 1"]
    _, problems = topic_settings(static, {}, {"log.message.timestamp.type": "Now"}, {})
    assert problems and "CreateTime, LogAppendTime" in problems[0]
    with pytest.raises(ValueError, match="log.segment.bytes: 'big' is not an integer"):
        static_settings({"log.segment.bytes": "big"})


def test_log_append_time_stamp_keeps_the_batch_valid() -> None:
    batch = bytearray(encode_batch([SimpleRecord(value=b"a"), SimpleRecord(value=b"b")], base_offset=0,
                                   partition_leader_epoch=0, timestamp_ms=1000))
    stamp_log_append_time(batch, 123_456)
    assert not hasattr(validate_batch(bytes(batch), 1 << 20), "error")  # CRC checks again
    (parsed,) = list(iter_batches(bytes(batch), verify_crc=True))
    assert parsed.max_timestamp == 123_456
    assert int.from_bytes(batch[21:23], "big") & ATTR_TIMESTAMP_TYPE
