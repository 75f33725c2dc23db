"""How Kafka relates config keys to each other (pure lookups over config_table.py and config_defs.py).

- Topic synonyms (Kafka's ServerTopicConfigSynonyms): a topic config takes its default from broker keys, highest
  precedence first, with a unit conversion (`retention.ms` <- `log.retention.ms`, `log.retention.minutes` x 60000,
  `log.retention.hours` x 3600000). `effective_topic_config` resolves one the way Kafka's controller does
  (KafkaConfigSchema.resolveEffectiveTopicConfig): the topic's own value, else the first synonym set in this
  node's dynamic config, else in the cluster default, else in server.properties, else Kafka's default.
- Broker synonyms (DynamicBrokerConfig.brokerConfigSynonyms): the keys one broker setting may be given by
  (`log.roll.ms`/`log.roll.hours`, `log.retention.*`, `log.flush.interval.ms` with the scheduler interval, and a
  listener override `listener.name.<l>.<key>` with its base `<key>`).
- The broker key a name refers to (`broker_definition`, KafkaConfig.configType's lookup through the listener
  prefix) and the closest known key to a misspelt one (`did_you_mean`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from .config_defs import BROKER_CONFIGS, TOPIC_CONFIGS, ConfigDef, parse_value, to_text
from .config_table import TOPIC_SYNONYMS as _SYNONYM_TABLE

# DescribeConfigs' ConfigSource ids
SOURCE_TOPIC, SOURCE_DYNAMIC_BROKER, SOURCE_DYNAMIC_DEFAULT_BROKER, SOURCE_STATIC_BROKER, SOURCE_DEFAULT = 1, 2, 3, 4, 5
SOURCE_DYNAMIC_BROKER_LOGGER = 6


def _parse_synonyms(table: str) -> dict[str, tuple[tuple[str, int], ...]]:
    found = {}
    for line in table.strip().splitlines():
        topic_key, keys = (cell.strip() for cell in line.split("|"))
        entries = []
        for key in keys.split(","):
            name, _, factor = key.strip().partition("*")
            entries.append((name, int(factor or 1)))
        found[topic_key] = tuple(entries)
    return found


# topic config -> ((broker key, factor to the topic's unit), ...), highest precedence first
TOPIC_SYNONYMS: Mapping[str, tuple[tuple[str, int], ...]] = _parse_synonyms(_SYNONYM_TABLE)
# Kafka's TOPIC_CONFIG_SYNONYMS: the first (primary) broker key of each topic config
PRIMARY_SYNONYM: Mapping[str, str] = {topic: keys[0][0] for topic, keys in TOPIC_SYNONYMS.items()}
# The broker settings given by several keys. Kafka lists the flush scheduler interval as a synonym of
# log.flush.interval.ms only (not the other way round), so it gets no group of its own.
_GROUPS: dict[str, tuple[str, ...]] = {
    key: tuple(k for k, _ in keys) for keys in TOPIC_SYNONYMS.values() if len(keys) > 1
    for key, _ in keys if key != "log.flush.scheduler.interval.ms"}
_LISTENER_OVERRIDE = re.compile(r"listener\.name\.[^.]*\.(.*)")
# Listener overrides given per SASL mechanism: listener.name.<l>.<mechanism>.<key>
_MECHANISM_KEYS = ("sasl.jaas.config", "sasl.login.callback.handler.class", "sasl.login.class",
                   "sasl.server.callback.handler.class", "connections.max.reauth.ms")
# Rows of the broker table that are not KafkaConfig keys: the broker quotas exist only as dynamic configs (Kafka's
# DynamicConfig.Broker), the authorizer's settings belong to the authorizer.
DYNAMIC_ONLY = frozenset({"leader.replication.throttled.rate", "follower.replication.throttled.rate",
                          "replica.alter.log.dirs.io.max.bytes.per.second"})
NOT_KAFKA_CONFIG = DYNAMIC_ONLY | {"super.users", "allow.everyone.if.no.acl.found"}


def listener_base(name: str) -> str | None:
    """`ssl.keystore.location` for `listener.name.external.ssl.keystore.location`; None for a plain key."""
    match = _LISTENER_OVERRIDE.fullmatch(name)
    if match is None:
        return None
    base = match.group(1)
    return next((key for key in _MECHANISM_KEYS if base.endswith(key)), base)


def broker_synonyms(name: str, match_listener_override: bool = True) -> list[str]:
    """Kafka's DynamicBrokerConfig.brokerConfigSynonyms: the keys giving the same setting, highest first."""
    group = _GROUPS.get(name)
    if group is not None:
        return list(group)
    base = listener_base(name) if match_listener_override else None
    return [name, base] if base is not None else [name]


def broker_definition(name: str) -> ConfigDef | None:
    """The definition of a broker key, looked up through its synonyms (a listener override's base key)."""
    found = BROKER_CONFIGS.get(name)
    if found is not None:
        return found
    return next((BROKER_CONFIGS[k] for k in broker_synonyms(name) if k in BROKER_CONFIGS), None)


def did_you_mean(name: str, known: Iterable[str]) -> str | None:
    """The known key closest to a misspelt `name` (a typo: `min.insync.replica`), or None."""
    import difflib  # here: a server imports this module; only a misspelt key needs difflib (issue 34: idle RSS)

    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.8)
    return close[0] if close else None


def effective_topic_config(definition: ConfigDef, topic: Mapping[str, str], node_dynamic: Mapping[str, str],
                           cluster_dynamic: Mapping[str, str], static: Mapping[str, str]) -> tuple[str | None, int]:
    """(value, ConfigSource) of one topic config, resolved as Kafka's controller does (see the module docstring).
    A broker value that does not parse is passed over (the next level applies)."""
    name = definition.name
    if name in topic:
        return _as_topic_value(definition, topic[name], 1), SOURCE_TOPIC
    levels = ((node_dynamic, SOURCE_DYNAMIC_BROKER), (cluster_dynamic, SOURCE_DYNAMIC_DEFAULT_BROKER),
              (static, SOURCE_STATIC_BROKER))
    for level, source in levels:
        for key, factor in TOPIC_SYNONYMS.get(name, ()):
            if key in level and level[key] is not None:
                value = _as_topic_value(definition, str(level[key]), factor)
                if value is not None:
                    return value, source
    return definition.default, SOURCE_DEFAULT


def _as_topic_value(definition: ConfigDef, text: str, factor: int) -> str | None:
    parsed, reason = parse_value(definition, text)
    if reason is not None:
        return None if factor != 1 else text
    if factor != 1 and isinstance(parsed, int) and parsed >= 0:  # a negative time means "no limit" in any unit
        parsed = parsed * factor
    return to_text(definition, parsed)


def effective_topic_configs(topic: Mapping[str, str], node_dynamic: Mapping[str, str],
                            cluster_dynamic: Mapping[str, str],
                            static: Mapping[str, str]) -> list[tuple[str, str | None, int, bool]]:
    """Every topic config's (name, value, source, sensitive), by name: what CreateTopics v5+ answers."""
    found = []
    for name in sorted(TOPIC_CONFIGS):
        definition = TOPIC_CONFIGS[name]
        value, source = effective_topic_config(definition, topic, node_dynamic, cluster_dynamic, static)
        found.append((name, None if definition.sensitive else value, source, definition.sensitive))
    return found
