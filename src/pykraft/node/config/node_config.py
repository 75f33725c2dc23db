"""The node's configuration: a Java-properties file with Kafka's key names and defaults (reference §4).

`load_config(path)` / `parse_config(text)` return a frozen `NodeConfig` or raise `ConfigError` listing every
problem of the file at once, one per line. Unknown keys are allowed (Kafka ignores them), named in a warning and
kept in `raw`.
Things that are legal but unwise (a fetch timeout below twice the 500 ms long-poll wait) are not errors: they
are listed in `NodeConfig.warnings` for the node to log at start.

pykraft-only keys: `pykraft.metrics.port` (Prometheus exporter, unset = off), `pykraft.log.format` (text, Kafka's
log layout, the default | json) and `pykraft.logs.dir` (also write `server.log` there, as Kafka's `kafka.logs.dir`;
unset: the `LOG_DIR` environment variable, as Kafka's scripts read it, else stderr only: node/logs.py). TLS uses librdkafka's PEM key names: `ssl.certificate.location`, `ssl.key.location`,
`ssl.ca.location`, or Kafka's `ssl.keystore.*` / `ssl.truststore.*` (PKCS12 or PEM types, config_stores.py), plus
Kafka's `ssl.client.auth` (required|requested|none). Kafka keys pykraft does not use are still checked against
Kafka's types and ranges, security settings it does not enforce refuse the start, and the keys it does not
implement are named in one warning (config_checks.py).
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from pykraft.raft.config import LocalReplica, QuorumConfig
from pykraft.raft.voter_set import Endpoint, Endpoints, ReplicaKey, SupportedVersionRange, VoterNode, VoterSet
from pykraft.storage.meta_properties import parse_properties

from pykraft.node.config.build import build_config
from pykraft.node.config.security import SecurityConfig
from pykraft.node.config.stores import StoreError, resolve_tls
from pykraft.node.config.values import Listener, VoterAddress

__all__ = [
    "ConfigError",
    "Listener",
    "NodeConfig",
    "TlsConfig",
    "VoterAddress",
    "load_config",
    "parse_config",
]

BROKER = "broker"
CONTROLLER = "controller"


class ConfigError(Exception):
    """The configuration cannot be used. `problems` has one line per problem; str() joins them with newlines."""

    def __init__(self, problems: tuple[str, ...] | list[str], source: str = "<config>") -> None:
        self.problems = tuple(problems)
        self.source = source
        super().__init__("\n".join(self.problems))


@dataclass(frozen=True, slots=True)
class TlsConfig:
    cert_path: str
    key_path: str
    ca_path: str
    client_auth_required: bool


@dataclass(frozen=True, slots=True)
class NodeConfig:
    process_roles: frozenset[str]
    node_id: int
    listeners: tuple[Listener, ...]
    advertised_listeners: tuple[Listener, ...]
    controller_listener_names: tuple[str, ...]
    listener_security_protocols: Mapping[str, str]
    inter_broker_listener_name: str
    metadata_log_dir: str
    log_dirs: tuple[str, ...]
    quorum_voters: tuple[VoterAddress, ...]
    bootstrap_servers: tuple[tuple[str, int], ...]
    quorum: QuorumConfig
    max_record_bytes_between_snapshots: int
    max_snapshot_interval_ms: int
    segment_bytes: int
    segment_ms: int
    max_retention_bytes: int
    max_retention_ms: int
    max_idle_interval_ms: int
    broker_heartbeat_interval_ms: int
    broker_session_timeout_ms: int
    tls: TlsConfig | None
    metrics_port: int | None
    log_format: str
    raw: Mapping[str, str]
    logs_dir: str | None = None
    initial_broker_registration_timeout_ms: int = 60_000
    warnings: tuple[str, ...] = ()
    security: SecurityConfig = SecurityConfig()

    @property
    def is_controller(self) -> bool:
        return CONTROLLER in self.process_roles

    @property
    def is_broker(self) -> bool:
        return BROKER in self.process_roles

    @property
    def controller_listener_name(self) -> str:
        """The first of controller.listener.names: the listener the raft channel uses (Kafka's rule)."""
        return self.controller_listener_names[0]

    def controller_listener(self) -> Listener:
        """The first controller listener this node binds (the raft channel). Only meaningful on a controller."""
        name = self.controller_listener_name
        for listener in self.listeners:
            if listener.name == name:
                return listener
        raise LookupError(f"no listener named {name} in listeners (broker-only nodes do not bind one)")

    def security_protocol(self, listener_name: str) -> str:
        return self.listener_security_protocols.get(listener_name.upper(), "PLAINTEXT")

    def broker_listener_names(self) -> tuple[str, ...]:
        """The listeners a broker serves clients on: every bound listener that is not a controller listener."""
        controller = set(self.controller_listener_names)
        return tuple(listener.name for listener in self.listeners if listener.name not in controller)

    def served_listeners(self) -> tuple[Listener, ...]:
        """The listeners this process binds, the raft channel first on a controller: a controller's controller
        listeners, a broker's other listeners (config validation guarantees one), both in combined mode."""
        controller = set(self.controller_listener_names)
        first = (self.controller_listener(),) if self.is_controller else ()
        return first + tuple(listener for listener in self.listeners if listener not in first and (
            (self.is_controller and listener.name in controller) or (self.is_broker and listener.name not in controller)))

    def advertised_controller_listeners(self) -> tuple[Listener, ...]:
        """Each controller listener as advertised (Kafka's `effectiveAdvertisedControllerListeners`)."""
        return self._advertised(self.controller_listener_names)

    def advertised_broker_listeners(self) -> tuple[Listener, ...]:
        """What BrokerRegistration announces, Kafka's `effectiveAdvertisedBrokerListeners`: the broker entries of
        advertised.listeners when it is set (a bound listener it leaves out is served but not advertised), else
        the bound broker listeners, in that order."""
        controller = set(self.controller_listener_names)
        return self._advertised(l.name for l in self.advertised_listeners if l.name not in controller)

    def _advertised(self, names: Iterable[str]) -> tuple[Listener, ...]:
        """From advertised.listeners if named there, else from listeners; an empty host (bind all interfaces)
        advertises this machine's fully qualified name, as Kafka advertises the canonical host name."""
        advertised = {listener.name: listener for listener in self.advertised_listeners}
        bound = {listener.name: listener for listener in self.listeners}
        result = []
        for name in names:
            listener = advertised.get(name) or bound.get(name)
            if listener is None:
                continue
            if not listener.host:
                listener = Listener(listener.name, socket.getfqdn(), listener.port)
            result.append(listener)
        return tuple(result)

    def advertised_controller_endpoints(self) -> Endpoints:
        return Endpoints.of(Endpoint(l.name, l.host, l.port) for l in self.advertised_controller_listeners())

    def static_voter_set(self) -> VoterSet | None:
        """controller.quorum.voters as a kraft.version 0 voter set (no directory ids), or None when unset."""
        if not self.quorum_voters:
            return None
        name = self.controller_listener_name
        return VoterSet.of(
            VoterNode(
                ReplicaKey(v.node_id, None),
                Endpoints.of([Endpoint(name, v.host, v.port)]),
                SupportedVersionRange(0, 0),
            )
            for v in self.quorum_voters
        )

    def bootstrap_endpoints(self) -> tuple[Endpoint, ...]:
        """controller.quorum.bootstrap.servers as endpoints of the controller listener."""
        name = self.controller_listener_name
        return tuple(Endpoint(name, host, port) for host, port in self.bootstrap_servers)

    def local_replica(self, directory_id: uuid.UUID | None, cluster_id: str | None = None) -> LocalReplica:
        """Who this node is to the raft core, given the metadata dir's directory.id from meta.properties."""
        return LocalReplica(
            node_id=self.node_id,
            directory_id=directory_id,
            listener_name=self.controller_listener_name,
            endpoints=self.advertised_controller_endpoints() if self.is_controller else Endpoints(),
            can_become_voter=self.is_controller,
            cluster_id=cluster_id,
            static_voters=self.static_voter_set(),
            bootstrap_servers=self.bootstrap_endpoints(),
        )


def parse_config(text: str, source: str = "<config>") -> NodeConfig:
    """Parse the text of a Java-properties file. Raises ConfigError listing every problem."""
    props = parse_properties(text)
    fields, errors, warnings = build_config(props)
    tls = fields.pop("tls")
    if tls is not None and not errors:
        try:
            tls = (*resolve_tls(tls[0], tls[1], tls[2], tls[4], tls[5]), tls[3])
        except StoreError as exc:
            errors = [*errors, str(exc)]
    if errors:
        raise ConfigError([f"{source}: {problem}" for problem in errors], source)
    return NodeConfig(
        **fields,
        tls=None if tls is None else TlsConfig(*tls),
        raw=MappingProxyType(dict(props)),
        warnings=tuple(warnings),
    )


def load_config(path: str | os.PathLike[str]) -> NodeConfig:
    """Read and parse a properties file. A missing or unreadable file is a ConfigError too."""
    source = os.fspath(path)
    try:
        with open(source, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError([f"{source}: cannot read the configuration file: {reason}"], source) from None
    return parse_config(text, source)
