"""Epoch states: Unattached, Prospective, Candidate, Follower, Resigned (Leader lives in leader.py).

States hold timers as absolute deadlines in milliseconds; they are mutable only in their timers and vote
bookkeeping. Which state may follow which is decided in quorum_state.py, nowhere else.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from pykraft.raft.election import ElectionState
from pykraft.raft.voter_set import Endpoints, ReplicaKey

NEVER = 2**62  # a deadline that never expires (observers' election timer)


class Role(enum.Enum):
    UNATTACHED = "Unattached"
    PROSPECTIVE = "Prospective"
    CANDIDATE = "Candidate"
    LEADER = "Leader"
    FOLLOWER = "Follower"
    RESIGNED = "Resigned"


class VoteState(enum.Enum):
    UNRECORDED = "unrecorded"
    GRANTED = "granted"
    REJECTED = "rejected"


@dataclass(slots=True)
class EpochElection:
    """Votes (or pre-votes) collected by a nominee from the voters of the current voter set."""

    votes: dict[ReplicaKey, VoteState]

    @staticmethod
    def start(voters: frozenset[ReplicaKey], local: ReplicaKey) -> EpochElection:
        election = EpochElection({key: VoteState.UNRECORDED for key in voters})
        election.record(local.id, True)
        return election

    def record(self, voter_id: int, granted: bool) -> None:
        for key in self.votes:
            if key.id == voter_id:
                self.votes[key] = VoteState.GRANTED if granted else VoteState.REJECTED

    def majority(self) -> int:
        return len(self.votes) // 2 + 1

    def granted(self) -> frozenset[ReplicaKey]:
        return frozenset(k for k, v in self.votes.items() if v is VoteState.GRANTED)

    def is_granted(self) -> bool:
        return len(self.granted()) >= self.majority()

    def is_rejected(self) -> bool:
        """A majority can no longer be reached."""
        rejected = sum(1 for v in self.votes.values() if v is VoteState.REJECTED)
        return len(self.votes) - rejected < self.majority()

    def unrecorded(self) -> list[ReplicaKey]:
        return sorted(k for k, v in self.votes.items() if v is VoteState.UNRECORDED)


@dataclass(slots=True)
class UnattachedState:
    epoch: int
    election_deadline_ms: int
    leader_id: int | None = None
    voted_key: ReplicaKey | None = None
    high_watermark: int | None = None
    role: Role = field(default=Role.UNATTACHED, init=False)

    def election(self) -> ElectionState:
        return ElectionState(self.epoch, self.leader_id, self.voted_key)


@dataclass(slots=True)
class ProspectiveState:
    epoch: int
    election: EpochElection
    election_deadline_ms: int
    retries: int = 0
    leader_id: int | None = None
    leader_endpoints: Endpoints = Endpoints()
    voted_key: ReplicaKey | None = None
    high_watermark: int | None = None
    role: Role = field(default=Role.PROSPECTIVE, init=False)

    def election_state(self) -> ElectionState:
        return ElectionState(self.epoch, self.leader_id, self.voted_key)


@dataclass(slots=True)
class CandidateState:
    epoch: int
    local_key: ReplicaKey
    election: EpochElection
    election_deadline_ms: int
    retries: int = 1
    backoff_until_ms: int | None = None  # set when the election was lost or timed out
    high_watermark: int | None = None
    role: Role = field(default=Role.CANDIDATE, init=False)

    def election_state(self) -> ElectionState:
        return ElectionState.with_voted_candidate(self.epoch, self.local_key)


@dataclass(slots=True)
class FollowerState:
    epoch: int
    leader_id: int
    leader_endpoints: Endpoints
    fetch_deadline_ms: int
    voted_key: ReplicaKey | None = None
    high_watermark: int | None = None
    has_fetched_from_leader: bool = False
    fetching_snapshot: object | None = None  # a RawSnapshotWriter while a snapshot download is in progress
    update_voter_deadline_ms: int = 0
    role: Role = field(default=Role.FOLLOWER, init=False)

    def election_state(self) -> ElectionState:
        return ElectionState.with_elected_leader(self.epoch, self.leader_id, self.voted_key)


@dataclass(slots=True)
class ResignedState:
    epoch: int
    local_id: int
    election_deadline_ms: int
    unacked_voters: set[int]
    preferred_successors: tuple[ReplicaKey, ...]
    high_watermark: int | None = None
    role: Role = field(default=Role.RESIGNED, init=False)

    def election_state(self) -> ElectionState:
        return ElectionState.with_elected_leader(self.epoch, self.local_id)


def election_state_of(state: object) -> ElectionState:
    if isinstance(state, UnattachedState):
        return state.election()
    return state.election_state()  # type: ignore[attr-defined]
