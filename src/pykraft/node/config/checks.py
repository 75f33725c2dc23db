"""Checks of a node's properties beyond the keys pykraft reads: Kafka's types and ranges, security settings pykraft
does not enforce, and the keys it does not implement.

- Kafka's server keys that pykraft does not use are still checked against Kafka's ConfigDef (type, range, allowed
  values) and refused with Kafka's words, e.g. `Invalid value abc for configuration num.network.threads: Not a
  number of type INT`: a file Kafka would refuse is refused here too, whatever pykraft does with the key.
- Security settings pykraft does not enforce (an authorizer and its ACL settings, SASL, delegation tokens) refuse
  the start with one line: running without them would leave open a node its operator believes closed.
- Every key pykraft does not implement (Kafka's or unknown) is named in one warning line; Kafka logs unknown keys
  the same way ("were supplied but are not used yet").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pykraft.controller.config_defs import ConfigDef, ConfigType, check_value

# The keys pykraft reads (node config, controller, broker, TLS); `pykraft.*` keys are all pykraft's own.
IMPLEMENTED_KEYS = frozenset({
    "process.roles", "node.id", "listeners", "advertised.listeners", "controller.listener.names",
    "listener.security.protocol.map", "log.dir", "log.dirs", "metadata.log.dir",
    "controller.quorum.voters", "controller.quorum.bootstrap.servers", "controller.quorum.election.timeout.ms",
    "controller.quorum.fetch.timeout.ms", "controller.quorum.election.backoff.max.ms",
    "controller.quorum.append.linger.ms", "controller.quorum.request.timeout.ms", "controller.quorum.retry.backoff.ms",
    "controller.quorum.auto.join.enable", "metadata.log.max.record.bytes.between.snapshots",
    "metadata.log.max.snapshot.interval.ms", "metadata.log.segment.bytes", "metadata.log.segment.ms",
    "metadata.max.retention.bytes", "metadata.max.retention.ms", "metadata.max.idle.interval.ms",
    "broker.heartbeat.interval.ms", "broker.session.timeout.ms", "initial.broker.registration.timeout.ms",
    "broker.rack", "replica.lag.time.max.ms", "auto.leader.rebalance.enable", "leader.imbalance.check.interval.seconds",
    "num.partitions", "default.replication.factor",
    # a broker's data plane (node/hosts/replica_settings.py DataPlaneSettings, node/apis/auto_create.py,
    # node/hosts/data_plane.py)
    "min.insync.replicas", "message.max.bytes", "log.segment.bytes", "log.retention.ms", "log.retention.bytes",
    "replica.fetch.max.bytes", "replica.fetch.wait.max.ms", "replica.fetch.backoff.ms", "auto.create.topics.enable",
    "inter.broker.listener.name", "log.roll.ms", "log.roll.hours", "log.retention.minutes", "log.retention.hours",
    "log.message.timestamp.type", "producer.id.expiration.ms", "log.flush.interval.ms",
    "log.flush.interval.messages", "max.request.partition.size.limit",
    # a broker's group coordinator (node/apis/group_api.py, node/hosts/group_host.py)
    "offsets.topic.num.partitions", "offsets.topic.replication.factor", "group.initial.rebalance.delay.ms",
    "group.min.session.timeout.ms", "group.max.session.timeout.ms",
    "ssl.certificate.location", "ssl.key.location", "ssl.ca.location", "ssl.client.auth",
    "ssl.keystore.location", "ssl.keystore.type", "ssl.keystore.password", "ssl.key.password",
    "ssl.truststore.location", "ssl.truststore.type", "ssl.truststore.password",
})

_T = ConfigType
# Kafka server keys with Kafka's types and validators (some now read by the data plane, most not used) (KafkaConfig / ServerConfigs /
# ServerLogConfigs / ReplicationConfigs / SocketServerConfigs, Kafka 4.x): checked so a value Kafka refuses is
# refused here too. Not every Kafka key is listed; an unlisted one is only named in the warning.
KAFKA_SERVER_KEYS: Mapping[str, ConfigDef] = {d.name: d for d in (
    ConfigDef("num.network.threads", _T.INT, "3", at_least=1),
    ConfigDef("num.io.threads", _T.INT, "8", at_least=1),
    ConfigDef("background.threads", _T.INT, "10", at_least=1),
    ConfigDef("queued.max.requests", _T.INT, "500", at_least=1),
    ConfigDef("socket.send.buffer.bytes", _T.INT, "102400"),
    ConfigDef("socket.receive.buffer.bytes", _T.INT, "102400"),
    ConfigDef("socket.request.max.bytes", _T.INT, "104857600", at_least=1),
    ConfigDef("connections.max.idle.ms", _T.LONG, "600000"),
    ConfigDef("num.recovery.threads.per.data.dir", _T.INT, "2", at_least=1),
    ConfigDef("num.replica.fetchers", _T.INT, "1"),
    ConfigDef("log.segment.bytes", _T.INT, "1073741824", at_least=1024 * 1024),
    ConfigDef("log.retention.hours", _T.INT, "168"),
    ConfigDef("log.retention.minutes", _T.INT, "0"),
    ConfigDef("log.retention.ms", _T.LONG, "0"),
    ConfigDef("log.retention.bytes", _T.LONG, "-1"),
    ConfigDef("log.retention.check.interval.ms", _T.LONG, "300000", at_least=1),
    ConfigDef("log.roll.hours", _T.INT, "168", at_least=1),
    ConfigDef("log.cleanup.policy", _T.LIST, "delete", one_of=("compact", "delete")),
    ConfigDef("log.cleaner.enable", _T.BOOLEAN, "true"),
    ConfigDef("log.cleaner.threads", _T.INT, "1", at_least=0),
    ConfigDef("log.flush.interval.messages", _T.LONG, "9223372036854775807", at_least=1),
    ConfigDef("log.flush.interval.ms", _T.LONG, "0"),
    ConfigDef("log.index.size.max.bytes", _T.INT, "10485760", at_least=4),
    ConfigDef("log.message.timestamp.type", _T.STRING, "CreateTime", one_of=("CreateTime", "LogAppendTime")),
    ConfigDef("message.max.bytes", _T.INT, "1048588", at_least=0),
    ConfigDef("min.insync.replicas", _T.INT, "1", at_least=1),
    ConfigDef("auto.create.topics.enable", _T.BOOLEAN, "true"),
    ConfigDef("delete.topic.enable", _T.BOOLEAN, "true"),
    ConfigDef("unclean.leader.election.enable", _T.BOOLEAN, "false"),
    ConfigDef("compression.type", _T.STRING, "producer",
              one_of=("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),
    ConfigDef("replica.fetch.max.bytes", _T.INT, "1048576", at_least=0),
    ConfigDef("replica.socket.timeout.ms", _T.INT, "30000"),
    ConfigDef("offsets.topic.replication.factor", _T.SHORT, "3", at_least=1),
    ConfigDef("offsets.topic.num.partitions", _T.INT, "50", at_least=1),
    ConfigDef("transaction.state.log.replication.factor", _T.SHORT, "3", at_least=1),
    ConfigDef("transaction.state.log.min.isr", _T.INT, "2", at_least=1),
    ConfigDef("group.initial.rebalance.delay.ms", _T.INT, "3000"),
    ConfigDef("controlled.shutdown.enable", _T.BOOLEAN, "true"),
    ConfigDef("share.coordinator.state.topic.replication.factor", _T.SHORT, "3", at_least=1),
)}
# Kafka's own checks of keys pykraft reads, where pykraft's parsing alone would accept what Kafka refuses.
KAFKA_RANGES: Mapping[str, ConfigDef] = {d.name: d for d in (
    ConfigDef("num.partitions", _T.INT, "1", at_least=1),
    ConfigDef("default.replication.factor", _T.INT, "1"),
    ConfigDef("replica.lag.time.max.ms", _T.LONG, "30000"),
    ConfigDef("auto.leader.rebalance.enable", _T.BOOLEAN, "true"),
    ConfigDef("leader.imbalance.check.interval.seconds", _T.LONG, "300", at_least=1),
)}

# Settings whose protection pykraft does not provide. Prefixes cover per-listener and per-mechanism variants.
_SECURITY_KEYS = ("authorizer.class.name", "super.users", "allow.everyone.if.no.acl.found", "sasl.jaas.config",
                  "sasl.enabled.mechanisms", "sasl.mechanism.controller.protocol",
                  "sasl.mechanism.inter.broker.protocol", "principal.builder.class",
                  "delegation.token.secret.key", "delegation.token.master.key")
_SECURITY_PREFIXES = ("sasl.", "delegation.token.")


def _is_security_key(key: str) -> bool:
    if key in _SECURITY_KEYS or key.startswith(_SECURITY_PREFIXES):
        return True
    # listener.name.<listener>.<mechanism>.sasl.jaas.config, listener.name.<listener>.sasl.enabled.mechanisms
    return key.startswith("listener.name.") and ".sasl." in f".{key.split('.', 3)[-1]}"


def kafka_value_problems(props: Mapping[str, str]) -> list[str]:
    """Kafka's refusal of every value of a known Kafka key that Kafka's ConfigDef would not accept."""
    problems = []
    for key, value in props.items():
        definition = KAFKA_SERVER_KEYS.get(key) or KAFKA_RANGES.get(key)
        if definition is not None and value.strip():
            reason = check_value(definition, value.strip())
            if reason is not None:
                problems.append(reason)
    return problems


def security_problem(props: Mapping[str, str]) -> str | None:
    """One line naming every security setting pykraft would not enforce, or None."""
    found = sorted(key for key, value in props.items() if _is_security_key(key) and value.strip())
    if not found:
        return None
    return (f"pykraft does not enforce {', '.join(found)}: refusing to start rather than run without them "
            "(remove them to run without authorization or SASL)")


def unimplemented_warning(keys: Iterable[str]) -> str | None:
    """The one warning line naming the keys pykraft does not implement, or None."""
    ignored = sorted(k for k in keys if k not in IMPLEMENTED_KEYS and not k.startswith("pykraft.")
                     and not _is_security_key(k))
    if not ignored:
        return None
    return f"These configurations are not implemented by pykraft and are ignored: {', '.join(ignored)}"
