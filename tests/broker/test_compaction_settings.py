"""A topic's compaction settings with Kafka's precedence (broker/topic_settings.py): cleanup.policy as a list,
the ratio as a double, the broker's log.cleaner.* defaults, and the roll by max.compaction.lag.ms."""

from __future__ import annotations

from pykraft.broker.topic_settings import BROKER_KEYS, TopicSettings, static_settings, topic_settings


def test_cleanup_policy_is_a_list_and_the_topic_wins_over_the_broker() -> None:
    static = static_settings({"log.cleanup.policy": "compact", "log.cleaner.min.cleanable.ratio": "0.2",
                              "log.cleaner.delete.retention.ms": "1000"})
    assert (static.compact, static.delete, static.min_cleanable_ratio, static.delete_retention_ms) == \
        (True, False, 0.2, 1000)
    both, problems = topic_settings(static, {"cleanup.policy": "compact,delete", "min.cleanable.dirty.ratio": "0.7"},
                                    {}, {})
    assert (both.compact, both.delete, both.min_cleanable_ratio, problems) == (True, True, 0.7, [])
    plain, _ = topic_settings(TopicSettings(), {}, {}, {})
    assert (plain.compact, plain.delete) == (False, True)  # Kafka's default: delete


def test_unusable_dynamic_values_are_skipped_and_reported() -> None:
    settings, problems = topic_settings(TopicSettings(), {}, {"log.cleanup.policy": "Compact",
                                                              "log.cleaner.min.cleanable.ratio": "2"}, {})
    assert (settings.compact, settings.min_cleanable_ratio) == (False, 0.5)
    assert problems == ["log.cleanup.policy: 'Compact' is not a list of compact, delete",
                        "log.cleaner.min.cleanable.ratio: 2.0 is above the maximum 1"]


def test_a_compacted_topic_rolls_by_max_compaction_lag_ms() -> None:
    settings, _ = topic_settings(TopicSettings(), {"cleanup.policy": "compact", "max.compaction.lag.ms": "60000",
                                                   "segment.ms": "3600000"}, {}, {})
    assert settings.roll_ms == 60_000
    deleting, _ = topic_settings(TopicSettings(), {"max.compaction.lag.ms": "60000", "segment.ms": "3600000"}, {}, {})
    assert deleting.roll_ms == 3_600_000  # only a compacted topic does (Kafka's LogConfig.maxSegmentMs)


def test_the_broker_keys_read_include_the_cleaners_topic_defaults() -> None:
    assert {"log.cleanup.policy", "log.cleaner.min.cleanable.ratio", "log.cleaner.min.compaction.lag.ms",
            "log.cleaner.max.compaction.lag.ms", "log.cleaner.delete.retention.ms"} <= BROKER_KEYS
