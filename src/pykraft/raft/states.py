"""Epoch states: Unattached, Prospective, Candidate, Follower, Resigned (Leader lives in leader.py).

Every state offers the `EpochState` protocol (Kafka's EpochState): its role and epoch, the election record it
persists, the vote it has cast, the leader it knows, whether it may grant a vote, and its timer deadlines. States
hold timers as absolute deadlines in milliseconds; they are mutable only in their timers and vote bookkeeping.
Which state may follow which is decided in quorum_state.py, nowhere else; the high watermark is a property of the
log, not of an epoch, and is kept there once (a leader computes its own, leader.py).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from pykraft.raft.election import ElectionState
from pykraft.raft.voter_set import Endpoints, ReplicaKey, majority_of

if TYPE_CHECKING:
    from pykraft.raft.log import RawSnapshotWriter

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


class EpochState(Protocol):
    """What QuorumState, the handlers and the timers may ask of any epoch state (LeaderState included)."""

    @property
    def role(self) -> Role: ...

    @property
    def epoch(self) -> int: ...

    @property
    def voted_key(self) -> ReplicaKey | None:
        """The vote cast in this epoch (a candidate, and the leader it became, voted for itself)."""

    @property
    def leader_id(self) -> int | None:
        """The leader of this epoch as this state knows it (None when unknown, or when resigned)."""

    @property
    def leader_endpoints(self) -> Endpoints | None:
        """The leader's endpoints as learned from the leader itself; None in states that do not track them."""

    def election_state(self) -> ElectionState:
        """What `quorum-state` records for this state."""

    def can_grant_vote(self, candidate: ReplicaKey, is_log_up_to_date: bool, is_pre_vote: bool) -> bool:
        """Whether this state lets the local replica grant `candidate` a vote (or pre-vote), §1.5."""

    def deadlines(self) -> tuple[int | None, ...]:
        """The timer deadlines of this state (None: not running): the core wakes up at the earliest."""


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
        return majority_of(len(self.votes))

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


def _grant_as_uncommitted(voted_key: ReplicaKey | None, leader_id: int | None, candidate: ReplicaKey,
                          is_log_up_to_date: bool, is_pre_vote: bool) -> bool:
    """Unattached and Prospective: a standard vote goes to the one candidate already voted for, else to an
    up-to-date candidate while no leader is known; a pre-vote to any up-to-date candidate."""
    if is_pre_vote:
        return is_log_up_to_date
    if voted_key is not None:
        return voted_key.id == candidate.id and (voted_key.directory_id is None
                                                  or voted_key.directory_id == candidate.directory_id)
    return leader_id is None and is_log_up_to_date


@dataclass(slots=True)
class UnattachedState:
    epoch: int
    election_deadline_ms: int
    leader_id: int | None = None
    voted_key: ReplicaKey | None = None
    role: Role = field(default=Role.UNATTACHED, init=False)

    @property
    def leader_endpoints(self) -> Endpoints | None:
        return None

    def election_state(self) -> ElectionState:
        return ElectionState(self.epoch, self.leader_id, self.voted_key)

    def can_grant_vote(self, candidate: ReplicaKey, is_log_up_to_date: bool, is_pre_vote: bool) -> bool:
        return _grant_as_uncommitted(self.voted_key, self.leader_id, candidate, is_log_up_to_date, is_pre_vote)

    def deadlines(self) -> tuple[int | None, ...]:
        return (self.election_deadline_ms,)


@dataclass(slots=True)
class ProspectiveState:
    epoch: int
    election: EpochElection
    election_deadline_ms: int
    retries: int = 0
    leader_id: int | None = None
    leader_endpoints: Endpoints = Endpoints()
    voted_key: ReplicaKey | None = None
    role: Role = field(default=Role.PROSPECTIVE, init=False)

    def election_state(self) -> ElectionState:
        return ElectionState(self.epoch, self.leader_id, self.voted_key)

    def can_grant_vote(self, candidate: ReplicaKey, is_log_up_to_date: bool, is_pre_vote: bool) -> bool:
        return _grant_as_uncommitted(self.voted_key, self.leader_id, candidate, is_log_up_to_date, is_pre_vote)

    def deadlines(self) -> tuple[int | None, ...]:
        return (self.election_deadline_ms,)


@dataclass(slots=True)
class CandidateState:
    epoch: int
    local_key: ReplicaKey
    election: EpochElection
    election_deadline_ms: int
    retries: int = 1
    backoff_until_ms: int | None = None  # set when the election was lost or timed out
    role: Role = field(default=Role.CANDIDATE, init=False)

    @property
    def voted_key(self) -> ReplicaKey:
        return self.local_key

    @property
    def leader_id(self) -> None:
        return None

    @property
    def leader_endpoints(self) -> Endpoints | None:
        return None

    def election_state(self) -> ElectionState:
        return ElectionState.with_voted_candidate(self.epoch, self.local_key)

    def can_grant_vote(self, candidate: ReplicaKey, is_log_up_to_date: bool, is_pre_vote: bool) -> bool:
        return is_pre_vote and is_log_up_to_date  # it voted for itself

    def deadlines(self) -> tuple[int | None, ...]:
        return (self.election_deadline_ms, self.backoff_until_ms)


@dataclass(slots=True)
class FollowerState:
    epoch: int
    leader_id: int
    leader_endpoints: Endpoints
    fetch_deadline_ms: int
    voted_key: ReplicaKey | None = None
    has_fetched_from_leader: bool = False
    fetching_snapshot: RawSnapshotWriter | None = None  # while a snapshot download is in progress
    update_voter_deadline_ms: int = 0
    role: Role = field(default=Role.FOLLOWER, init=False)

    def election_state(self) -> ElectionState:
        return ElectionState.with_elected_leader(self.epoch, self.leader_id, self.voted_key)

    def can_grant_vote(self, candidate: ReplicaKey, is_log_up_to_date: bool, is_pre_vote: bool) -> bool:
        # Once it heard from the leader this epoch, a follower does not help depose it (an observer only until the
        # leader has been silent for a fetch timeout: see timers._poll_follower). It never votes: the epoch has a
        # leader.
        return is_pre_vote and not self.has_fetched_from_leader and is_log_up_to_date

    def deadlines(self) -> tuple[int | None, ...]:
        return (self.fetch_deadline_ms,)


@dataclass(slots=True)
class ResignedState:
    epoch: int
    local_id: int
    election_deadline_ms: int
    unacked_voters: set[int]
    preferred_successors: tuple[ReplicaKey, ...]
    role: Role = field(default=Role.RESIGNED, init=False)

    @property
    def voted_key(self) -> None:
        return None

    @property
    def leader_id(self) -> None:
        return None  # it no longer leads (its election record still names it, so that it never leads again)

    @property
    def leader_endpoints(self) -> Endpoints | None:
        return None

    def election_state(self) -> ElectionState:
        return ElectionState.with_elected_leader(self.epoch, self.local_id)

    def can_grant_vote(self, candidate: ReplicaKey, is_log_up_to_date: bool, is_pre_vote: bool) -> bool:
        return is_pre_vote and is_log_up_to_date

    def deadlines(self) -> tuple[int | None, ...]:
        return (self.election_deadline_ms,)
