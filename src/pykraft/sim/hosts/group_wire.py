"""Group-protocol messages between the simulated consumers and the brokers' group coordinators (group_plane.py):
one request type with the operation named (join, sync, heartbeat, commit, offsets, leave) and its arguments, one
answer with its error and value (a JoinReply or SyncReply of broker/group_state.py, or the committed offsets)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pykraft.protocol.errors import ErrorCode


@dataclass(frozen=True, slots=True)
class GroupRequest:
    request_id: int
    group_id: str
    op: str
    args: tuple[Any, ...] = ()


@dataclass(frozen=True, slots=True)
class GroupResponse:
    request_id: int
    error: ErrorCode
    value: Any = None
