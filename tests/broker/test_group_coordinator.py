"""The classic group protocol, sans I/O: join/sync/heartbeat/leave, timeouts and offset-commit checks."""

from __future__ import annotations

import itertools

import pytest

from pykraft.broker.group_coordinator import GroupConfig, GroupCoordinator, JoinRequest
from pykraft.broker.group_state import GroupState, JoinReply, OffsetEntry, StoreGroup, SyncReply
from pykraft.protocol.errors import ErrorCode

SESSION = 10_000
REBALANCE = 30_000
DELAY = 3_000
GROUP = "g"


def coordinator() -> GroupCoordinator:
    ids = itertools.count(1)
    return GroupCoordinator(GroupConfig(initial_rebalance_delay_ms=DELAY), new_member_id=lambda c: f"{c}-{next(ids)}")


def join_request(member_id: str = "", client: str = "c", protocols=(("range", b"sub"),), v4: bool = False,
                 session: int = SESSION, protocol_type: str = "consumer") -> JoinRequest:
    return JoinRequest(GROUP, member_id, None, client, "/127.0.0.1", session, REBALANCE, protocol_type,
                       tuple(protocols), v4)


def joins(replies) -> dict:
    return {r.token: r for r in replies if isinstance(r, JoinReply)}


def stable_group_of_two(c: GroupCoordinator, now: int = 0):
    """Two members joined (initial delay passed), synced and stored: returns (leader, follower, generation)."""
    assert c.join(join_request(client="a"), "ja", now) == []  # parked: the initial delay
    assert c.join(join_request(client="b"), "jb", now + 10) == []
    replies = joins(c.poll(now + DELAY))
    leader, follower = replies["ja"], replies["jb"]
    assert leader.error is ErrorCode.NONE and leader.leader == leader.member_id == "a-1"
    assert [m[0] for m in leader.members] == ["a-1", "b-2"] and follower.members == ()
    assert leader.generation == follower.generation == 1
    assert c.sync(GROUP, "b-2", 1, {}, "sb", now + DELAY) == []
    stores = c.sync(GROUP, "a-1", 1, {"a-1": b"A", "b-2": b"B"}, "sa", now + DELAY)
    assert stores == [StoreGroup(GROUP, 1)]
    synced = {r.token: r for r in c.group_stored(GROUP, 1, ErrorCode.NONE, now + DELAY)}
    assert synced["sa"].assignment == b"A" and synced["sb"].assignment == b"B"
    assert c.groups[GROUP].state is GroupState.STABLE
    return "a-1", "b-2", 1


def test_two_members_join_sync_and_get_their_assignments():
    c = coordinator()
    stable_group_of_two(c)
    assert c.heartbeat(GROUP, "a-1", 1, DELAY + 1) is ErrorCode.NONE


def test_join_v4_first_answers_member_id_required_then_admits_that_id():
    c = coordinator()
    [first] = c.join(join_request(v4=True), "t1", 0)
    assert first.error is ErrorCode.MEMBER_ID_REQUIRED and first.member_id == "c-1"
    assert c.join(join_request(member_id="c-1", v4=True), "t2", 5) == []
    [reply] = c.poll(DELAY + 5)
    assert reply.token == "t2" and reply.error is ErrorCode.NONE and reply.member_id == "c-1"


def test_unknown_member_illegal_generation_and_rebalance_in_progress():
    c = coordinator()
    leader, follower, generation = stable_group_of_two(c)
    now = DELAY + 100
    assert c.heartbeat(GROUP, "nobody", generation, now) is ErrorCode.UNKNOWN_MEMBER_ID
    assert c.heartbeat(GROUP, follower, generation + 5, now) is ErrorCode.ILLEGAL_GENERATION
    [reply] = c.join(join_request(member_id="stranger"), "x", now)
    assert reply.error is ErrorCode.UNKNOWN_MEMBER_ID
    # A third member makes the group rebalance: the others learn it from their heartbeats.
    assert c.join(join_request(client="z"), "jz", now) == []
    assert c.groups[GROUP].state is GroupState.PREPARING_REBALANCE
    assert c.heartbeat(GROUP, follower, generation, now + 1) is ErrorCode.REBALANCE_IN_PROGRESS
    assert c.check_commit(GROUP, follower, generation, now + 1) is ErrorCode.NONE  # Kafka allows it while preparing
    assert c.sync(GROUP, follower, generation, {}, "s", now + 1) == [SyncReply("s", ErrorCode.REBALANCE_IN_PROGRESS)]


def test_rebalance_completes_once_every_member_rejoined_and_generation_moves():
    c = coordinator()
    leader, follower, generation = stable_group_of_two(c)
    now = DELAY + 100
    assert c.join(join_request(client="z"), "jz", now) == []
    assert c.join(join_request(member_id=leader), "ja", now + 1) == []
    replies = joins(c.join(join_request(member_id=follower), "jb", now + 2))  # the last one: done at once
    assert set(replies) == {"jz", "ja", "jb"} and {r.generation for r in replies.values()} == {generation + 1}
    assert replies["ja"].leader == leader and len(replies["ja"].members) == 3


def test_a_member_that_does_not_rejoin_is_dropped_at_the_rebalance_timeout():
    c = coordinator()
    leader, follower, generation = stable_group_of_two(c)
    now = DELAY + 100
    assert c.join(join_request(member_id=leader, protocols=(("range", b"new"),)), "ja", now) == []
    replies = joins(c.poll(now + REBALANCE))
    assert replies["ja"].generation == generation + 1 and [m[0] for m in replies["ja"].members] == [leader]
    assert follower not in c.groups[GROUP].members


def test_session_expiry_removes_a_silent_member_and_rebalances_the_rest():
    c = coordinator()
    leader, follower, generation = stable_group_of_two(c)
    t = DELAY
    for step in range(1, 4):  # the leader heartbeats, the follower does not
        assert c.heartbeat(GROUP, leader, generation, t + step * 4000) is ErrorCode.NONE
    c.poll(t + SESSION + 1)
    assert follower not in c.groups[GROUP].members
    assert c.groups[GROUP].state is GroupState.PREPARING_REBALANCE
    assert c.next_deadline() is not None


def test_leave_group_rebalances_and_the_last_leave_empties_the_group():
    c = coordinator()
    leader, follower, generation = stable_group_of_two(c)
    errors, _ = c.leave(GROUP, [(follower, None), ("ghost", None)], DELAY + 10)
    assert errors == [ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID]
    assert c.groups[GROUP].state is GroupState.PREPARING_REBALANCE
    errors, replies = c.leave(GROUP, [(leader, None)], DELAY + 20)
    assert errors == [ErrorCode.NONE] and replies == [StoreGroup(GROUP, generation + 1)]
    assert c.groups[GROUP].state is GroupState.EMPTY


def test_inconsistent_protocols_and_bad_session_timeout_are_refused():
    c = coordinator()
    stable_group_of_two(c)
    [reply] = c.join(join_request(client="q", protocols=(("other", b""),)), "q", DELAY + 1)
    assert reply.error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    [reply] = c.join(join_request(client="q", session=10), "q", DELAY + 1)
    assert reply.error is ErrorCode.INVALID_SESSION_TIMEOUT
    [reply] = c.join(JoinRequest("", "", None, "c", "h", SESSION, REBALANCE, "consumer", (("range", b""),), False),
                     "q", 0)
    assert reply.error is ErrorCode.INVALID_GROUP_ID


def test_a_failed_group_write_fails_the_syncs_and_rebalances():
    c = coordinator()
    c.join(join_request(client="a"), "ja", 0)
    c.poll(DELAY)
    assert c.sync(GROUP, "a-1", 1, {"a-1": b"A"}, "sa", DELAY) == [StoreGroup(GROUP, 1)]
    replies = c.group_stored(GROUP, 1, ErrorCode.NOT_COORDINATOR, DELAY + 1)
    assert SyncReply("sa", ErrorCode.NOT_COORDINATOR) in replies
    assert c.groups[GROUP].state is GroupState.PREPARING_REBALANCE


def test_commits_checked_against_membership_and_a_simple_consumer_commits_to_an_empty_group():
    c = coordinator()
    assert c.check_commit("solo", "", -1, 0) is ErrorCode.NONE
    c.offsets_committed("solo", {("t", 0): OffsetEntry(5, -1, "", 0)})
    assert c.groups["solo"].offsets[("t", 0)].offset == 5
    leader, _, generation = stable_group_of_two(c)
    assert c.check_commit(GROUP, "", -1, DELAY) is ErrorCode.UNKNOWN_MEMBER_ID
    assert c.check_commit("new-group", "m", 3, DELAY) is ErrorCode.ILLEGAL_GENERATION
    assert c.check_commit(GROUP, leader, generation, DELAY) is ErrorCode.NONE
    assert c.check_commit(GROUP, leader, generation - 1, DELAY) is ErrorCode.ILLEGAL_GENERATION
    assert c.check_commit(GROUP, "ghost", generation, DELAY) is ErrorCode.UNKNOWN_MEMBER_ID


def test_unload_answers_parked_requests_not_coordinator():
    c = coordinator()
    c.join(join_request(client="a"), "ja", 0)
    assert c.unload() == [JoinReply("ja", ErrorCode.NOT_COORDINATOR, "a-1")]
    assert c.groups == {}


@pytest.mark.parametrize("votes,expected", [((("range", "rr"), ("rr", "range")), "range"),
                                            ((("rr", "range"), ("rr",)), "rr")])
def test_protocol_selection_by_vote_among_common_protocols(votes, expected):
    c = coordinator()
    for i, prefs in enumerate(votes):
        c.join(join_request(client=f"m{i}", protocols=tuple((p, b"") for p in prefs)), f"j{i}", 0)
    replies = joins(c.poll(DELAY))
    assert {r.protocol_name for r in replies.values()} == {expected}


def test_a_repeated_join_answers_the_earlier_parked_one():
    c = coordinator()
    assert c.join(join_request(client="a"), "first", 0) == []
    replies = c.join(join_request(member_id="a-1"), "second", 10)
    assert replies == [JoinReply("first", ErrorCode.REBALANCE_IN_PROGRESS, "a-1")]
    assert [r.token for r in c.poll(DELAY)] == ["second"]


def static_request(member_id: str = "", instance: str = "inst", client: str = "s") -> JoinRequest:
    return JoinRequest(GROUP, member_id, instance, client, "/h", SESSION, REBALANCE, "consumer",
                       (("range", b"sub"),), True)


def test_a_restarted_static_member_takes_its_place_without_a_rebalance_and_the_old_id_is_fenced():
    c = coordinator()
    assert c.join(static_request(), "j1", 0) == []  # a static member needs no MEMBER_ID_REQUIRED round
    [joined] = c.poll(DELAY)
    old_id = joined.member_id
    c.sync(GROUP, old_id, 1, {old_id: b"A"}, "s1", DELAY)
    c.group_stored(GROUP, 1, ErrorCode.NONE, DELAY)
    replies = c.join(static_request(), "j2", DELAY + 5)  # the same instance, restarted: no member id
    [again] = [r for r in replies if isinstance(r, JoinReply)]
    assert again.error is ErrorCode.NONE and again.member_id != old_id and again.generation == 1
    assert again.leader == again.member_id  # it was the leader: its new id leads
    assert c.groups[GROUP].state is GroupState.STABLE and c.groups[GROUP].members[again.member_id].assignment == b"A"
    assert c.fenced(GROUP, old_id, "inst") and not c.fenced(GROUP, again.member_id, "inst")
    [fenced] = c.join(static_request(member_id=old_id), "j3", DELAY + 6)
    assert fenced.error is ErrorCode.FENCED_INSTANCE_ID
    errors, _ = c.leave(GROUP, [(old_id, "inst")], DELAY + 7)
    assert errors == [ErrorCode.FENCED_INSTANCE_ID]
    errors, _ = c.leave(GROUP, [("", "inst")], DELAY + 8)  # by instance id alone
    assert errors == [ErrorCode.NONE] and c.groups[GROUP].state is GroupState.EMPTY
