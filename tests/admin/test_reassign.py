"""The thin reassignment client (`metadata-quorum reassign`) against a fake leader that moves its voters one step
per poll: it sends the target once, reports progress, and tells done from cancelled or replaced."""

from __future__ import annotations

import asyncio

import pytest

from pykraft.admin.errors import AdminError
from pykraft.admin.model import QuorumInfo, ReplicaState
from pykraft.admin.reassign import (
    ReassignAccepted,
    ReassignDone,
    ReassignError,
    ReassignProgress,
    parse_target_ids,
    reassign,
    status,
)
from pykraft.admin.quorum_reassignments import QuorumReassignment
from pykraft.admin.responses import Outcome
from pykraft.protocol.errors import ErrorCode
from pykraft.raft.reassignment import AddVoterStep, next_step
from pykraft.raft.voter_set import ReplicaKey, VoterNode, VoterSet

from .fakes import FakeClock


def voter_set(ids) -> VoterSet:
    return VoterSet.of(VoterNode(ReplicaKey(i)) for i in ids)


class FakeLeader:
    """Duck-types the AdminClient calls the client makes; one planner step is taken per ListPartitionReassignments."""

    def __init__(self, ids, *, refuse: Outcome | None = None, lose_first: bool = False) -> None:
        self.voters, self.target = set(ids), None
        self.refuse, self.lose_first = refuse, lose_first
        self.sent: list[tuple[tuple[int, ...] | None, int]] = []
        self.replace_with: set[int] | None = None  # another operator's target, set after the first poll

    async def alter_quorum_reassignment(self, target, timeout_ms) -> Outcome:
        self.sent.append((target, timeout_ms))
        if self.refuse is not None:
            raise AdminError(self.refuse.code, self.refuse.message)
        if target is None:
            if self.target is None:
                raise AdminError(ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, "none")
            self.target = set(self.voters)
        elif self.lose_first:
            self.lose_first = False  # accepted, then lost with its leader
        else:
            self.target = set(target)
        if self.target == self.voters or (target is not None and set(target) == self.voters):
            self.target = None
            return Outcome(ErrorCode.NONE)
        return Outcome(ErrorCode.REQUEST_TIMED_OUT, "in progress")

    async def list_quorum_reassignment(self) -> QuorumReassignment | None:
        if self.target is None:
            return None
        shown = QuorumReassignment(tuple(sorted(self.voters | self.target)), tuple(sorted(self.target - self.voters)),
                                   tuple(sorted(self.voters - self.target)))
        if self.replace_with is not None:
            self.target, self.replace_with = self.replace_with, None
        step = next_step(voter_set(self.voters), voter_set(self.target), min(self.voters))
        if step is None:
            self.target = None
        elif isinstance(step, AddVoterStep):
            self.voters.add(step.node.key.id)
        else:
            self.voters.discard(step.key.id)
        return shown

    async def describe_quorum(self) -> QuorumInfo:
        return QuorumInfo(min(self.voters), 3, 100, tuple(ReplicaState(i, None, 100) for i in sorted(self.voters)),
                          (), {})


def collect(agen) -> list:
    async def go():
        return [event async for event in agen]
    return asyncio.run(go())


def test_the_target_is_sent_once_and_progress_is_reported_until_the_voters_are_it():
    leader, clock = FakeLeader([1, 2, 3]), FakeClock()
    events = collect(reassign(leader, [3, 4, 5], poll_ms=100, clock=clock, sleep=clock.sleep))
    assert events[0] == ReassignAccepted((3, 4, 5))
    assert events[-1] == ReassignDone((3, 4, 5))
    progress = [e for e in events if isinstance(e, ReassignProgress)]
    assert progress[0] == ReassignProgress((1, 2, 3), (4, 5), (1, 2))
    assert len(progress) == len(set(progress)) >= 4, "one line per change"
    assert leader.sent == [((3, 4, 5), 2000)]


def test_a_refusal_is_one_error_with_the_leaders_reason():
    leader = FakeLeader([1, 2, 3], refuse=Outcome(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "node 9 is unknown"))
    with pytest.raises(AdminError, match="node 9 is unknown"):
        collect(reassign(leader, [1, 2, 9]))


def test_the_voters_already_the_target_is_done_at_once():
    events = collect(reassign(FakeLeader([1, 2, 3]), [3, 2, 1]))
    assert events == [ReassignAccepted((3, 2, 1)), ReassignDone((1, 2, 3))]


def test_a_target_lost_with_its_leader_is_sent_again_until_seen():
    leader, clock = FakeLeader([1, 2, 3], lose_first=True), FakeClock()
    events = collect(reassign(leader, [2, 3, 4], clock=clock, sleep=clock.sleep))
    assert events[-1] == ReassignDone((2, 3, 4))
    assert [t for t, _ in leader.sent] == [(2, 3, 4), (2, 3, 4)]


def test_a_newer_target_from_someone_else_is_an_error_and_is_not_undone():
    leader, clock = FakeLeader([1, 2, 3]), FakeClock()
    leader.replace_with = {1, 2, 3, 6}
    with pytest.raises(ReassignError, match=r"cancelled or replaced.*\[1, 2, 3, 6\]"):
        collect(reassign(leader, [3, 4, 5], clock=clock, sleep=clock.sleep))
    assert len(leader.sent) == 1


def test_cancel_ends_with_the_voters_it_stood_at():
    leader, clock = FakeLeader([1, 2, 3]), FakeClock()
    leader.target = {4, 5}
    events = collect(reassign(leader, None, clock=clock, sleep=clock.sleep))
    assert events == [ReassignAccepted(None), ReassignDone((1, 2, 3))]


def test_out_of_time_says_the_leader_goes_on():
    leader, clock = FakeLeader([1, 2, 3]), FakeClock()
    with pytest.raises(ReassignError, match="leader goes on"):
        collect(reassign(leader, [4, 5, 6, 7, 8], poll_ms=1000, deadline_ms=1500, clock=clock, sleep=clock.sleep))


def test_status_reports_the_reassignment_in_progress():
    leader = FakeLeader([1, 2, 3])
    assert asyncio.run(status(leader)) is None
    leader.target = {2, 3, 4}
    assert asyncio.run(status(leader)) == ReassignProgress((1, 2, 3), (4,), (1,))


@pytest.mark.parametrize("text, expected", [
    ("3,4,5", (3, 4, 5)), (" 3 , 4 ", (3, 4)), ("3@h:9093:AAAAAAAAAAAAAAAAAAAAAQ,4", (3, 4))])
def test_target_ids_parse(text, expected):
    assert parse_target_ids(text) == expected


@pytest.mark.parametrize("text, problem", [("", "empty"), ("3,x", "invalid voter"), ("3,3", "more than once"),
                                           ("-1", "invalid voter")])
def test_bad_target_ids_are_refused(text, problem):
    with pytest.raises(ReassignError, match=problem):
        parse_target_ids(text)
