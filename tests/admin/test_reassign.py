"""The reassignment driver against a fake quorum that applies voter changes, sometimes late or in doubt."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

import pytest

from pykraft.admin.errors import AdminError, OutcomeUnknownError
from pykraft.admin.model import QuorumInfo, ReplicaState
from pykraft.admin.reassign import (
    ReassignDone,
    ReassignError,
    StepCommitted,
    StepStarted,
    cancel,
    drive,
    parse_target_voters,
    reassign,
)
from pykraft.protocol.errors import ErrorCode
from pykraft.raft.reassignment import AddVoterStep, RemoveVoterStep, ResignLeaderStep
from pykraft.raft.voter_set import Endpoint, ReplicaKey
from pykraft.records.uuids import uuid_to_kafka_str

from .fakes import FakeClock

DIRS = {i: uuid.UUID(int=0xA00 + i) for i in range(1, 8)}


def key(i: int) -> ReplicaKey:
    return ReplicaKey(i, DIRS[i])


def target(*ids: int) -> str:
    return ",".join(f"{i}@h{i}:{9090 + i}:{uuid_to_kafka_str(DIRS[i])}" for i in ids)


class FakeQuorum:
    """Duck-types the AdminClient methods the driver uses. A change becomes visible `lag` describes later."""

    def __init__(self, ids, leader: int, lag: int = 0) -> None:
        self.voters = {key(i) for i in ids}
        self.leader = leader
        self.lag = lag
        self.calls: list[tuple[str, ReplicaKey]] = []
        self.pending: list[tuple[int, set]] = []
        self.describes = 0
        self.in_doubt: set[str] = set()  # ops that raise OutcomeUnknownError after applying
        self.fail: dict[str, Exception] = {}  # ops that raise without applying

    async def describe_quorum(self) -> QuorumInfo:
        self.describes += 1
        while self.pending and self.pending[0][0] <= self.describes:
            self.voters = self.pending.pop(0)[1]
        voters = tuple(ReplicaState(k.id, k.directory_id, 100) for k in sorted(self.voters))
        nodes = {k.id: (Endpoint("CONTROLLER", f"h{k.id}", 9090 + k.id),) for k in self.voters}
        return QuorumInfo(self.leader, 3, 100, voters, (), nodes)

    def _change(self, op: str, new: set) -> None:
        if op in self.fail:
            raise self.fail.pop(op)
        self.pending.append((self.describes + 1 + self.lag, new))
        if op in self.in_doubt:
            self.in_doubt.discard(op)
            raise OutcomeUnknownError(f"{op}", "timed out")

    async def add_voter(self, voter_id, directory_id, endpoints) -> None:
        self.calls.append(("add", ReplicaKey(voter_id, directory_id)))
        assert [e.name for e in endpoints.items] == ["CONTROLLER"]
        self._change("add", self.voters | {ReplicaKey(voter_id, directory_id)})

    async def remove_voter(self, voter_id, directory_id) -> None:
        removed = ReplicaKey(voter_id, directory_id)
        self.calls.append(("remove", removed))
        new = self.voters - {removed}
        self._change("remove", new)
        if voter_id == self.leader:  # the leader commits its own removal, then a remaining voter takes over
            self.leader = min(k.id for k in new)


def collect(agen) -> list:
    async def go():
        return [event async for event in agen]
    return asyncio.run(go())


def test_each_planned_step_is_sent_once_and_waited_for():
    quorum, clock = FakeQuorum([1, 2, 3], leader=1, lag=2), FakeClock()
    events = collect(drive(quorum, parse_target_voters(target(1, 2, 4)), poll_ms=200, clock=clock, sleep=clock.sleep))
    assert quorum.calls == [("add", key(4)), ("remove", key(3))]
    assert [type(e) for e in events] == [StepStarted, StepCommitted, StepStarted, StepCommitted, ReassignDone]
    assert isinstance(events[0].step, AddVoterStep) and isinstance(events[2].step, RemoveVoterStep)
    assert events[1].voters == {key(1), key(2), key(3), key(4)}
    assert events[-1].voters == {key(1), key(2), key(4)}
    assert clock.sleeps == [0.2] * 4  # lag 2: two polls too early per step, then the change shows


def test_removing_the_leader_is_a_remove_of_its_own_key():
    quorum, clock = FakeQuorum([1, 2, 3], leader=1), FakeClock()
    events = collect(drive(quorum, parse_target_voters(target(2, 3, 4)), clock=clock, sleep=clock.sleep))
    assert quorum.calls == [("add", key(4)), ("remove", key(1))]
    assert isinstance(events[2].step, ResignLeaderStep)
    assert quorum.leader == 2


def test_a_step_in_doubt_that_lands_is_not_sent_again():
    quorum, clock = FakeQuorum([1, 2, 3], leader=1), FakeClock()
    quorum.in_doubt.add("add")
    events = collect(drive(quorum, parse_target_voters(target(1, 2, 3, 4)), clock=clock, sleep=clock.sleep))
    assert quorum.calls == [("add", key(4))]
    assert events[1].unknown_outcome == "timed out"
    assert isinstance(events[-1], ReassignDone)


def test_a_step_that_never_shows_up_stops_the_driver():
    quorum, clock = FakeQuorum([1, 2, 3], leader=1, lag=1000), FakeClock()
    with pytest.raises(ReassignError, match="did not become the expected one within 1000 ms"):
        collect(drive(quorum, parse_target_voters(target(1, 2)), commit_timeout_ms=1000, poll_ms=300,
                      clock=clock, sleep=clock.sleep))
    assert quorum.calls == [("remove", key(3))]


def test_replacing_the_only_voters_disk_is_blocked():
    quorum = FakeQuorum([1], leader=1)
    other_dir = f"1@h1:9091:{uuid_to_kafka_str(uuid.UUID(int=0xFFFF))}"
    with pytest.raises(ReassignError, match="last voter"):
        collect(drive(quorum, parse_target_voters(other_dir)))
    assert quorum.calls == []


def test_reassign_records_the_start_and_cancel_rolls_back(tmp_path: Path):
    state = tmp_path / "state.json"
    quorum, clock = FakeQuorum([1, 2, 3], leader=1), FakeClock()
    quorum.fail["remove"] = AdminError(ErrorCode.REQUEST_TIMED_OUT, "gave up")
    with pytest.raises(AdminError):
        collect(reassign(quorum, parse_target_voters(target(1, 2, 4)), state, clock=clock, sleep=clock.sleep))
    assert quorum.voters == {key(1), key(2), key(3), key(4)}  # stopped half-way
    recorded = json.loads(state.read_text())
    assert [v["id"] for v in recorded["original"]] == [1, 2, 3]
    assert recorded["original"][2]["endpoints"] == [["CONTROLLER", "h3", 9093]]

    # another target is refused while the file exists
    with pytest.raises(ReassignError, match="another target"):
        collect(reassign(quorum, parse_target_voters(target(1, 5)), state))

    events = collect(cancel(quorum, state, clock=clock, sleep=clock.sleep))
    assert quorum.calls[-1] == ("remove", key(4))
    assert events[-1].voters == {key(1), key(2), key(3)}
    assert not state.exists()
    with pytest.raises(ReassignError, match="no reassignment is recorded"):
        collect(cancel(quorum, state))


def test_rerunning_the_same_target_resumes_and_deletes_the_state(tmp_path: Path):
    state = tmp_path / "state.json"
    quorum, clock = FakeQuorum([1, 2, 3], leader=1), FakeClock()
    quorum.fail["remove"] = AdminError(ErrorCode.REQUEST_TIMED_OUT, "gave up")
    with pytest.raises(AdminError):
        collect(reassign(quorum, parse_target_voters(target(1, 2, 4)), state, clock=clock, sleep=clock.sleep))
    collect(reassign(quorum, parse_target_voters(target(1, 2, 4)), state, clock=clock, sleep=clock.sleep))
    assert quorum.calls == [("add", key(4)), ("remove", key(3)), ("remove", key(3))]
    assert quorum.voters == {key(1), key(2), key(4)}
    assert not state.exists()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        ("1@h:9093", "expected ID@HOST:PORT:DIRECTORY_ID"),
        ("x@h:9093:AAAAAAAAAAAAAAAAAAAAAQ", "expected ID@HOST:PORT:DIRECTORY_ID"),
        ("1@h:port:AAAAAAAAAAAAAAAAAAAAAQ", "expected ID@HOST:PORT:DIRECTORY_ID"),
        ("1@h:9093:not-a-uuid", "not a Kafka uuid"),
        ("1@h:9093:AAAAAAAAAAAAAAAAAAAAAQ,1@g:9093:AAAAAAAAAAAAAAAAAAAAAg", "more than once"),
    ],
)
def test_bad_target_voters(text, message):
    with pytest.raises(ReassignError, match=message):
        parse_target_voters(text)


def test_target_voters_accept_ipv6_and_the_listener_name():
    voters = parse_target_voters("3@[::1]:9093:AAAAAAAAAAAAAAAAAAAAAQ", listener_name="CTRL")
    assert voters.voters[3].endpoints.items == (Endpoint("CTRL", "::1", 9093),)
    assert voters.voters[3].key == ReplicaKey(3, uuid.UUID(int=1))
