"""DescribeConfigs as a Kafka node answers it from its metadata image and its own config (Kafka's ConfigHelper).

Per resource:
- TOPIC: every topic config. The value is the topic's own, else the one this node's broker settings give it
  (config_schema.effective_topic_config); the synonyms are the topic's own value (TOPIC_CONFIG) then the primary
  broker key's synonyms set at each level (DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG,
  STATIC_BROKER_CONFIG, DEFAULT_CONFIG); the source is the first synonym's, DEFAULT_CONFIG when there is none.
- BROKER named by this node's id: every key Kafka defines for a broker plus any other key of server.properties,
  with the value in effect (server.properties overridden by the cluster default, overridden by this broker's
  dynamic config, a level removing the lower levels' synonyms as Kafka's overrideProps does), the synonyms found at
  each level for the key's synonyms (broker_synonyms), read-only unless Kafka can change the key dynamically.
- BROKER with the empty name: the cluster default's dynamic configs (synonyms of that level only).
- BROKER of another id: INVALID_REQUEST (a Kafka node describes only itself; Kafka's admin client sends a broker's
  resource to that broker).
- BROKER_LOGGER of this node: its loggers and their levels, as the node hands them in.
As in Kafka, `synonyms` only when asked (includeSynonyms), the documentation only when asked, values of sensitive
keys (passwords, and keys whose type is unknown) are null with isSensitive, and one resource's failure fails only
that resource. An empty or null list of keys means every key.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kio.static.primitive import i8

from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.lazy_schema import schema_module
from pykraft.protocol.throttle import ZERO_THROTTLE

from .config_defs import BROKER_CONFIGS, TOPIC_CONFIGS, ConfigDef, ConfigType, normalized
from .config_docs import documentation
from .config_table import PYKRAFT_KEYS, PYKRAFT_PREFIX
from .config_schema import (DYNAMIC_ONLY, NOT_KAFKA_CONFIG, PRIMARY_SYNONYM, SOURCE_DEFAULT, SOURCE_DYNAMIC_BROKER,
                            SOURCE_DYNAMIC_BROKER_LOGGER, SOURCE_DYNAMIC_DEFAULT_BROKER, SOURCE_STATIC_BROKER,
                            SOURCE_TOPIC, broker_definition, broker_synonyms, effective_topic_config)
from .topics import invalid_topic_name_reason

if TYPE_CHECKING:
    from .configs import ConfigControl

describe_response = schema_module("kio.schema.describe_configs.v4.response")

TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8  # Kafka's ConfigResource.Type ids
_TYPE_NAMES = {16: "CLIENT_METRICS", 32: "GROUP"}
# Kafka's defaults as strings, for the DEFAULT_CONFIG synonyms (keys without a default have none)
_AUTHORIZER_KEYS = NOT_KAFKA_CONFIG - DYNAMIC_ONLY
_DEFAULTS = {name: d.default for name, d in BROKER_CONFIGS.items() if d.default is not None}


@dataclass(frozen=True, slots=True)
class NodeView:
    """What a node describes itself from besides its image: its id, its server.properties, its loggers."""

    node_id: int
    static: Mapping[str, str] = field(default_factory=dict)
    loggers: Callable[[], Mapping[str, str]] = dict

    def __post_init__(self) -> None:
        # Kafka's KafkaConfig.populateSynonyms: broker.id and node.id name the same id
        static = dict(self.static)
        for key, other in (("broker.id", "node.id"), ("node.id", "broker.id")):
            if key not in static and other in static:
                static[key] = static[other]
        object.__setattr__(self, "static", static)


class _Refused(Exception):
    def __init__(self, code: ErrorCode, message: str | None) -> None:
        super().__init__(message)
        self.code, self.message = code, message


@dataclass(frozen=True, slots=True)
class _Levels:
    """A broker's config levels, highest precedence first."""

    node: Mapping[str, str]
    cluster: Mapping[str, str]
    static: Mapping[str, str]

    def by_source(self) -> tuple[tuple[Mapping[str, str], int], ...]:
        return ((self.node, SOURCE_DYNAMIC_BROKER), (self.cluster, SOURCE_DYNAMIC_DEFAULT_BROKER),
                (self.static, SOURCE_STATIC_BROKER), (_DEFAULTS, SOURCE_DEFAULT))

    def merged(self) -> dict[str, str]:
        """The props Kafka builds its current config from: each level replaces the lower levels' synonyms."""
        props = dict(self.static)
        for level in (self.cluster, self.node):
            for key, value in level.items():
                for synonym in broker_synonyms(key, match_listener_override=False):
                    props.pop(synonym, None)
                props[key] = value
        return props


def describe_configs(configs: ConfigControl, topic_exists: Callable[[str], bool], request: Any,
                     node: NodeView) -> Any:
    """DescribeConfigs v4 (the caller lowers it to the request's version)."""
    levels = _Levels(configs.of(BROKER, str(node.node_id)), configs.of(BROKER, ""), node.static)
    # v1-v2 requests have no IncludeDocumentation field
    synonyms, docs = bool(request.include_synonyms), bool(getattr(request, "include_documentation", False))
    results = []
    for resource in request.resources:
        kind, name = int(resource.resource_type), resource.resource_name
        try:
            entries = _entries(kind, name, configs, topic_exists, levels, node, synonyms, docs)
        except _Refused as refused:
            results.append(_result(kind, name, refused.code, refused.message, ()))
            continue
        wanted = resource.configuration_keys
        chosen = tuple(e for e in entries if not wanted or e.name in wanted)
        results.append(_result(kind, name, ErrorCode.NONE, None, chosen))
    return describe_response.DescribeConfigsResponse(throttle_time=ZERO_THROTTLE, results=tuple(results))


def _entries(kind: int, name: str, configs: ConfigControl, topic_exists: Callable[[str], bool], levels: _Levels,
             node: NodeView, synonyms: bool, docs: bool) -> list[Any]:
    if kind == TOPIC:
        reason = invalid_topic_name_reason(name)
        if reason is not None:
            raise _Refused(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Topic name is invalid: {reason}")
        if not topic_exists(name):
            raise _Refused(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None)
        return topic_entries(configs.of(TOPIC, name), levels, synonyms, docs)
    if kind == BROKER:
        if not name:
            return [_broker_entry(key, value, levels, False, synonyms, docs) for key, value in sorted(
                levels.cluster.items())]
        if _broker_id(name) != node.node_id:
            raise _Refused(ErrorCode.INVALID_REQUEST, f"Unexpected broker id, expected {node.node_id} or empty "
                                                      f"string, but received {name}")
        merged = levels.merged()
        keys = sorted({k for k in BROKER_CONFIGS if k not in NOT_KAFKA_CONFIG} | set(merged))
        return [_broker_entry(key, merged.get(key), levels, True, synonyms, docs) for key in keys]
    if kind == BROKER_LOGGER:
        if not name:
            raise _Refused(ErrorCode.INVALID_REQUEST, "Broker id must not be empty")
        if _broker_id(name) != node.node_id:
            raise _Refused(ErrorCode.INVALID_REQUEST, f"Unexpected broker id, expected {node.node_id} but "
                                                      f"received {name}")
        return [_entry(logger, level, SOURCE_DYNAMIC_BROKER_LOGGER, False, False, (), ConfigType.UNKNOWN, None)
                for logger, level in sorted(node.loggers().items())]
    raise _Refused(ErrorCode.INVALID_REQUEST, f"Unsupported resource type: {_TYPE_NAMES.get(kind, kind)}")


def _broker_id(name: str) -> int:
    try:
        return int(name)
    except ValueError:
        raise _Refused(ErrorCode.INVALID_REQUEST, f"Broker id must be an integer, but it is: {name}") from None


def topic_entries(own: Mapping[str, str], levels: _Levels, synonyms: bool, docs: bool) -> list[Any]:
    entries = []
    for name in sorted(TOPIC_CONFIGS):
        definition = TOPIC_CONFIGS[name]
        value, _ = effective_topic_config(definition, own, levels.node, levels.cluster, levels.static)
        found: list[tuple[str, str | None, int]] = (
            [] if name not in own else [(name, normalized(definition, own[name]), SOURCE_TOPIC)])
        primary = PRIMARY_SYNONYM.get(name)
        if primary is not None:
            found += _level_synonyms(primary, levels, False)
        source = found[0][2] if found else SOURCE_DEFAULT
        entries.append(_entry(name, value, source, False, False, found if synonyms else (), definition.type,
                              documentation(definition, name) if docs else None))
    return entries


def _broker_entry(name: str, raw: str | None, levels: _Levels, per_broker: bool, synonyms: bool,
                  docs: bool) -> Any:
    definition = broker_definition(name)
    kind = _describe_type(name)
    sensitive = kind in (None, ConfigType.PASSWORD)
    found = _level_synonyms(name, levels, sensitive)
    if not per_broker:
        found = [s for s in found if s[2] == SOURCE_DYNAMIC_DEFAULT_BROKER]
    else:
        raw = _effective_value(name, raw, definition)
    source = found[0][2] if found else SOURCE_DEFAULT
    read_only = not (name in BROKER_CONFIGS and BROKER_CONFIGS[name].dynamic)
    return _entry(name, None if sensitive else raw, source, read_only, sensitive, found if synonyms else (),
                  kind or ConfigType.UNKNOWN, documentation(definition, name) if docs else None)


def config_value_sensitive(resource_type: int, name: str) -> bool:
    """Kafka's KafkaConfigSchema.isSensitive for a ConfigRecord: a password, or a key the resource's schema does
    not define (a broker's listener overrides, JAAS configs) - what RecordRedactor hides in dump-log and tables."""
    if resource_type == 4:  # BROKER
        return _describe_type(name) in (None, ConfigType.PASSWORD)
    if resource_type == 2:  # TOPIC
        definition = TOPIC_CONFIGS.get(name)
        return definition is None or definition.sensitive
    return True


def _describe_type(name: str) -> ConfigType | None:
    """Kafka's KafkaConfig.configType: the key's own type, a dynamic quota's, or its listener base's; None for a
    key Kafka's broker does not define (then treated as sensitive). pykraft's own keys are strings."""
    if name in PYKRAFT_KEYS or name.startswith(PYKRAFT_PREFIX):
        return ConfigType.STRING
    definition = broker_definition(name)
    return None if definition is None or definition.name in _AUTHORIZER_KEYS else definition.type


def _effective_value(name: str, raw: str | None, definition: ConfigDef | None) -> str | None:
    if definition is None or definition.name != name:
        return raw
    if raw is None:
        return definition.default
    return raw if definition.type == ConfigType.STRING else normalized(definition, raw)


def _level_synonyms(name: str, levels: _Levels, sensitive: bool) -> list[tuple[str, str | None, int]]:
    """Kafka's configSynonyms: each synonym of `name` set at each level, highest first, from `name` itself on."""
    found = [(synonym, None if sensitive else level[synonym], source)
             for level, source in levels.by_source() for synonym in broker_synonyms(name) if synonym in level]
    while found and found[0][0] != name:
        found.pop(0)  # Kafka's dropWhile: a listener override's base or a less precise synonym is not listed first
    return found


def _entry(name: str, value: str | None, source: int, read_only: bool, sensitive: bool,
           synonyms: Iterable[tuple[str, str | None, int]], kind: ConfigType, doc: str | None) -> Any:
    return describe_response.DescribeConfigsResourceResult(
        name=name, value=value, read_only=read_only, config_source=i8(source), is_sensitive=sensitive,
        synonyms=tuple(describe_response.DescribeConfigsSynonym(name=n, value=v, source=i8(s)) for n, v, s in synonyms),
        config_type=i8(int(kind)), documentation=doc)


def _result(kind: int, name: str, code: ErrorCode, message: str | None, configs: tuple[Any, ...]) -> Any:
    return describe_response.DescribeConfigsResult(error_code=code, error_message=message, resource_type=i8(kind),
                                                   resource_name=name, configs=configs)

