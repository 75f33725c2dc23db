"""From command-line strings and a `--command-config` file to an `AdminClient`, and the new controller's identity
for `add-controller`. Every problem is a `SettingsError` with a one-line message.

Keys read from the command config (others are ignored, so a node's own properties file can be given):
- `security.protocol` = PLAINTEXT (default), SSL, SASL_PLAINTEXT or SASL_SSL; with SSL and SASL_SSL,
  `ssl.ca.location` (required), `ssl.certificate.location` and `ssl.key.location` (for mutual TLS), the node config's
  PEM key names; with SASL, Kafka's client keys `sasl.mechanism` (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512; Kafka's
  default GSSAPI is refused) and `sasl.jaas.config` (PlainLoginModule or ScramLoginModule with username and password);
- `request.timeout.ms` (30000), `default.api.timeout.ms` (60000: the deadline of one operation, retries
  included), `retry.backoff.ms` (100), `retry.backoff.max.ms` (1000): Kafka's admin client names.
"""

from __future__ import annotations

import os
import ssl
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pykraft.raft.voter_set import Endpoint, ReplicaKey
from pykraft.storage.meta_properties import parse_properties

from .brokers import BrokerClient
from .client import AdminClient

__all__ = ["ControllerIdentity", "SettingsError", "make_broker_client", "make_client", "parse_bootstrap",
           "read_command_config", "read_new_controller"]


class SettingsError(Exception):
    """A flag or a configuration value that cannot be used (one line)."""


def parse_bootstrap(text: str) -> list[tuple[str, int]]:
    """`host:port[,host:port...]`; IPv6 hosts in brackets (`[::1]:9093`)."""
    addresses = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        host, sep, port = item.rpartition(":")
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise SettingsError(f"invalid bootstrap address {item!r}: expected HOST:PORT")
        addresses.append((host, int(port)))
    if not addresses:
        raise SettingsError("no bootstrap address given")
    return addresses


def read_command_config(path: Path | None) -> dict[str, str]:
    if path is None:
        return {}
    try:
        return parse_properties(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SettingsError(f"Properties file {path} does not exist.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsError(f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None


def _int_setting(props: Mapping[str, str], key: str, default: int) -> int:
    text = props.get(key)
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        raise SettingsError(f"{key} must be an integer, not {text!r}") from None
    if value <= 0:
        raise SettingsError(f"{key} must be positive, not {value}")
    return value


PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


def sasl_from(props: Mapping[str, str]) -> object | None:
    """The SASL client settings of a SASL security.protocol (net.sasl_client.SaslClientConfig), else None."""
    if props.get("security.protocol", "PLAINTEXT").strip().upper() not in ("SASL_PLAINTEXT", "SASL_SSL"):
        return None
    from pykraft.net.jaas import JaasError, client_credentials
    from pykraft.net.sasl_client import SaslClientConfig

    mechanism = props.get("sasl.mechanism", "GSSAPI").strip()
    if mechanism not in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"):
        raise SettingsError(f"sasl.mechanism {mechanism} is not supported by pykraft's tools (PLAIN, SCRAM-SHA-256 "
                            "or SCRAM-SHA-512)")
    text = props.get("sasl.jaas.config", "").strip()
    if not text:
        raise SettingsError("security.protocol=SASL needs sasl.jaas.config (a login module with username and "
                            "password)")
    try:
        username, password = client_credentials(text, mechanism)
    except JaasError as exc:
        raise SettingsError(f"sasl.jaas.config: {exc}") from None
    return SaslClientConfig(mechanism, username, password)


def ssl_context_from(props: Mapping[str, str]) -> ssl.SSLContext | None:
    protocol = props.get("security.protocol", "PLAINTEXT").strip().upper()
    if protocol not in PROTOCOLS:
        raise SettingsError(f"security.protocol {protocol} is not supported ({', '.join(PROTOCOLS)})")
    if protocol in ("PLAINTEXT", "SASL_PLAINTEXT"):
        return None
    ca = props.get("ssl.ca.location")
    if not ca:
        raise SettingsError(f"security.protocol={protocol} needs ssl.ca.location")
    from pykraft.net.errors import TlsConfigError
    from pykraft.net.tls import client_context

    try:
        return client_context(props.get("ssl.certificate.location"), props.get("ssl.key.location"), ca)
    except TlsConfigError as exc:
        raise SettingsError(str(exc)) from None


def make_client(bootstrap_controller: str | None, bootstrap_server: str | None, props: Mapping[str, str],
                **overrides: object) -> AdminClient:
    if (bootstrap_controller is None) == (bootstrap_server is None):
        raise SettingsError("exactly one of --bootstrap-server or --bootstrap-controller is required")
    kind = "controller" if bootstrap_controller is not None else "server"
    settings: dict[str, Any] = dict(
        ssl_context=ssl_context_from(props),
        sasl=sasl_from(props),
        request_timeout_ms=_int_setting(props, "request.timeout.ms", 30_000),
        deadline_ms=_int_setting(props, "default.api.timeout.ms", 60_000),
        retry_backoff_ms=_int_setting(props, "retry.backoff.ms", 100),
        retry_backoff_max_ms=_int_setting(props, "retry.backoff.max.ms", 1000),
    )
    settings.update(overrides)
    return AdminClient(parse_bootstrap(bootstrap_controller or bootstrap_server or ""),
                       bootstrap_kind=kind, **settings)


@dataclass(frozen=True, slots=True)
class ControllerIdentity:
    key: ReplicaKey
    endpoints: tuple[Endpoint, ...]  # in controller.listener.names order, as add-controller prints them


def read_new_controller(config_path: Path) -> ControllerIdentity:
    """What `add-controller` needs from the new controller's properties file and its metadata directory."""
    from pykraft.node.config.node_config import ConfigError, load_config
    from pykraft.storage.errors import StorageError
    from pykraft.storage.meta_properties import read_meta_properties

    try:
        config = load_config(config_path)
    except ConfigError as exc:
        raise SettingsError("; ".join(exc.problems)) from None
    if not config.is_controller:
        raise SettingsError("process.roles did not contain 'controller' in configuration file. "
                            "Is this a valid controller configuration file?")
    directory = config.metadata_log_dir
    try:
        meta = read_meta_properties(os.fspath(directory))
    except (StorageError, OSError) as exc:
        raise SettingsError(f"Unable to read meta.properties from {directory}: {exc}") from None
    if meta.directory_id is None:
        raise SettingsError(f"No directory id found in {directory}")
    endpoints = tuple(Endpoint(l.name, l.host, l.port) for l in config.advertised_controller_listeners())
    if not endpoints:
        raise SettingsError("Cannot find information about controller listener name: "
                            + ",".join(config.controller_listener_names))
    return ControllerIdentity(ReplicaKey(config.node_id, meta.directory_id), endpoints)


def parse_directory_id(text: str) -> uuid.UUID:
    from pykraft.records.uuids import kafka_str_to_uuid

    try:
        return kafka_str_to_uuid(text)
    except ValueError as exc:
        raise SettingsError(f"Failed to parse --controller-directory-id: {exc}") from None


def make_broker_client(bootstrap_server: str | None, props: Mapping[str, str], *, deadline_ms: int | None = None,
                       on_wait: Callable[[str], None] | None = None, client_id: str | None = None) -> BrokerClient:
    """A `BrokerClient` for --bootstrap-server and a client properties file (the same keys as `make_client`);
    `deadline_ms` (a tool's --timeout) overrides default.api.timeout.ms."""
    if not bootstrap_server:
        raise SettingsError('Missing required argument "[bootstrap-server]"')
    settings: dict[str, object] = dict(
        ssl_context=ssl_context_from(props),
        sasl=sasl_from(props),
        request_timeout_ms=_int_setting(props, "request.timeout.ms", 30_000),
        deadline_ms=deadline_ms if deadline_ms is not None else _int_setting(props, "default.api.timeout.ms", 60_000),
        retry_backoff_ms=_int_setting(props, "retry.backoff.ms", 100),
        retry_backoff_max_ms=_int_setting(props, "retry.backoff.max.ms", 1000),
        on_wait=on_wait,
    )
    if client_id or props.get("client.id"):
        settings["client_id"] = client_id or props["client.id"]
    return BrokerClient(parse_bootstrap(bootstrap_server), **settings)  # type: ignore[arg-type]
