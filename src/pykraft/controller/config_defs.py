"""Kafka's config definitions (KafkaConfig's and LogConfig's ConfigDef), parsed from config_table.py, and Kafka's
checks of a value against them, with Kafka's messages.

Each key has a type, a default and a validator, as Kafka 4.0 defines them, and pykraft's status (config_table.py).
`check_value(definition, value)` answers what Kafka's `ConfigDef.parse` throws, word for word:
- a value that does not parse as the type: `Invalid value abc for configuration retention.ms: Not a number of type
  LONG` (BOOLEAN: `Expected value to be either true or false`);
- a value outside the range: `... : Value must be at least -1` / `Value must be no more than 1`;
- a string outside its set: `... : String must be one of: CreateTime, LogAppendTime`.
An unknown topic config is `Unknown topic config name: foo.bar` (LogConfig.validateNames). Kafka answers all of
these with INVALID_CONFIG. `config_type` is DescribeConfigs' ConfigType code.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from .config_table import BROKER_TABLE, TOPIC_TABLE

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
# config_table.py's statuses (see its docstring)
HONOURED, LIVE, IGNORED, REFUSED, DEFAULT_ONLY = "honoured", "live", "ignored", "refused", "default-only"
READ_ONLY, PER_BROKER, CLUSTER_WIDE = "read-only", "per-broker", "cluster-wide"


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
    default: str | None  # None: Kafka's null (or a key that must be set)
    at_least: float | None = None
    at_most: float | None = None
    one_of: tuple[str, ...] = ()  # STRING: the value; LIST: each element
    extra_check: Callable[[object], str | None] | None = None  # a reason, or None when the value is fine
    mode: str = READ_ONLY  # Kafka's dynamic update mode (brokers)
    status: str = HONOURED  # what pykraft does with it (config_table.py)

    @property
    def dynamic(self) -> bool:
        return self.mode != READ_ONLY

    @property
    def sensitive(self) -> bool:
        return self.type == ConfigType.PASSWORD


def _gzip_level(level: object) -> str | None:
    # CompressionType.GZIP.levelValidator: Deflater.DEFAULT_COMPRESSION (-1) or 1..9
    return None if level == -1 or 1 <= level <= 9 else "Value must be one of: -1, [1,...,9]"  # type: ignore[operator]


def _non_empty(value: object) -> str | None:
    return "String must be non-empty" if value == "" else None


def _case_insensitive(allowed: tuple[str, ...]) -> Callable[[object], str | None]:
    def check(value: object) -> str | None:
        ok = str(value).upper() in {a.upper() for a in allowed}
        return None if ok else f"String must be one of (case insensitive): {', '.join(allowed)}"
    return check


def _throttled_replicas(name: str) -> Callable[[object], str | None]:
    # ThrottledReplicaListValidator: '*' or partition:broker pairs
    def check(items: object) -> str | None:
        values = list(items)  # type: ignore[call-overload]
        if "".join(values) == "*" or all(re.fullmatch(r"([0-9]+:[0-9]+)?", v) for v in values):
            return None
        return (f"{name} must be the literal '*' or a list of replicas in the following format: "
                "[partitionId]:[brokerId],[partitionId]:[brokerId],...")
    return check


_RANGE = re.compile(r"\[(-?[0-9.]+),\.\.\.(?:,(-?[0-9.]+))?\]")


def _validator(name: str, text: str) -> dict[str, object]:
    """ConfigDef keyword arguments of a validator as Kafka's toString prints it."""
    if not text or text in ("non-null string", "non-empty list"):  # null-ness; the quorum lists are parsed elsewhere
        return {}
    if text == "non-empty string":
        return {"extra_check": _non_empty}
    if text == "[1,...,9] or -1":
        return {"extra_check": _gzip_level}
    if text.startswith("[partitionId]"):
        return {"extra_check": _throttled_replicas(name)}
    match = _RANGE.fullmatch(text)
    if match:
        low, high = match.groups()
        return {"at_least": float(low), "at_most": None if high is None else float(high)}
    if text.startswith("(case insensitive) ["):
        return {"extra_check": _case_insensitive(tuple(v.strip() for v in text[20:-1].split(",")))}
    if text.startswith("[") and text.endswith("]"):
        return {"one_of": tuple(v.strip() for v in text[1:-1].split(","))}
    raise ValueError(f"config_table.py: unknown validator {text!r} of {name}")


def _parse_table(table: str, *, with_mode: bool) -> dict[str, ConfigDef]:
    found: dict[str, ConfigDef] = {}
    for line in table.strip().splitlines():
        cells = [cell.strip() for cell in line.split("|")]
        name, kind, default, valid = cells[:4]
        mode, status = (cells[4], cells[5]) if with_mode else (CLUSTER_WIDE, cells[4])
        found[name] = ConfigDef(name, ConfigType[kind], None if default in ("null", "<required>") else default,
                                mode=mode, status=status, **_validator(name, valid))  # type: ignore[arg-type]
    return found


BROKER_CONFIGS: Mapping[str, ConfigDef] = _parse_table(BROKER_TABLE, with_mode=True)
TOPIC_CONFIGS: Mapping[str, ConfigDef] = _parse_table(TOPIC_TABLE, with_mode=False)


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
    if kind == ConfigType.PASSWORD:
        return value, None  # a password is not trimmed
    return text, None


def to_text(definition: ConfigDef, parsed: object) -> str:
    """A parsed value as Kafka's ConfigDef.convertToString writes it (lists joined by commas, booleans in lower
    case, doubles as Java prints them)."""
    if isinstance(parsed, bool):
        return "true" if parsed else "false"
    if isinstance(parsed, list):
        return ",".join(parsed)
    if isinstance(parsed, float):
        return repr(parsed) if "e" not in repr(parsed) else _java_double(parsed)
    return str(parsed)


def _java_double(value: float) -> str:
    mantissa, exponent = f"{value:e}".split("e")
    return f"{float(mantissa)!r}E{int(exponent)}"


def normalized(definition: ConfigDef, value: str) -> str:
    """`value` as Kafka stores it once parsed (e.g. ` TRUE` -> `true`); unchanged when it does not parse."""
    parsed, reason = parse_value(definition, value)
    return value if reason is not None else to_text(definition, parsed)


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


def not_implemented(definition: ConfigDef, value: str) -> str | None:
    """pykraft's refusal of a topic config it does not implement, set to a value other than Kafka's default."""
    if definition.status != DEFAULT_ONLY or definition.default is None:
        return None
    if parse_value(definition, value) == parse_value(definition, definition.default):
        return None
    shown = definition.default if definition.default != "" else '""'
    return (f"pykraft does not implement the topic config {definition.name}: only its default value {shown} "
            f"is accepted, not {value}")


def check_topic_configs(configs: Mapping[str, str | None]) -> str | None:
    """The first problem Kafka reports for a topic's resulting configs (names first, then values, then the
    compaction lag pair), then pykraft's refusal of a config it does not implement; None when they are all valid.
    A None value means "back to the default"."""
    for name in configs:
        reason = unknown_topic_config(name)
        if reason is not None:
            return reason
    for name, value in configs.items():
        if value is not None:
            reason = check_value(TOPIC_CONFIGS[name], value)
            if reason is not None:
                return reason
    low = int(configs.get("min.compaction.lag.ms") or TOPIC_CONFIGS["min.compaction.lag.ms"].default or 0)
    high = int(configs.get("max.compaction.lag.ms") or TOPIC_CONFIGS["max.compaction.lag.ms"].default or 0)
    if low > high:
        return (f"conflict topic config setting min.compaction.lag.ms ({low}) > "
                f"max.compaction.lag.ms ({high})")
    for name, value in configs.items():
        reason = None if value is None else not_implemented(TOPIC_CONFIGS[name], value)
        if reason is not None:
            return reason
    return None
