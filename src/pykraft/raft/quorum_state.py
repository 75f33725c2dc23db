"""QuorumState: the one place that changes the epoch state, checked against the transition table below.

Durable transitions (everything except Prospective and Resigned) emit `PersistElection` before anything else the
input produces, so the runtime writes `quorum-state` before sending messages that depend on it.
"""

from __future__ import annotations

import enum
import random
from collections.abc import Callable

from pykraft.raft.config import LocalReplica, QuorumConfig
from pykraft.raft.effects import Effect, PersistElection
from pykraft.raft.election import ElectionState
from pykraft.raft.states import (
    NEVER,
    CandidateState,
    EpochElection,
    EpochState,
    FollowerState,
    ProspectiveState,
    ResignedState,
    Role,
    UnattachedState,
)
from pykraft.raft.voter_set import Endpoints, ReplicaKey, VoterSet


class EpochRule(enum.Enum):
    SAME = "same epoch"
    VOTE = "same epoch, adding a binding vote"
    HIGHER = "higher epoch"
    NEXT = "epoch + 1"


U, P, C, L, F, R = Role.UNATTACHED, Role.PROSPECTIVE, Role.CANDIDATE, Role.LEADER, Role.FOLLOWER, Role.RESIGNED
S, V, H, N = EpochRule.SAME, EpochRule.VOTE, EpochRule.HIGHER, EpochRule.NEXT

# (from, to, epoch rule). KIP-996 (Kafka 4.0+) table; §1.3 of the reference.
TRANSITIONS: frozenset[tuple[Role, Role, EpochRule]] = frozenset({
    (U, U, H), (U, U, V),  # higher epoch learned; or a binding vote granted in the same epoch
    (U, P, S),  # election timeout (voters only)
    (U, F, S), (U, F, H),  # leader discovered
    (P, C, N),  # pre-vote majority: the only way into Candidate
    (P, U, S), (P, U, H),  # lost pre-election without a known leader; or a higher epoch
    (P, F, S), (P, F, H),  # leader discovered, or lost pre-election with a known leader
    (P, P, V),  # binding vote granted while prospective (re-entering Prospective is refused)
    (C, L, S),  # vote majority
    (C, P, S),  # election lost or timed out, after backoff
    (C, U, H),
    (C, F, S), (C, F, H),  # another candidate won this epoch, or a higher epoch with a leader
    (L, R, S),  # graceful shutdown, resign(), check-quorum expiry
    (L, U, H), (L, F, H),
    (F, P, S),  # fetch timeout (voters)
    (F, F, S), (F, F, H),  # same epoch only to learn more endpoints of the same leader
    (F, U, H),
    (R, U, H),  # higher epoch, or election timeout (moves to epoch + 1)
    (R, F, H),
})  # fmt: skip

DURABLE_ROLES = frozenset({U, C, L, F})
VOTER_ONLY_ROLES = frozenset({P, C, L, R})


class IllegalTransition(AssertionError):
    """A transition the table forbids. A programmer error: handlers check before transitioning."""


def epoch_rule(old: EpochState, new: EpochState) -> EpochRule | None:
    """How the epochs of two states relate, None when the new epoch is lower. A same-epoch transition into the
    same role that adds a vote is the separate rule VOTE, so that re-entering a role is not allowed by accident."""
    old_epoch, new_epoch = old.epoch, new.epoch
    if new_epoch < old_epoch:
        return None
    if new_epoch > old_epoch:
        return N if new_epoch == old_epoch + 1 else H
    adds_vote = old.voted_key is None and new.voted_key is not None
    return V if adds_vote and old.role is new.role else S


def is_allowed(old_role: Role, new_role: Role, rule: EpochRule | None) -> bool:
    """The table lookup; an epoch + 1 move is also allowed wherever a higher epoch is."""
    return rule is not None and ((old_role, new_role, rule) in TRANSITIONS
                                 or (rule is N and (old_role, new_role, H) in TRANSITIONS))


class QuorumState:
    def __init__(
        self,
        local: LocalReplica,
        config: QuorumConfig,
        rng: random.Random,
        voters: Callable[[], VoterSet],
        kraft_version: Callable[[], int],
        emit: Callable[[Effect], None],
        on_transition: Callable[[], None] | None = None,
        voters_before_uncommitted: Callable[[int | None], VoterSet | None] | None = None,
    ) -> None:
        self.local = local
        self.config = config
        self._rng = rng
        self._voters = voters
        self._voters_before_uncommitted = voters_before_uncommitted
        self._kraft_version = kraft_version
        self._emit = emit
        # Called on every change of epoch or role (not on adding a vote): the core forgets its in-flight
        # requests, so answers to requests sent in an earlier state are dropped, as Kafka's resetConnections.
        # A runtime adds its own (a trace of every transition) with `add_transition_listener`.
        self._transition_listeners: list[Callable[[], None]] = [] if on_transition is None else [on_transition]
        self.state: EpochState = UnattachedState(0, NEVER)
        # The high watermark known outside leadership (a leader computes its own, from its voters' progress): it
        # survives transitions, since it is a property of the log, not of the epoch.
        self._high_watermark: int | None = None

    # ---- queries -----------------------------------------------------------------------------------------
    @property
    def role(self) -> Role:
        return self.state.role

    @property
    def epoch(self) -> int:
        return self.state.epoch

    def election(self) -> ElectionState:
        return self.state.election_state()

    def leader_id(self) -> int | None:
        return self.state.leader_id

    @property
    def high_watermark(self) -> int | None:
        """The leader's own while leading (None until a record of its epoch commits), else the last one learned."""
        state = self.state
        return state.high_watermark if state.role is Role.LEADER else self._high_watermark  # type: ignore[attr-defined]

    def update_high_watermark(self, offset: int) -> bool:
        """A follower learned a high watermark (from a Fetch answer or a downloaded snapshot); it only moves
        forward. True when it moved."""
        assert self.role is not Role.LEADER, "a leader computes its own high watermark"
        if self._high_watermark is None or offset > self._high_watermark:
            self._high_watermark = offset
            return True
        return False

    def add_transition_listener(self, listener: Callable[[], None]) -> None:
        """Called after every change of epoch or role (several may happen within one input)."""
        self._transition_listeners.append(listener)

    def is_voter(self) -> bool:
        """A voter of the latest voter set (it takes effect when appended), or of the set before it while that
        record is not known to be committed. The second case is a replica whose own removal is still pending: a
        leader that appended its removal, lost leadership before anyone received it, and holds the longest log.
        If it could not campaign, the others could not win without its vote (it refuses them, their logs are
        shorter) and a two-voter quorum would stay leaderless forever (sim scenario self_removal_cut). It counts
        the votes of the latest set, like any candidate, and behaves as an observer once the removal commits.
        A replica that cannot become a voter (a node without the controller role) is never one, whatever the log
        says: it observes."""
        key = self.local.key
        if key is None or not self.local.can_become_voter:
            return False
        if self._voters().is_voter(key):
            return True
        if self._voters_before_uncommitted is None:
            return False
        previous = self._voters_before_uncommitted(self.high_watermark)
        return previous is not None and previous.is_voter(key)

    def random_election_timeout_ms(self) -> int:
        timeout = self.config.election_timeout_ms
        return timeout + self._rng.randrange(timeout) if timeout > 0 else 0

    def _election_deadline(self, now_ms: int) -> int:
        return now_ms + self.random_election_timeout_ms() if self.is_voter() else NEVER

    # ---- initialization (restart rules, §1.3) ------------------------------------------------------------
    def initialize(self, stored: ElectionState | None, log_epoch: int, now_ms: int) -> None:
        stored = stored or ElectionState(0)
        local = self.local
        if stored.voted_key is not None and local.node_id is None:
            raise ValueError("stored election state has a vote but this node has no id")
        deadline = self._election_deadline(now_ms)
        voters = self._voters()
        self._high_watermark = None
        state: EpochState
        if stored.epoch < log_epoch:
            state = UnattachedState(log_epoch, deadline)
        elif stored.is_leader(local.node_id) and not local.can_become_voter:
            # Not a controller (a broker started on a controller's data): it never led as what it is now, and
            # resigning would act as a voter. It looks for the leader as an observer.
            state = UnattachedState(stored.epoch, deadline)
        elif stored.is_leader(local.node_id):
            # A restarted leader must not lead or vote again in its epoch: unflushed data may have been lost.
            assert local.node_id is not None
            others = set(voters.ids()) - {local.node_id}
            # Even a leader since removed from the voters leaves Resigned on this timer (then looks for the leader
            # as an observer); with the observers' infinite timeout it would stay Resigned forever.
            timeout = now_ms + self.random_election_timeout_ms()
            state = ResignedState(stored.epoch, local.node_id, timeout, others, ())
        elif local.key is not None and stored.voted_key is not None and stored.is_voted_candidate(local.key) \
                and local.can_become_voter and voters.is_voter(local.key):
            election = EpochElection.start(voters.keys(), local.key)
            state = CandidateState(stored.epoch, local.key, election, deadline, retries=1)
        elif stored.leader_id is not None and not voters.endpoints_of(stored.leader_id).is_empty():
            state = FollowerState(stored.epoch, stored.leader_id, voters.endpoints_of(stored.leader_id),
                                  now_ms + self.config.fetch_timeout_ms, stored.voted_key)
        else:
            state = UnattachedState(stored.epoch, deadline, stored.leader_id, stored.voted_key)
        self.state = state
        if state.role in DURABLE_ROLES:
            self._emit(PersistElection(state.election_state(), self._kraft_version()))

    # ---- the gatekeeper ----------------------------------------------------------------------------------
    def _transition(self, new: EpochState) -> None:
        """Check `new` against the table and the per-state rules; on refusal nothing changes and nothing is
        emitted."""
        old = self.state
        old_role, new_role = self.role, new.role
        rule = epoch_rule(old, new)
        if not is_allowed(old_role, new_role, rule):
            raise IllegalTransition(f"{old_role.value}@{self.epoch} -> {new_role.value}@{new.epoch}")
        self._check_rules(old, new, rule)
        if isinstance(old, FollowerState) and old.fetching_snapshot is not None:
            old.fetching_snapshot.close()  # a partial download belongs to the old leader and epoch
        if old_role is Role.LEADER:
            self._high_watermark = self.high_watermark  # what the leader computed is what the log has committed
        self.state = new
        if rule is not V:
            for listener in self._transition_listeners:
                listener()
        if new_role in DURABLE_ROLES or rule is V:
            # Prospective is not persisted, but a binding vote cast while prospective is.
            self._emit(PersistElection(new.election_state(), self._kraft_version()))

    def _check_rules(self, old: EpochState, new: EpochState, rule: EpochRule | None) -> None:
        new_role = new.role
        if new_role in VOTER_ONLY_ROLES and new_role is not Role.RESIGNED and not self.is_voter():
            raise IllegalTransition(f"an observer cannot become {new_role.value}")
        leader = new.leader_id
        if new_role is Role.FOLLOWER and leader == self.local.node_id:
            raise IllegalTransition("cannot follow itself")
        if rule is V:
            voted = new.voted_key
            assert voted is not None
            if self.local.node_id is None or voted.id == self.local.node_id:
                raise IllegalTransition("a vote needs a local id and is never for itself outside candidacy")
        if rule is S and isinstance(old, FollowerState) and isinstance(new, FollowerState):
            # Same epoch: only the same leader, and only to learn more of its endpoints.
            if leader != old.leader_id:
                raise IllegalTransition("two leaders in one epoch")
            if len(new.leader_endpoints.items) <= len(old.leader_endpoints.items):
                raise IllegalTransition("same-epoch follower transition without new leader endpoints")

    def _same_epoch_vote(self, epoch: int) -> ReplicaKey | None:
        """Same-epoch transitions keep the vote, so a node never votes twice in an epoch."""
        return self.state.voted_key if epoch == self.epoch else None

    def _unattached_deadline(self, now_ms: int) -> int:
        """Learning a higher epoch does not restart a running election timer (Unattached, Candidate, or
        Prospective not yet rejected); otherwise a node could be kept from campaigning by epoch bumps."""
        old = self.state
        if not self.is_voter():
            return NEVER
        keeps = isinstance(old, (UnattachedState, CandidateState)) or (
            isinstance(old, ProspectiveState) and not old.election.is_rejected())
        if keeps and isinstance(old, (UnattachedState, CandidateState, ProspectiveState)) \
                and old.election_deadline_ms > now_ms:
            return old.election_deadline_ms
        return self._election_deadline(now_ms)

    # ---- transitions -------------------------------------------------------------------------------------
    def to_unattached(self, epoch: int, now_ms: int, leader_id: int | None = None) -> None:
        self._transition(UnattachedState(epoch, self._unattached_deadline(now_ms), leader_id,
                                         self._same_epoch_vote(epoch)))

    def unattached_add_vote(self, key: ReplicaKey, now_ms: int) -> None:
        """Grant a binding vote in the current epoch; the election timer restarts."""
        state = self.state
        if not isinstance(state, UnattachedState) or state.voted_key is not None:
            raise IllegalTransition(f"{self.role.value} cannot add a vote (one vote per epoch, Unattached only)")
        self._transition(UnattachedState(state.epoch, self._election_deadline(now_ms), state.leader_id, key))

    def prospective_add_vote(self, key: ReplicaKey) -> None:
        """A prospective node has not bumped its epoch nor voted, so it may grant a binding vote and stay
        Prospective (persisted, unlike Prospective itself)."""
        old = self.state
        if not isinstance(old, ProspectiveState) or old.voted_key is not None:
            raise IllegalTransition(f"{self.role.value} cannot add a prospective vote")
        self._transition(ProspectiveState(old.epoch, old.election, old.election_deadline_ms, old.retries,
                                          old.leader_id, old.leader_endpoints, key))

    def to_prospective(self, now_ms: int) -> None:
        key = self.local.key
        if key is None:
            raise IllegalTransition("a replica without an id never campaigns")
        old = self.state
        retries = old.retries if isinstance(old, CandidateState) else 0
        endpoints = old.leader_endpoints
        # A candidate's own vote is not carried: Prospective at the same epoch has not voted (it re-campaigns).
        voted = None if isinstance(old, CandidateState) else old.voted_key
        self._transition(ProspectiveState(
            self.epoch, EpochElection.start(self._voters().keys(), key), now_ms + self.random_election_timeout_ms(),
            retries, old.leader_id, Endpoints() if endpoints is None else endpoints, voted,
        ))

    def to_candidate(self, now_ms: int) -> None:
        key = self.local.key
        old = self.state
        if key is None or not isinstance(old, ProspectiveState):
            raise IllegalTransition(f"{self.role.value} cannot become Candidate: only a Prospective voter can")
        self._transition(CandidateState(
            self.epoch + 1, key, EpochElection.start(self._voters().keys(), key),
            now_ms + self.random_election_timeout_ms(), old.retries + 1, None,
        ))

    def to_follower(self, epoch: int, leader_id: int, endpoints: Endpoints, now_ms: int) -> None:
        self._transition(FollowerState(
            epoch, leader_id, endpoints, now_ms + self.config.fetch_timeout_ms, self._same_epoch_vote(epoch),
            update_voter_deadline_ms=now_ms,
        ))

    def to_leader(self, leader_state: EpochState) -> None:
        state = self.state
        if not isinstance(state, CandidateState) or not state.election.is_granted():
            raise IllegalTransition(f"{self.role.value} cannot become Leader without a granted election")
        self._transition(leader_state)

    def to_resigned(self, preferred: tuple[ReplicaKey, ...], now_ms: int) -> None:
        assert self.local.node_id is not None
        unacked = set(self._voters().ids()) - {self.local.node_id}
        self._transition(ResignedState(self.epoch, self.local.node_id, now_ms + self.random_election_timeout_ms(),
                                       unacked, preferred))
