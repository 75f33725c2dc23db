"""Effects: what the core asks the runtime to do, in order.

The runtime executes the effects of one input in order and never sends or responds before an earlier
`PersistElection` or `FlushLog` has completed. Log appends and truncations have already been applied to the
injected `ReplicatedLog` (buffered, like Kafka's page cache); `FlushLog` is what makes them durable, and the
runtime reports completion with `RaftCore.on_log_flushed(end_offset, now_ms)` (it may batch several flushes).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

from pykraft.raft.election import ElectionState
from pykraft.raft.log import SnapshotId


@dataclass(frozen=True, slots=True)
class Destination:
    """A peer: a node id (negative for bootstrap servers) and its address if known."""

    node_id: int
    host: str | None = None
    port: int | None = None


@dataclass(frozen=True, slots=True)
class PersistElection:
    state: ElectionState
    kraft_version: int  # chooses the quorum-state file version


@dataclass(frozen=True, slots=True)
class FlushLog:
    end_offset: int


@dataclass(frozen=True, slots=True)
class Send:
    destination: Destination
    correlation_id: int
    request: Any  # a kio request dataclass


@dataclass(frozen=True, slots=True)
class Respond:
    ref: Hashable  # the opaque handle given to handle_request
    response: Any  # a kio response dataclass
    # Whether the answer waits for the log flushes issued before it. A leader's Fetch answer does not: records it
    # hands out promise nothing about the leader's own disk (its HWM counts only its flushed end, as in Kafka), so
    # the leader's fsync and the follower's round trip overlap. Election-state writes are always waited for.
    after_log_flush: bool = True


@dataclass(frozen=True, slots=True)
class CommitBatches:
    """Committed batches for the state machine listener: encoded batches covering [base_offset, last_offset]."""

    records: bytes | memoryview
    base_offset: int
    last_offset: int


@dataclass(frozen=True, slots=True)
class LoadSnapshot:
    snapshot_id: SnapshotId


@dataclass(frozen=True, slots=True)
class LeaderChanged:
    leader_id: int | None
    epoch: int


@dataclass(frozen=True, slots=True)
class ShutdownComplete:
    graceful: bool


Effect = PersistElection | FlushLog | Send | Respond | CommitBatches | LoadSnapshot | LeaderChanged | ShutdownComplete


@dataclass(frozen=True, slots=True)
class Ready:
    """The output of one input: effects in execution order and when `poll` must be called next."""

    effects: tuple[Effect, ...]
    wakeup_ms: int

    def describe(self) -> str:
        """One effect a line, then the next poll (raft/describe.py): what the golden scenario files hold."""
        from .describe import describe_ready  # the renderer imports this module
        from .states import NEVER

        return describe_ready(self, NEVER)
