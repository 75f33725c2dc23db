"""State of voter-set changes (KIP-853) kept by the core between inputs.

Leader side: at most one pending AddVoter or RemoveVoter (`PendingVoterChange`), and, at kraft.version 0, what
voters reported about themselves through UpdateVoter (`volatile_voters`, the input of the kraft.version 0 -> 1
upgrade). Follower side: when the next UpdateVoter / auto-join request is due, and which leader epoch already
acknowledged our UpdateVoter at kraft.version 0.

Only the handlers in `handlers/` change this state; the invariants it carries are:
- a pending change belongs to one leader epoch; it is answered NOT_LEADER_OR_FOLLOWER when that leadership ends;
- a pending change whose VotersRecord was appended is answered once the high watermark passes the record.
"""

from __future__ import annotations

import enum
from collections.abc import Hashable
from dataclasses import dataclass, field

from pykraft.raft.voter_set import Endpoints, ReplicaKey, VoterNode

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


@dataclass(slots=True)
class ReconfigState:
    pending: PendingVoterChange | None = None
    # Leader at kraft.version 0: voter id -> what that voter said about itself in UpdateVoter (this epoch only).
    volatile_epoch: int = -1
    volatile_voters: dict[int, VoterNode] = field(default_factory=dict)
    # Follower: the (leader id, epoch) that acknowledged our kraft.version 0 UpdateVoter.
    update_acked_by: tuple[int, int] | None = None
    # Counters (peer input that was ignored, for metrics and tests).
    ignored_api_versions: int = 0
    failed_probes: int = 0

    def volatile_for(self, epoch: int) -> dict[int, VoterNode]:
        """The kraft.version 0 voter reports of this leader epoch (forgotten when the epoch changes)."""
        if self.volatile_epoch != epoch:
            self.volatile_epoch = epoch
            self.volatile_voters = {}
        return self.volatile_voters
