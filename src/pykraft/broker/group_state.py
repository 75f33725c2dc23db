"""One classic consumer group's state (Kafka's ClassicGroup): members, generation, protocol, and the replies the
coordinator owes them. Pure data and small rules; the protocol steps are in group_coordinator.py.

States as Kafka's ClassicGroupState: Empty (no members, maybe offsets), PreparingRebalance (collecting JoinGroups),
CompletingRebalance (joined, waiting for the leader's SyncGroup), Stable, Dead (removed or unloaded).
A JoinGroup or SyncGroup that must wait is parked under a `token` the host chose; the coordinator later returns a
`JoinReply` / `SyncReply` naming that token, and the host answers the request it parked.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Hashable

from pykraft.protocol.errors import ErrorCode


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True, slots=True)
class JoinReply:
    """The answer to the JoinGroup parked under `token` (or given at once). `members` is filled for the leader."""

    token: Hashable
    error: ErrorCode
    member_id: str = ""
    generation: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    members: tuple[tuple[str, str | None, bytes], ...] = ()  # (member id, group.instance.id, subscription)


@dataclass(frozen=True, slots=True)
class SyncReply:
    token: Hashable
    error: ErrorCode
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass(frozen=True, slots=True)
class StoreGroup:
    """Write the group's metadata (GroupMetadataValue) to its __consumer_offsets partition; the host calls
    `GroupCoordinator.group_stored` with the outcome, which releases the SyncGroup answers."""

    group_id: str
    generation: int


@dataclass(frozen=True, slots=True)
class OffsetEntry:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int


@dataclass(slots=True)
class Member:
    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: tuple[tuple[str, bytes], ...]  # (name, metadata) in the member's order of preference
    assignment: bytes = b""
    join_token: Hashable | None = None
    sync_token: Hashable | None = None
    session_deadline_ms: int = 0

    def metadata_for(self, protocol: str | None) -> bytes:
        return next((meta for name, meta in self.protocols if name == protocol), b"")

    def supports(self, protocol_type: str, names: set[str]) -> bool:
        return self.protocol_type == protocol_type and bool(names & {n for n, _ in self.protocols})


@dataclass(slots=True)
class Group:
    group_id: str
    state: GroupState = GroupState.EMPTY
    generation: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    pending_members: set[str] = field(default_factory=set)  # ids handed out by MEMBER_ID_REQUIRED
    offsets: dict[tuple[str, int], OffsetEntry] = field(default_factory=dict)
    rebalance_deadline_ms: int | None = None  # PreparingRebalance: join phase end; CompletingRebalance: sync end
    initial_join: bool = False  # the first rebalance of an empty group waits group.initial.rebalance.delay.ms
    state_timestamp_ms: int = -1

    def transition(self, state: GroupState, now_ms: int) -> None:
        self.state = state
        self.state_timestamp_ms = now_ms

    def accepts(self, protocol_type: str, protocols: tuple[tuple[str, bytes], ...]) -> bool:
        """Kafka's supportsProtocols: an empty group takes any non-empty list; otherwise the type must match
        and one of the names be supported by every member."""
        names = {n for n, _ in protocols}
        if not protocol_type or not names:
            return False
        if not self.members:
            return True
        return protocol_type == self.protocol_type and bool(names & self.common_protocols())

    def common_protocols(self) -> set[str]:
        found: set[str] | None = None
        for member in self.members.values():
            names = {n for n, _ in member.protocols}
            found = names if found is None else found & names
        return found or set()

    def select_protocol(self) -> str | None:
        """Every member votes for its most preferred protocol among those all support; the most votes wins
        (ties: the first candidate in the first member's preference order, deterministic)."""
        candidates = self.common_protocols()
        if not candidates:
            return None
        votes: dict[str, int] = {}
        for member in self.members.values():
            choice = next(n for n, _ in member.protocols if n in candidates)
            votes[choice] = votes.get(choice, 0) + 1
        first = next(iter(self.members.values()))
        order = [n for n, _ in first.protocols if n in candidates]
        return max(order, key=lambda name: (votes.get(name, 0), -order.index(name)))

    def all_joined(self) -> bool:
        return all(m.join_token is not None for m in self.members.values())

    def is_leader(self, member_id: str) -> bool:
        return self.leader == member_id
