"""Value parsers for the node configuration: listeners, voters, host:port lists, numbers and booleans.

Every parser reports a problem as one line on a shared `Problems` list and returns a fallback, so that
`parse_config` can report all problems of a file at once instead of stopping at the first one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

# Kafka's listener regex (`SocketServerConfigs.LISTENER_REGEX` in spirit): NAME://host:port where the host may be
# empty (all interfaces), a name, an IPv4 address or a bracketed IPv6 address.
_LISTENER_RE = re.compile(r"^([A-Za-z0-9_\-.]+)://(\[[0-9A-Fa-f:.%A-Za-z]*\]|[^:\[\]/@]*):(-?\d+)$")
_HOST_PORT_RE = re.compile(r"^(\[[0-9A-Fa-f:.%A-Za-z]*\]|[^:\[\]/@]+):(-?\d+)$")
_VOTER_RE = re.compile(r"^(-?\d+)@(.*)$")

MAX_PORT = 65535
INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1


@dataclass(frozen=True, slots=True)
class Listener:
    """One entry of `listeners` / `advertised.listeners`: "CONTROLLER://127.0.0.1:9093". Host "" = all interfaces."""

    name: str
    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.name}://{host}:{self.port}"


@dataclass(frozen=True, slots=True)
class VoterAddress:
    """One entry of `controller.quorum.voters`: "1@host:port"."""

    node_id: int
    host: str
    port: int


class Problems:
    """Collects one human-readable line per configuration problem (and notes that are only warnings)."""

    __slots__ = ("errors", "warnings")

    def __init__(self) -> None:
        self.errors: list[str] = []
        self.warnings: list[str] = []

    def error(self, message: str) -> None:
        self.errors.append(message)

    def warn(self, message: str) -> None:
        self.warnings.append(message)


def split_list(value: str) -> list[str]:
    """Kafka's comma-separated list type: entries are trimmed and empty entries dropped."""
    return [item.strip() for item in value.split(",") if item.strip()]


def _strip_brackets(host: str) -> str:
    return host[1:-1] if host.startswith("[") and host.endswith("]") else host


def _port(text: str, what: str, problems: Problems, *, allow_zero: bool = True) -> int | None:
    port = int(text)
    low = 0 if allow_zero else 1
    if not low <= port <= MAX_PORT:
        problems.error(f"{what}: port {port} is out of range ({low}-{MAX_PORT})")
        return None
    return port


def parse_listeners(key: str, value: str, problems: Problems) -> tuple[Listener, ...]:
    """`NAME://host:port,...`. Names are upper-cased like Kafka's `ListenerName.normalised`; each name once."""
    listeners: list[Listener] = []
    seen: set[str] = set()
    for item in split_list(value):
        match = _LISTENER_RE.match(item)
        if match is None:
            problems.error(f"{key}: cannot parse listener {item!r} (expected NAME://host:port)")
            continue
        name = match.group(1).upper()
        port = _port(match.group(3), f"{key}: listener {item!r}", problems)
        if port is None:
            continue
        if name in seen:
            problems.error(f"{key}: listener name {name} appears more than once")
            continue
        seen.add(name)
        listeners.append(Listener(name, _strip_brackets(match.group(2)), port))
    return tuple(listeners)


def parse_host_port(
    key: str, item: str, problems: Problems, voter: str | None = None
) -> tuple[str, int] | None:
    """host:port (IPv6 in brackets); `voter` is the whole `id@host:port` entry when parsing a voter."""
    match = _HOST_PORT_RE.match(item)
    shown = repr(item) if voter is None else f"voter {voter!r}"
    if match is None:
        expected = "host:port" if voter is None else "id@host:port"
        problems.error(f"{key}: cannot parse {shown} (expected {expected})")
        return None
    port = _port(match.group(2), f"{key}: {shown}", problems, allow_zero=False)
    return None if port is None else (_strip_brackets(match.group(1)), port)


def parse_voters(key: str, value: str, problems: Problems) -> tuple[VoterAddress, ...]:
    """`id@host:port,...` (Kafka's `QuorumConfig.parseVoterConnections`); ids unique and non-negative."""
    voters: list[VoterAddress] = []
    seen: set[int] = set()
    for item in split_list(value):
        match = _VOTER_RE.match(item)
        if match is None:
            problems.error(f"{key}: cannot parse voter {item!r} (expected id@host:port)")
            continue
        node_id = int(match.group(1))
        address = parse_host_port(key, match.group(2), problems, item)
        if address is None:
            continue
        if node_id < 0 or node_id > INT32_MAX:
            problems.error(f"{key}: voter {item!r} has an invalid node id {node_id}")
            continue
        if node_id in seen:
            problems.error(f"{key}: voter id {node_id} appears more than once")
            continue
        seen.add(node_id)
        voters.append(VoterAddress(node_id, *address))
    return tuple(voters)


def parse_bootstrap_servers(key: str, value: str, problems: Problems) -> tuple[tuple[str, int], ...]:
    servers = (parse_host_port(key, item, problems) for item in split_list(value))
    return tuple(server for server in servers if server is not None)


def parse_protocol_map(key: str, value: str, problems: Problems) -> dict[str, str]:
    """`NAME:PROTOCOL,...` (listener.security.protocol.map); both sides upper-cased."""
    result: dict[str, str] = {}
    for item in split_list(value):
        name, sep, protocol = item.partition(":")
        if not sep or not name.strip() or not protocol.strip():
            problems.error(f"{key}: cannot parse {item!r} (expected LISTENER_NAME:SECURITY_PROTOCOL)")
            continue
        result[name.strip().upper()] = protocol.strip().upper()
    return result


class ValueReader:
    """Typed access to the raw properties, recording a problem (and returning the default) for a bad value."""

    __slots__ = ("props", "problems")

    def __init__(self, props: Mapping[str, str], problems: Problems) -> None:
        self.props = props
        self.problems = problems

    def text(self, key: str, default: str = "") -> str:
        return self.props.get(key, default).strip()

    def integer(self, key: str, default: int, *, low: int = 0, high: int = INT32_MAX) -> int:
        """An int in [low, high]. Kafka's int configs are Java ints, its long configs get high=INT64_MAX. A bad
        value is reported in Kafka's ConfigDef words (`Invalid value X for configuration K: ...`)."""
        raw = self.props.get(key)
        if raw is None or not raw.strip():
            return default
        text = raw.strip()
        kind = "LONG" if high > INT32_MAX else "INT"
        limit = INT64_MAX if kind == "LONG" else INT32_MAX
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or not -limit - 1 <= value <= limit:
            self._invalid(key, text, f"Not a number of type {kind}")
            return default
        if value < low:
            self._invalid(key, text, f"Value must be at least {low}")
            return default
        if value > high:
            self._invalid(key, text, f"Value must be no more than {high}")
            return default
        return value

    def _invalid(self, key: str, text: str, reason: str) -> None:
        self.problems.error(f"Invalid value {text} for configuration {key}: {reason}")

    def boolean(self, key: str, default: bool) -> bool:
        raw = self.props.get(key)
        if raw is None or not raw.strip():
            return default
        value = raw.strip().lower()
        if value not in ("true", "false"):
            self._invalid(key, raw.strip(), "Expected value to be either true or false")
            return default
        return value == "true"

    def choice(self, key: str, default: str, choices: tuple[str, ...]) -> str:
        value = self.text(key, default).lower()
        if value not in choices:
            self._invalid(key, self.text(key, default), f"String must be one of: {', '.join(choices)}")
            return default
        return value
