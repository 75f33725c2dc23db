"""Authentication and authorization settings as Kafka reads them (KafkaConfig, ChannelBuilders, JaasContext,
StandardAuthorizer.configure), checked all at once like the rest of the node config.

- A setting of listener L is `listener.name.<l>.<key>` when set, else `<key>` (Kafka's valuesWithPrefixOverride): this
  is how `sasl.enabled.mechanisms` (default GSSAPI), `connections.max.reauth.ms` (also per mechanism:
  `listener.name.<l>.<mechanism>.connections.max.reauth.ms`), `ssl.principal.mapping.rules` and, for SASL_SSL,
  `ssl.client.auth` (only a listener-prefixed one applies there, as in Kafka) are read.
- The JAAS configuration of a listener and mechanism is `listener.name.<l>.<mechanism>.sasl.jaas.config` only; a bare
  `sasl.jaas.config` is ignored with Kafka's warning. Each SASL listener this node serves needs one for every enabled
  mechanism; pykraft implements PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 (GSSAPI and OAUTHBEARER refuse the start).
- The node's own connections: to the controllers with `sasl.mechanism.controller.protocol` when the controller listener
  is SASL, to other brokers with `sasl.mechanism.inter.broker.protocol` when the inter-broker listener is; the
  username and password come from that listener's JAAS entry for that mechanism (as Kafka's inter-broker login does).
- `authorizer.class.name`: empty (no authorization) or org.apache.kafka.metadata.authorizer.StandardAuthorizer, with
  `super.users` and `allow.everyone.if.no.acl.found`; `early.start.listeners` (default: the controller listeners) must
  name bound or controller listeners.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pykraft.controller.authorizer import parse_super_users
from pykraft.net.principal import SslPrincipalMapper
from pykraft.net.sasl_mechanisms import PLAIN
from pykraft.protocol.scram import MECHANISMS as SCRAM_MECHANISMS

from pykraft.net.jaas import PLAIN_MODULE, SCRAM_MODULE, JaasEntry, JaasError, parse_jaas, plain_users
from pykraft.node.config.values import INT64_MAX, Listener, ValueReader, split_list

__all__ = ["STANDARD_AUTHORIZER", "ListenerSasl", "SecurityConfig", "security_config"]

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
SUPPORTED_MECHANISMS = (PLAIN, *SCRAM_MECHANISMS)
SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")
_MODULE_OF = {PLAIN: PLAIN_MODULE, **{name: SCRAM_MODULE for name in SCRAM_MECHANISMS}}


@dataclass(frozen=True, slots=True)
class ListenerSasl:
    """One SASL listener's server side."""

    mechanisms: tuple[str, ...]
    plain_users: Mapping[str, str] | None = field(default=None, repr=False)  # PLAIN: user_<name> of the JAAS entry
    reauth_ms: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SecurityConfig:
    authorizer: bool = False
    super_users: frozenset[str] = frozenset()
    allow_if_no_acl: bool = False
    early_start_listeners: frozenset[str] = frozenset()
    sasl_listeners: Mapping[str, ListenerSasl] = field(default_factory=dict)  # served SASL listeners
    ssl_mappers: Mapping[str, SslPrincipalMapper] = field(default_factory=dict)  # per served listener
    ssl_client_auth: Mapping[str, bool] = field(default_factory=dict)  # SASL_SSL listeners requiring certificates
    # (mechanism, username, password) the node authenticates with on a listener it connects to
    client_credentials: Mapping[str, tuple[str, str, str]] = field(default_factory=dict, repr=False)
    failed_auth_delay_ms: int = 100
    sasl_max_receive_size: int = 524288


def listener_text(read: ValueReader, listener: str, key: str, default: str = "") -> str:
    """`listener.name.<l>.<key>` when set, else `<key>` (else `default`)."""
    prefixed = read.text(f"listener.name.{listener.lower()}.{key}")
    return prefixed or read.text(key, default)


def security_config(read: ValueReader, roles: list[str], listeners: tuple[Listener, ...],
                    controller_names: tuple[str, ...], protocols: Mapping[str, str],
                    inter_broker: str | None) -> SecurityConfig:
    """Every security setting of the node; problems go to `read.problems`."""
    served = [l.name for l in listeners if ("controller" in roles and l.name in controller_names)
              or ("broker" in roles and l.name not in controller_names)]
    if read.text("sasl.jaas.config"):
        read.problems.warn("Server config sasl.jaas.config should be prefixed with SASL mechanism name, ignoring "
                           "config")
    sasl_listeners = {name: _listener_sasl(read, name, protocols[name]) for name in served
                      if protocols.get(name) in SASL_PROTOCOLS}
    credentials = {}
    outbound = {controller_names[0]: "sasl.mechanism.controller.protocol"} if controller_names else {}
    if "broker" in roles and inter_broker is not None:
        outbound.setdefault(inter_broker, "sasl.mechanism.inter.broker.protocol")
    for name, key in outbound.items():
        if protocols.get(name) in SASL_PROTOCOLS:
            found = _client_credentials(read, name, key, sasl_listeners.get(name))
            if found is not None:
                credentials[name] = found
    return SecurityConfig(
        **_authorizer(read), early_start_listeners=_early_start(read, listeners, controller_names),
        sasl_listeners=sasl_listeners, ssl_mappers=_mappers(read, served),
        ssl_client_auth={name: listener_text(read, name, "ssl.client.auth", "none").lower() == "required"
                         for name in served if protocols.get(name) == "SASL_SSL"
                         and read.text(f"listener.name.{name.lower()}.ssl.client.auth")},
        client_credentials=credentials,
        failed_auth_delay_ms=read.integer("connection.failed.authentication.delay.ms", 100),
        sasl_max_receive_size=read.integer("sasl.server.max.receive.size", 524288))


def _authorizer(read: ValueReader) -> dict:
    name = read.text("authorizer.class.name")
    if name and name != STANDARD_AUTHORIZER:
        read.problems.error(f"authorizer.class.name {name} is not implemented by pykraft: use {STANDARD_AUTHORIZER} "
                            "(ACLs in the metadata log) or leave it empty")
    try:
        super_users = parse_super_users(read.text("super.users"))
    except ValueError as exc:
        read.problems.error(f"super.users: {exc}")
        super_users = frozenset()
    return dict(authorizer=bool(name), super_users=super_users,
                allow_if_no_acl=read.boolean("allow.everyone.if.no.acl.found", False))


def _early_start(read: ValueReader, listeners: tuple[Listener, ...], controller_names: tuple[str, ...]) -> frozenset:
    text = read.props.get("early.start.listeners")
    if text is None:
        return frozenset(controller_names)
    names = {l.name for l in listeners} | set(controller_names)
    found = set()
    for name in (n.strip().upper() for n in text.split(",") if n.strip()):
        if name not in names:
            read.problems.error(f"early.start.listeners contains listener {name}, but this is not contained in "
                                "listeners or controller.listener.names")
        found.add(name)
    return frozenset(found)


def _mappers(read: ValueReader, served: list[str]) -> dict[str, SslPrincipalMapper]:
    mappers = {}
    for name in served:
        rules = listener_text(read, name, "ssl.principal.mapping.rules", "DEFAULT")
        try:
            mappers[name] = SslPrincipalMapper(rules)
        except ValueError as exc:
            read.problems.error(f"Invalid value {rules} for configuration ssl.principal.mapping.rules: {exc}")
    return mappers


def _mechanisms(read: ValueReader, listener: str) -> tuple[str, ...]:
    mechanisms = tuple(split_list(listener_text(read, listener, "sasl.enabled.mechanisms", "GSSAPI")))
    unsupported = [m for m in mechanisms if m not in SUPPORTED_MECHANISMS]
    if unsupported:
        read.problems.error(f"sasl.enabled.mechanisms of listener {listener}: pykraft does not implement "
                            f"{', '.join(unsupported)} (it offers {', '.join(SUPPORTED_MECHANISMS)})")
    if not mechanisms:
        read.problems.error(f"sasl.enabled.mechanisms of listener {listener} is empty: No SASL mechanisms are enabled")
    return tuple(m for m in mechanisms if m in SUPPORTED_MECHANISMS)


def _jaas(read: ValueReader, listener: str, mechanism: str, *, required: bool) -> JaasEntry | None:
    key = f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config"
    text = read.text(key)
    if not text:
        if required:
            read.problems.error(f"Could not find a 'KafkaServer' or '{listener.lower()}.KafkaServer' entry in the JAAS "
                                f"configuration (pykraft reads {key})")
        return None
    try:
        entries = parse_jaas(text)
    except JaasError as exc:
        read.problems.error(f"{key}: {exc}")
        return None
    if len(entries) != 1:
        read.problems.error(f"{key}: JAAS config property contains {len(entries)} login modules, should be 1 module")
        return None
    if entries[0].module != _MODULE_OF[mechanism]:
        read.problems.error(f"{key}: SASL mechanism {mechanism} needs the login module {_MODULE_OF[mechanism]}, not "
                            f"{entries[0].module}")
        return None
    return entries[0]


def _listener_sasl(read: ValueReader, listener: str, protocol: str) -> ListenerSasl:
    mechanisms = _mechanisms(read, listener)
    users = None
    reauth = {}
    for mechanism in mechanisms:
        entry = _jaas(read, listener, mechanism, required=True)
        if mechanism == PLAIN:
            users = plain_users(entry) if entry is not None else {}
        prefixed = f"listener.name.{listener.lower()}.{mechanism.lower()}.connections.max.reauth.ms"
        key = prefixed if read.text(prefixed) else f"listener.name.{listener.lower()}.connections.max.reauth.ms"
        key = key if read.text(key) else "connections.max.reauth.ms"
        reauth[mechanism] = read.integer(key, 0, high=INT64_MAX)
    return ListenerSasl(mechanisms, users, reauth)


def _client_credentials(read: ValueReader, listener: str, key: str,
                        served: ListenerSasl | None) -> tuple[str, str, str] | None:
    """(mechanism, username, password) for this node's connections to `listener`."""
    mechanism = read.text(key, "GSSAPI")
    if mechanism not in SUPPORTED_MECHANISMS:
        read.problems.error(f"{key}={mechanism}: pykraft does not implement that SASL mechanism, which the SASL "
                            f"listener {listener} needs (use one of {', '.join(SUPPORTED_MECHANISMS)})")
        return None
    if served is not None and mechanism not in served.mechanisms:
        read.problems.error(f"{key} must be included in sasl.enabled.mechanisms when SASL is used for "
                            f"{'inter-broker' if 'inter.broker' in key else 'controller'} communication")
        return None
    entry = _jaas(read, listener, mechanism, required=True)
    if entry is None:
        return None
    username, password = entry.options.get("username"), entry.options.get("password")
    if not username or not password:
        read.problems.error(f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config: the node "
                            f"connects to listener {listener} with {mechanism} and needs username and password options")
        return None
    return mechanism, username, password
