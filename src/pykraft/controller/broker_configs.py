"""The checks of a dynamic broker config change (IncrementalAlterConfigs / AlterConfigs on a BROKER resource), pure.

Kafka's checks first, in Kafka's order and words (DynamicBrokerConfig.validateConfigs, answered INVALID_REQUEST as
Kafka's broker answers them), on the keys the change sets:
1. keys Kafka cannot change dynamically: `Cannot update these configs dynamically: Set(log.dirs)`;
2. keystore and truststore keys without a listener prefix: `These security configs can be dynamically updated
   only per-listener using the listener prefix: Set(...)`;
3. each value against the key's type and validator (a listener override against its base key's): `Invalid value
   abc for configuration log.retention.ms: Not a number of type LONG`; a thread count below 1 as Kafka's
   DynamicThreadPool refuses it;
4. at the cluster default, keys Kafka allows per broker only: `Cannot update these configs at default cluster level,
   broker id must be specified: Set(listeners)`.
Then pykraft's own, answered INVALID_CONFIG (a setting pykraft accepts is a setting it honours):
5. a key Kafka does not know (Kafka would store it as a custom config): `Unknown broker config name:
   min.insync.replica. Did you mean min.insync.replicas?`;
6. a key pykraft does not apply without a restart (config_table.py's status is not `live`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pykraft.protocol.errors import ErrorCode

from .config_defs import BROKER_CONFIGS, HONOURED, LIVE, PER_BROKER, ConfigDef, ConfigType, check_value, parse_value
from .config_schema import broker_definition, did_you_mean, listener_base

# Kafka's SslConfigs.RECONFIGURABLE_CONFIGS: changed dynamically only with a listener prefix.
LISTENER_ONLY = frozenset({
    "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password", "ssl.truststore.type",
    "ssl.truststore.location", "ssl.truststore.password", "ssl.keystore.certificate.chain", "ssl.keystore.key",
    "ssl.truststore.certificates"})
# Kafka's DynamicThreadPool keys: a new count must be at least 1.
THREAD_COUNTS = frozenset({"num.io.threads", "num.replica.fetchers", "num.recovery.threads.per.data.dir",
                           "background.threads"})
# Listener overrides Kafka changes at the cluster level (ClusterLevelListenerConfigs).
_CLUSTER_LEVEL_LISTENER = frozenset({"max.connections", "max.connection.creation.rate", "num.network.threads"})


class BrokerConfigError(Exception):
    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code, self.message = code, message


def scala_set(names: Iterable[str]) -> str:
    """A set of names as Kafka's Scala code prints it."""
    items = sorted(names)
    return f"{'Set' if len(items) <= 4 else 'HashSet'}({', '.join(items)})"


def check_broker_changes(changes: Mapping[str, str | None], per_broker: bool) -> None:
    """Raise BrokerConfigError for the first problem of a change to one broker's (`per_broker`) or the cluster
    default's dynamic configs; `changes` maps each key to its new value, None for a removal (always allowed)."""
    set_keys = {key: value for key, value in changes.items() if value is not None}
    _refuse(ErrorCode.INVALID_REQUEST, "Cannot update these configs dynamically",
            [k for k in set_keys if k in BROKER_CONFIGS and not BROKER_CONFIGS[k].dynamic])
    _refuse(ErrorCode.INVALID_REQUEST,
            "These security configs can be dynamically updated only per-listener using the listener prefix",
            [k for k in set_keys if k in LISTENER_ONLY])
    for key, value in set_keys.items():
        _check_type(key, value)
    if not per_broker:
        _refuse(ErrorCode.INVALID_REQUEST,
                "Cannot update these configs at default cluster level, broker id must be specified",
                [k for k in set_keys if _per_broker_only(k)])
    for key in set_keys:
        if broker_definition(key) is None:
            guess = did_you_mean(key, BROKER_CONFIGS)
            raise BrokerConfigError(ErrorCode.INVALID_CONFIG, f"Unknown broker config name: {key}."
                                    + (f" Did you mean {guess}?" if guess else ""))
    not_live = [k for k in set_keys if BROKER_CONFIGS.get(k) is None or BROKER_CONFIGS[k].status != LIVE]
    static_only = [k for k in not_live if k in BROKER_CONFIGS and BROKER_CONFIGS[k].status == HONOURED]
    _refuse(ErrorCode.INVALID_CONFIG, "pykraft applies these configs only at start (server.properties), not "
                                      "dynamically", static_only)
    _refuse(ErrorCode.INVALID_CONFIG, "pykraft does not implement these configs",
            [k for k in not_live if k not in static_only])


def _refuse(code: ErrorCode, message: str, names: list[str]) -> None:
    if names:
        raise BrokerConfigError(code, f"{message}: {scala_set(names)}")


def _check_type(key: str, value: str) -> None:
    definition = BROKER_CONFIGS.get(key) or BROKER_CONFIGS.get(listener_base(key) or "")
    if definition is None:
        return  # unknown: reported below, after Kafka's own checks
    reason = check_value(definition, value)
    if reason is not None:
        raise BrokerConfigError(ErrorCode.INVALID_REQUEST, reason.replace(definition.name, key, 1)
                                if definition.name != key else reason)
    if key in THREAD_COUNTS:
        count, _ = parse_value(definition, value)
        if isinstance(count, int) and count <= 0:
            detail = (f"org.apache.kafka.common.config.ConfigException: Dynamic thread count update validation "
                      f"failed for {key}={count}, value should be at least 1")
            raise BrokerConfigError(ErrorCode.INVALID_REQUEST,
                                    f"Invalid value {detail} for configuration Invalid dynamic configuration")


def _per_broker_only(key: str) -> bool:
    if key in BROKER_CONFIGS:
        return BROKER_CONFIGS[key].mode == PER_BROKER
    base = listener_base(key)
    return base is not None and base not in _CLUSTER_LEVEL_LISTENER


def list_definition(key: str) -> ConfigDef | None:
    """The definition of a LIST broker key (APPEND and SUBTRACT apply to those only), or None."""
    definition = broker_definition(key)
    return definition if definition is not None and definition.type == ConfigType.LIST else None

