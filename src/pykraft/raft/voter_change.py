"""State of voter-set changes (KIP-853) kept by the core between inputs.

Leader side: at most one pending AddVoter or RemoveVoter (`PendingVoterChange`), and, at kraft.version 0, what
voters reported about themselves through UpdateVoter (`volatile_voters`, the input of the kraft.version 0 -> 1
upgrade); the quorum reassignment requests waiting for their target (`reassign_waiters`, KIP-642 through
AlterPartitionReassignments: `ReassignVotersRequest` in, `ReassignVotersResult` out; handlers/reassign_voters.py). Follower side: when the next UpdateVoter / auto-join request is due, and which leader epoch already
acknowledged our UpdateVoter at kraft.version 0.

Only the handlers in `handlers/` change this state; the invariants it carries are:
- a pending change belongs to one leader epoch; it is answered NOT_LEADER_OR_FOLLOWER when that leadership ends;
- a pending change whose VotersRecord was appended is answered once the high watermark passes the record.
"""

from __future__ import annotations

import enum
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from pykraft.protocol.errors import ErrorCode
from pykraft.raft.voter_set import Endpoints, ReplicaKey, SupportedVersionRange, VoterNode, VoterSet

# KIP-853: the TimeoutMs an auto-joining controller puts in its AddVoter request.
AUTO_JOIN_ADD_TIMEOUT_MS = 30_000


class ChangeKind(enum.Enum):
    ADD = "add"
    REMOVE = "remove"


class KRaftVersionUpgradeError(Exception):
    """`RaftCore.upgrade_kraft_version` refused: a downgrade, an unknown version, a voter that does not support
    (or has not reported) the new version, or a voter change in progress. The caller maps it to
    INVALID_UPDATE_VERSION."""


@dataclass(frozen=True, slots=True)
class PendingVoterChange:
    """An AddVoter/RemoveVoter request the leader accepted and has not answered yet."""

    kind: ChangeKind
    ref: Hashable  # the inbound request handle to answer
    key: ReplicaKey  # the voter being added or removed
    epoch: int  # the leader epoch that accepted it
    deadline_ms: int
    endpoints: Endpoints = Endpoints()
    ack_when_committed: bool = True
    api_versions_from: int | None = None  # AddVoter waits for the ApiVersions probe answer of this node
    record_offset: int | None = None  # offset of the appended VotersRecord, once appended

    def is_committed(self, high_watermark: int | None) -> bool:
        return self.record_offset is not None and high_watermark is not None and high_watermark > self.record_offset


@dataclass(frozen=True, slots=True)
class VoterCandidate:
    """A controller that may become a voter, as its ControllerRegistration (in the controller's image) shows it:
    the leader knows its directory id and progress from its Fetch, but only the registration has its endpoints."""

    endpoints: Endpoints
    supported_kraft: SupportedVersionRange


@dataclass(frozen=True, slots=True, eq=False)
class ReassignVotersRequest:
    """AlterPartitionReassignments naming `__cluster_metadata` partition 0, as the core takes it (the node builds
    it; the simulator sends it as is). `target_ids` None cancels the reassignment in progress. `candidates` are the
    registered controllers (id -> VoterCandidate); `brokers` the registered broker ids (only for a clearer error)."""

    # Read when handling it fails (the node records the failure under the API it came in by).
    __api_key__: ClassVar[int] = 45  # AlterPartitionReassignments
    __version__: ClassVar[int] = 0

    target_ids: tuple[int, ...] | None
    timeout_ms: int
    candidates: Mapping[int, VoterCandidate] = field(default_factory=dict)
    brokers: frozenset[int] = frozenset()


@dataclass(frozen=True, slots=True)
class ReassignVotersResult:
    """The core's answer to a ReassignVotersRequest (the node maps NOT_LEADER_OR_FOLLOWER to NOT_CONTROLLER)."""

    error_code: ErrorCode
    message: str | None = None


@dataclass(frozen=True, slots=True)
class ReassignWaiter:
    """A ReassignVotersRequest accepted by this leader, answered once `keys` is the committed voter set."""

    ref: Hashable
    keys: frozenset[ReplicaKey]
    epoch: int
    deadline_ms: int


@dataclass(slots=True)
class ReconfigState:
    pending: PendingVoterChange | None = None
    # Leader at kraft.version 0: voter id -> what that voter said about itself in UpdateVoter (this epoch only).
    volatile_epoch: int = -1
    volatile_voters: dict[int, VoterNode] = field(default_factory=dict)
    # Follower: the (leader id, epoch) that acknowledged our kraft.version 0 UpdateVoter.
    update_acked_by: tuple[int, int] | None = None
    # Leader: quorum reassignment requests waiting for their target, and what the reassignment waits for now
    # (None when it is not waiting: no reassignment, or a step just taken).
    reassign_waiters: list[ReassignWaiter] = field(default_factory=list)
    # (leader epoch, target) accepted by this leader, to be written once no VotersRecord is uncommitted
    pending_target: tuple[int, VoterSet] | None = None
    reassign_waiting_for: str | None = None
    reassign_steps: int = 0  # VotersRecords this node appended as a reassignment step (tests, traces)
    # Counters (peer input that was ignored, for metrics and tests).
    ignored_api_versions: int = 0
    failed_probes: int = 0

    def volatile_for(self, epoch: int) -> dict[int, VoterNode]:
        """The kraft.version 0 voter reports of this leader epoch (forgotten when the epoch changes)."""
        if self.volatile_epoch != epoch:
            self.volatile_epoch = epoch
            self.volatile_voters = {}
        return self.volatile_voters
