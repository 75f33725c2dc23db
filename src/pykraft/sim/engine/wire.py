"""Payloads that travel on the simulated network, and the addressing of simulated nodes.

Raft messages carry the kio request/response objects unchanged (no encoding: the codecs are tested elsewhere and
encoding every message would dominate the run time). Client and admin messages are the simulator's own.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from pykraft.raft.voter_set import Endpoint, Endpoints

LISTENER = "CONTROLLER"
HOST = "sim"
BASE_PORT = 9000
CLIENT_BASE = 1000  # endpoint ids of clients; the admin tool is ADMIN
ADMIN = 999


def endpoints_of(node_id: int) -> Endpoints:
    return Endpoints.of([Endpoint(LISTENER, HOST, BASE_PORT + node_id)])


def node_of_port(port: int | None) -> int | None:
    """Bootstrap destinations (negative ids) are resolved by port, as a real connection would be."""
    return None if port is None else port - BASE_PORT


@dataclass(frozen=True, slots=True)
class RaftRequest:
    correlation_id: int
    addressed_as: int  # the destination id the sender used (negative for a bootstrap server)
    request: Any


@dataclass(frozen=True, slots=True)
class RaftResponse:
    correlation_id: int
    addressed_as: int
    response: Any


@dataclass(frozen=True, slots=True)
class ConnectionRefused:
    """What a raft request to a process that is down earns its sender: a refused connection (or, for a request in
    flight when the process died, a reset). The sender's runtime feeds it to its core as `on_peer_unreachable`."""

    node_id: int


class OpKind(enum.Enum):
    WRITE = "write"
    READ = "read"


class OpStatus(enum.Enum):
    OK = "ok"
    NOT_LEADER = "not_leader"  # refused before anything was appended: the operation did not happen
    UNKNOWN = "unknown"  # appended, then leadership was lost: it may or may not commit
    FAILED = "failed"  # appended, then the offset was committed with another value: it did not happen


@dataclass(frozen=True, slots=True)
class ClientRequest:
    op_id: int
    kind: OpKind
    value: bytes


@dataclass(frozen=True, slots=True)
class ClientResponse:
    op_id: int
    status: OpStatus
    offset: int | None = None
    values: tuple[bytes, ...] = ()
    leader_hint: int | None = None


@dataclass(frozen=True, slots=True)
class AdminRequest:
    """A raft admin RPC (AddRaftVoter / RemoveRaftVoter) for the core, or `resign` for the runtime."""

    op_id: int
    request: Any


@dataclass(frozen=True, slots=True)
class AdminResponse:
    op_id: int
    response: Any  # the kio response, or None when the node was not the leader (resign)


@dataclass(frozen=True, slots=True)
class Resign:
    """Ask a leader to step down (the planner's ResignLeader step; Kafka's tooling does it by shutting down)."""


@dataclass(frozen=True, slots=True)
class RequestRef:
    """The opaque `ref` handed to `RaftCore.handle_request`: who asked, which incarnation, and how to answer."""

    src: int
    src_incarnation: int
    correlation_id: int
    addressed_as: int
    admin: bool = False
