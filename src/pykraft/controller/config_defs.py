"""Kafka's topic config definitions (LogConfig's ConfigDef) and its value checks, with Kafka's messages.

Each topic config has a type, a default and a validator, as Kafka's `LogConfig` defines them (Kafka 4.x, internal
configs left out). `check_value(name, value)` answers what Kafka's `ConfigDef.parse` throws, word for word:
- a value that does not parse as the type: `Invalid value abc for configuration retention.ms: Not a number of type
  LONG` (BOOLEAN: `Expected value to be either true or false`);
- a value outside the range: `... : Value must be at least -1` / `Value must be no more than 1`;
- a string outside its set: `... : String must be one of: CreateTime, LogAppendTime`.
An unknown name is `Unknown topic config name: foo.bar` (LogConfig.validateNames). Kafka answers all of these with
INVALID_CONFIG. `config_type` is DescribeConfigs' ConfigType code.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1


class ConfigType(enum.IntEnum):
    """DescribeConfigs' ConfigType (Kafka's DescribeConfigsResponse.ConfigType)."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


@dataclass(frozen=True, slots=True)
class ConfigDef:
    name: str
    type: ConfigType
    default: str
    at_least: float | None = None
    at_most: float | None = None
    one_of: tuple[str, ...] = ()  # STRING: the value; LIST: each element
    extra_check: Callable[[object], str | None] | None = None  # a reason, or None when the value is fine


def _gzip_level(level: object) -> str | None:
    # CompressionType.GZIP.levelValidator: Deflater.DEFAULT_COMPRESSION (-1) or 1..9
    return None if level == -1 or 1 <= level <= 9 else "Value must be one of: -1, [1,...,9]"  # type: ignore[operator]


_T = ConfigType
_COMPRESSION = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")
TOPIC_CONFIGS: Mapping[str, ConfigDef] = {d.name: d for d in (
    ConfigDef("cleanup.policy", _T.LIST, "delete", one_of=("compact", "delete")),
    ConfigDef("compression.gzip.level", _T.INT, "-1", extra_check=_gzip_level),
    ConfigDef("compression.lz4.level", _T.INT, "9", at_least=1, at_most=17),
    ConfigDef("compression.type", _T.STRING, "producer", one_of=_COMPRESSION),
    ConfigDef("compression.zstd.level", _T.INT, "3", at_least=-131072, at_most=22),
    ConfigDef("delete.retention.ms", _T.LONG, "86400000", at_least=0),
    ConfigDef("file.delete.delay.ms", _T.LONG, "60000", at_least=0),
    ConfigDef("flush.messages", _T.LONG, str(LONG_MAX), at_least=1),
    ConfigDef("flush.ms", _T.LONG, str(LONG_MAX), at_least=0),
    ConfigDef("follower.replication.throttled.replicas", _T.LIST, ""),
    ConfigDef("index.interval.bytes", _T.INT, "4096", at_least=0),
    ConfigDef("leader.replication.throttled.replicas", _T.LIST, ""),
    ConfigDef("local.retention.bytes", _T.LONG, "-2", at_least=-2),
    ConfigDef("local.retention.ms", _T.LONG, "-2", at_least=-2),
    ConfigDef("max.compaction.lag.ms", _T.LONG, str(LONG_MAX), at_least=1),
    ConfigDef("max.message.bytes", _T.INT, "1048588", at_least=0),
    ConfigDef("message.timestamp.after.max.ms", _T.LONG, "3600000", at_least=0),
    ConfigDef("message.timestamp.before.max.ms", _T.LONG, str(LONG_MAX), at_least=0),
    ConfigDef("message.timestamp.type", _T.STRING, "CreateTime", one_of=("CreateTime", "LogAppendTime")),
    ConfigDef("min.cleanable.dirty.ratio", _T.DOUBLE, "0.5", at_least=0, at_most=1),
    ConfigDef("min.compaction.lag.ms", _T.LONG, "0", at_least=0),
    ConfigDef("min.insync.replicas", _T.INT, "1", at_least=1),
    ConfigDef("preallocate", _T.BOOLEAN, "false"),
    ConfigDef("remote.log.copy.disable", _T.BOOLEAN, "false"),
    ConfigDef("remote.log.delete.on.disable", _T.BOOLEAN, "false"),
    ConfigDef("remote.storage.enable", _T.BOOLEAN, "false"),
    ConfigDef("retention.bytes", _T.LONG, "-1"),
    ConfigDef("retention.ms", _T.LONG, "604800000", at_least=-1),
    ConfigDef("segment.bytes", _T.INT, "1073741824", at_least=1024 * 1024),
    ConfigDef("segment.index.bytes", _T.INT, "10485760", at_least=4),
    ConfigDef("segment.jitter.ms", _T.LONG, "0", at_least=0),
    ConfigDef("segment.ms", _T.LONG, "604800000", at_least=1),
    ConfigDef("unclean.leader.election.enable", _T.BOOLEAN, "false"),
)}


def unknown_topic_config(name: str) -> str | None:
    return None if name in TOPIC_CONFIGS else f"Unknown topic config name: {name}"


def parse_value(definition: ConfigDef, value: str) -> tuple[object, str | None]:
    """(parsed value, None) or (None, Kafka's reason) for one value of `definition`'s type."""
    text = value.strip()  # ConfigDef.parseType trims strings first
    kind = definition.type
    if kind == ConfigType.BOOLEAN:
        lowered = text.lower()
        if lowered in ("true", "false"):
            return lowered == "true", None
        return None, "Expected value to be either true or false"
    if kind in (ConfigType.INT, ConfigType.SHORT, ConfigType.LONG):
        bounds = {ConfigType.INT: (INT_MIN, INT_MAX), ConfigType.SHORT: (-(2**15), 2**15 - 1),
                  ConfigType.LONG: (LONG_MIN, LONG_MAX)}[kind]
        try:
            number = int(text)
        except ValueError:
            number = None
        if number is None or not bounds[0] <= number <= bounds[1] or not text.lstrip("+-").isdigit():
            return None, f"Not a number of type {kind.name}"
        return number, None
    if kind == ConfigType.DOUBLE:
        try:
            return float(text), None
        except ValueError:
            return None, f"Not a number of type {kind.name}"
    if kind == ConfigType.LIST:
        return ([] if not text else [item.strip() for item in text.split(",")]), None
    return text, None


def _validator_reason(definition: ConfigDef, parsed: object) -> str | None:
    if definition.at_least is not None and parsed < definition.at_least:  # type: ignore[operator]
        return f"Value must be at least {_number(definition.at_least)}"
    if definition.at_most is not None and parsed > definition.at_most:  # type: ignore[operator]
        return f"Value must be no more than {_number(definition.at_most)}"
    if definition.one_of:
        items = parsed if isinstance(parsed, list) else [parsed]
        if any(item not in definition.one_of for item in items):
            return f"String must be one of: {', '.join(definition.one_of)}"
    return definition.extra_check(parsed) if definition.extra_check is not None else None


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def check_value(definition: ConfigDef, value: str) -> str | None:
    """Kafka's ConfigException message for a bad value, None for a good one."""
    parsed, reason = parse_value(definition, value)
    if reason is None:
        reason = _validator_reason(definition, parsed)
    return None if reason is None else f"Invalid value {value} for configuration {definition.name}: {reason}"


def check_topic_configs(configs: Mapping[str, str | None]) -> str | None:
    """The first problem Kafka reports for a topic's resulting configs (names first, then values, then the
    compaction lag pair), None when they are all valid. A None value means "back to the default"."""
    for name in configs:
        reason = unknown_topic_config(name)
        if reason is not None:
            return reason
    for name, value in configs.items():
        if value is not None:
            reason = check_value(TOPIC_CONFIGS[name], value)
            if reason is not None:
                return reason
    low = int(configs.get("min.compaction.lag.ms") or TOPIC_CONFIGS["min.compaction.lag.ms"].default)
    high = int(configs.get("max.compaction.lag.ms") or TOPIC_CONFIGS["max.compaction.lag.ms"].default)
    if low > high:
        return (f"conflict topic config setting min.compaction.lag.ms ({low}) > "
                f"max.compaction.lag.ms ({high})")
    return None
