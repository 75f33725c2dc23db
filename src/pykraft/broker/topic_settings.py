"""The settings a partition's data plane applies, per topic, with Kafka's precedence (pure).

Kafka's order, highest first: the topic's own config (a ConfigRecord of the TOPIC resource), the broker's own
dynamic config (BROKER resource named by its id), the cluster-wide dynamic default (BROKER resource with the empty
name), the static broker config (server.properties), Kafka's default. A level that sets any synonym of a setting
wins over every lower level, as Kafka's `DynamicBrokerConfig.overrideProps` removes the lower levels' synonyms;
inside one level the most precise synonym wins (`log.retention.ms` > `.minutes` > `.hours`, `log.roll.ms` >
`.hours`), as `KafkaConfig` reads them.

Topic values were checked by the controller when written (config_defs.py); broker dynamic values are stored as
given, so a value that does not parse is skipped (the next level applies) and reported, never raised: a bad
AlterConfigs must not stop a broker. The static config is parsed at start, where a bad value refuses the start.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

WEEK_MS = 7 * 24 * 3600 * 1000
LONG_MAX = (1 << 63) - 1  # Kafka's "never" for flush.ms and flush.messages
CREATE_TIME, LOG_APPEND_TIME = "CreateTime", "LogAppendTime"


@dataclass(frozen=True, slots=True)
class TopicSettings:
    """What the data plane applies to one topic's partitions (Kafka's defaults)."""

    min_insync_replicas: int = 1  # min.insync.replicas
    max_message_bytes: int = 1048588  # max.message.bytes / message.max.bytes
    segment_bytes: int = 1 << 30  # segment.bytes / log.segment.bytes
    segment_ms: int = WEEK_MS  # segment.ms / log.roll.ms
    retention_ms: int = WEEK_MS  # retention.ms / log.retention.ms
    retention_bytes: int = -1  # retention.bytes / log.retention.bytes
    log_append_time: bool = False  # message.timestamp.type / log.message.timestamp.type = LogAppendTime
    # flush.ms / log.flush.interval.ms and flush.messages / log.flush.interval.messages: Kafka never fsyncs a
    # partition by default (durability comes from replication); these force a periodic flush when set.
    flush_ms: int = LONG_MAX
    flush_messages: int = LONG_MAX
    # cleanup.policy / log.cleanup.policy: "delete" (retention), "compact" (the log cleaner), or both.
    compact: bool = False
    delete: bool = True
    min_cleanable_ratio: float = 0.5  # min.cleanable.dirty.ratio / log.cleaner.min.cleanable.ratio
    min_compaction_lag_ms: int = 0  # min.compaction.lag.ms / log.cleaner.min.compaction.lag.ms
    max_compaction_lag_ms: int = LONG_MAX  # max.compaction.lag.ms / log.cleaner.max.compaction.lag.ms
    delete_retention_ms: int = 86_400_000  # delete.retention.ms / log.cleaner.delete.retention.ms
    # segment.index.bytes: the most index bytes a group of cleaned segments may hold. pykraft's indexes have no
    # size limit and the key is default-only for topics (controller/config_table.py), so Kafka's default stays.
    segment_index_bytes: int = 10 * 1024 * 1024

    @property
    def roll_ms(self) -> int:
        """Kafka's LogConfig.maxSegmentMs: a compacted topic rolls by max.compaction.lag.ms too (only a rolled
        segment can be cleaned)."""
        if self.compact and self.max_compaction_lag_ms > 0:
            return min(self.max_compaction_lag_ms, self.segment_ms)
        return self.segment_ms


@dataclass(frozen=True, slots=True)
class _Setting:
    field: str
    topic_key: str
    broker_keys: tuple[tuple[str, int], ...]  # (synonym, multiplier to the field's unit), most precise first
    minimum: float | None = None  # Kafka's validator (at least)
    kind: str = "int"  # "int", "float" (min.cleanable.dirty.ratio) or "policy" (cleanup.policy)
    maximum: float | None = None


_SETTINGS = (
    _Setting("min_insync_replicas", "min.insync.replicas", (("min.insync.replicas", 1),), 1),
    _Setting("max_message_bytes", "max.message.bytes", (("message.max.bytes", 1),), 0),
    _Setting("segment_bytes", "segment.bytes", (("log.segment.bytes", 1),), 1 << 20),
    _Setting("segment_ms", "segment.ms", (("log.roll.ms", 1), ("log.roll.hours", 3600 * 1000)), 1),
    _Setting("retention_ms", "retention.ms",
             (("log.retention.ms", 1), ("log.retention.minutes", 60 * 1000), ("log.retention.hours", 3600 * 1000)),
             -1),
    _Setting("retention_bytes", "retention.bytes", (("log.retention.bytes", 1),)),
    _Setting("flush_ms", "flush.ms", (("log.flush.interval.ms", 1),), 0),
    _Setting("flush_messages", "flush.messages", (("log.flush.interval.messages", 1),), 1),
    _Setting("policy", "cleanup.policy", (("log.cleanup.policy", 1),), kind="policy"),
    _Setting("min_cleanable_ratio", "min.cleanable.dirty.ratio", (("log.cleaner.min.cleanable.ratio", 1),), 0,
             kind="float", maximum=1),
    _Setting("min_compaction_lag_ms", "min.compaction.lag.ms", (("log.cleaner.min.compaction.lag.ms", 1),), 0),
    _Setting("max_compaction_lag_ms", "max.compaction.lag.ms", (("log.cleaner.max.compaction.lag.ms", 1),), 1),
    _Setting("delete_retention_ms", "delete.retention.ms", (("log.cleaner.delete.retention.ms", 1),), 0),
)
_POLICIES = ("compact", "delete")
_TIMESTAMP_TYPE = ("message.timestamp.type", "log.message.timestamp.type")
# The server.properties keys this module reads (config_checks.IMPLEMENTED_KEYS lists them).
BROKER_KEYS = frozenset({k for s in _SETTINGS for k, _ in s.broker_keys} | {_TIMESTAMP_TYPE[1]})


def _parse(key: str, text: Any, setting: _Setting | None) -> tuple[Any, str | None]:
    """(value, None) or (None, a one-line reason)."""
    value = str(text).strip()
    if setting is None:  # the timestamp type
        if value in (CREATE_TIME, LOG_APPEND_TIME):
            return value == LOG_APPEND_TIME, None
        return None, f"{key}: {value!r} is not one of {CREATE_TIME}, {LOG_APPEND_TIME}"
    if setting.kind == "policy":
        policies = {item.strip() for item in value.split(",") if item.strip()}
        if not policies <= set(_POLICIES):
            return None, f"{key}: {value!r} is not a list of {', '.join(_POLICIES)}"
        return ("compact" in policies, "delete" in policies), None
    try:
        number: float = float(value) if setting.kind == "float" else int(value)
    except ValueError:
        return None, f"{key}: {value!r} is not {'a number' if setting.kind == 'float' else 'an integer'}"
    if setting.minimum is not None and number < setting.minimum:
        return None, f"{key}: {number} is below the minimum {setting.minimum}"
    if setting.maximum is not None and number > setting.maximum:
        return None, f"{key}: {number} is above the maximum {setting.maximum}"
    return number, None


def _from_level(level: Mapping[str, Any], keys: tuple[tuple[str, int], ...], setting: _Setting | None,
                problems: list[str]) -> tuple[bool, Any]:
    """(found, value) from the first synonym this level sets with a usable value."""
    for key, unit in keys:
        if key not in level or level[key] is None or str(level[key]).strip() == "":
            continue
        value, reason = _parse(key, level[key], setting)
        if reason is not None:
            problems.append(reason)
            continue
        if setting is not None and unit != 1 and value >= 0:
            value *= unit
        return True, value
    return False, None


def resolve(base: TopicSettings, levels: tuple[Mapping[str, Any], ...], *, topic_level: bool,
            problems: list[str]) -> TopicSettings:
    """`base` overridden by `levels` (highest precedence first). `topic_level`: the first level uses the topic
    config names (retention.ms), the others the broker names (log.retention.ms)."""
    changes: dict[str, Any] = {}
    keys: tuple[tuple[str, int], ...]
    for setting in (*_SETTINGS, None):
        field = "log_append_time" if setting is None else setting.field
        for position, level in enumerate(levels):
            if topic_level and position == 0:
                keys = ((_TIMESTAMP_TYPE[0] if setting is None else setting.topic_key, 1),)
            else:
                keys = ((_TIMESTAMP_TYPE[1], 1),) if setting is None else setting.broker_keys
            found, value = _from_level(level, keys, setting, problems)
            if found:
                changes[field] = value
                break
    if "policy" in changes:
        changes["compact"], changes["delete"] = changes.pop("policy")
    return dataclasses.replace(base, **changes) if changes else base


def static_settings(raw: Mapping[str, Any]) -> TopicSettings:
    """The static broker config's settings (server.properties). ValueError names the first bad value."""
    problems: list[str] = []
    settings = resolve(TopicSettings(), (raw,), topic_level=False, problems=problems)
    if problems:
        raise ValueError(problems[0])
    return settings


def topic_settings(static: TopicSettings, topic: Mapping[str, str], broker_dynamic: Mapping[str, str],
                   cluster_dynamic: Mapping[str, str]) -> tuple[TopicSettings, list[str]]:
    """One topic's settings and the problems met (unusable dynamic values that were skipped)."""
    problems: list[str] = []
    settings = resolve(static, (topic, broker_dynamic, cluster_dynamic), topic_level=True, problems=problems)
    return settings, problems
