"""Checks of a node's properties beyond the keys pykraft reads, driven by the config table
(controller/config_table.py): Kafka's types and ranges, security settings pykraft does not enforce, and the keys it
does not implement.

- Every Kafka server key is checked against Kafka's ConfigDef (type, range, allowed values) and refused with Kafka's
  words, e.g. `Invalid value abc for configuration num.network.threads: Not a number of type INT`: a file Kafka
  would refuse is refused here too, whatever pykraft does with the key. (The keys the node config reader parses
  itself, `SELF_CHECKED`, are reported there, once.)
- Security settings pykraft does not enforce (the table's `refused` keys: Kerberos, OAUTHBEARER, custom login and
  callback classes, delegation tokens; also given per listener or per mechanism) refuse the start with one line:
  running without them would leave open a node its operator believes closed. SASL (PLAIN, SCRAM) and the
  StandardAuthorizer are read by security.py.
- Kafka keys pykraft does not implement (the table's `ignored` keys, and listener overrides) are named in one
  warning line. A key neither Kafka nor pykraft knows gets Kafka's "was supplied but isn't a known config" line,
  with the closest known key when it looks like a typo (`min.insync.replica`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pykraft.controller.config_defs import BROKER_CONFIGS, HONOURED, IGNORED, LIVE, REFUSED, check_value
from pykraft.controller.config_schema import did_you_mean, listener_base
from pykraft.controller.config_table import PYKRAFT_KEYS, PYKRAFT_PREFIX

# The keys pykraft reads (node config, controller, broker, data plane, TLS).
IMPLEMENTED_KEYS = frozenset({name for name, d in BROKER_CONFIGS.items() if d.status in (HONOURED, LIVE)}
                             | set(PYKRAFT_KEYS))
# Keys the node config reader (build.py) checks with its own messages.
SELF_CHECKED = frozenset({
    "process.roles", "node.id", "listeners", "advertised.listeners", "controller.listener.names",
    "listener.security.protocol.map", "inter.broker.listener.name", "log.dir", "log.dirs", "metadata.log.dir",
    "broker.heartbeat.interval.ms", "broker.session.timeout.ms", "initial.broker.registration.timeout.ms",
    "broker.rack", "ssl.client.auth", "ssl.keystore.location", "ssl.keystore.type", "ssl.keystore.password",
    "ssl.key.password", "ssl.truststore.location", "ssl.truststore.type", "ssl.truststore.password",
    # security.py
    "authorizer.class.name", "super.users", "allow.everyone.if.no.acl.found", "early.start.listeners",
    "sasl.enabled.mechanisms", "sasl.mechanism.controller.protocol", "sasl.mechanism.inter.broker.protocol",
    "connections.max.reauth.ms", "connection.failed.authentication.delay.ms", "sasl.server.max.receive.size",
    "ssl.principal.mapping.rules",
})
_SELF_CHECKED_PREFIXES = ("controller.quorum.", "metadata.log.", "metadata.max.")
_SECURITY_PREFIXES = ("delegation.token.",)


def _is_security_key(key: str) -> bool:
    """A refused security setting, also as a listener (or listener and mechanism) override."""
    definition = BROKER_CONFIGS.get(key) or BROKER_CONFIGS.get(listener_base(key) or "")
    if definition is not None and definition.status == REFUSED:
        return True
    if key.startswith(_SECURITY_PREFIXES):
        return True
    # a per-mechanism override of a refused key: listener.name.<l>.<mechanism>.sasl.login.class and the like
    base = listener_base(key)
    return base is not None and any(base.endswith("." + k) or base == k for k, d in BROKER_CONFIGS.items()
                                    if d.status == REFUSED and k.startswith("sasl."))


def _kafka_definition(key: str):
    if key in SELF_CHECKED or key.startswith(_SELF_CHECKED_PREFIXES):
        return None
    return BROKER_CONFIGS.get(key) or BROKER_CONFIGS.get(listener_base(key) or "")


def kafka_value_problems(props: Mapping[str, str]) -> list[str]:
    """Kafka's refusal of every value of a known Kafka key that Kafka's ConfigDef would not accept."""
    problems = []
    for key, value in props.items():
        definition = _kafka_definition(key)
        if definition is not None and value.strip():
            reason = check_value(definition, value.strip())
            if reason is not None:
                problems.append(reason if definition.name == key else reason.replace(definition.name, key, 1))
    return problems


def security_problem(props: Mapping[str, str]) -> str | None:
    """One line naming every security setting pykraft would not enforce, or None."""
    found = sorted(key for key, value in props.items() if _is_security_key(key) and value.strip())
    if not found:
        return None
    return (f"pykraft does not enforce {', '.join(found)}: refusing to start rather than run without them "
            "(pykraft implements SASL/PLAIN, SASL/SCRAM and the StandardAuthorizer; remove these settings)")


# The listener overrides security.py reads (listener.name.<l>.<key>, and per mechanism for the JAAS and re-auth keys).
LISTENER_KEYS = frozenset({"sasl.enabled.mechanisms", "sasl.jaas.config", "connections.max.reauth.ms",
                           "ssl.principal.mapping.rules", "ssl.client.auth"})


def _kind(key: str) -> str:
    """implemented, ignored (a Kafka key pykraft does not implement) or unknown."""
    if key in IMPLEMENTED_KEYS or key.startswith(PYKRAFT_PREFIX):
        return "implemented"
    definition = BROKER_CONFIGS.get(key)
    if definition is not None:
        return "ignored" if definition.status == IGNORED else "implemented"
    base = listener_base(key)
    if base in LISTENER_KEYS:
        return "implemented"
    return "ignored" if base is not None and base in BROKER_CONFIGS else "unknown"


def unimplemented_warnings(keys: Iterable[str]) -> list[str]:
    """The warning naming the Kafka keys pykraft ignores, then one line per unknown key (Kafka's words)."""
    keys = [k for k in keys if not _is_security_key(k)]
    warnings = []
    ignored = sorted(k for k in keys if _kind(k) == "ignored")
    if ignored:
        warnings.append(f"These Kafka configurations are not implemented by pykraft and are ignored: "
                        f"{', '.join(ignored)}")
    for key in sorted(k for k in keys if _kind(k) == "unknown"):
        guess = did_you_mean(key, [*BROKER_CONFIGS, *PYKRAFT_KEYS])
        warnings.append(f"The configuration '{key}' was supplied but isn't a known config."
                        + (f" Did you mean '{guess}'?" if guess else ""))
    return warnings
