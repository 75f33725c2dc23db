"""The KIP-848 coordinator (broker/consumer_coordinator.py), pure: Kafka 4.x's rules, one behaviour per test.

A `Group` drives one coordinator with explicit time and a topic image; members report what they own as a real
consumer does (what their last answer assigned, minus what they revoked).
"""

from __future__ import annotations

import uuid

import pytest

from pykraft.broker.consumer_coordinator import (
    REGEX_REFRESH_MS, ConsumerCoordinator, ConsumerGroupConfig, HeartbeatRequest, TopicImage,
)
from pykraft.broker.consumer_group import ConsumerGroupState, MemberState
from pykraft.protocol.errors import ErrorCode
from pykraft.records import consumer_group_records as rec

T = uuid.UUID(int=1)
U = uuid.UUID(int=2)


class Group:
    def __init__(self, topics=None, **config) -> None:
        ids = iter(f"m{i}" for i in range(1000))
        self.c = ConsumerCoordinator(ConsumerGroupConfig(**config), lambda: next(ids))
        self.image = TopicImage(topics or {"t": (T, 6)}, version=1)
        self.now = 0
        self.records: list = []

    def hb(self, member: str, epoch: int, owned=None, **fields):
        if epoch == 0:
            fields.setdefault("rebalance_timeout_ms", 30000)
            fields.setdefault("subscribed_topic_names", ("t",) if "subscribed_topic_regex" not in fields else None)
            owned = {} if owned is None else owned
        result = self.c.heartbeat(HeartbeatRequest("g", member, epoch, owned=owned, **fields), self.image, self.now)
        self.records += result.records
        return result

    def join(self, **fields):
        return self.hb("", 0, **fields)

    def member(self, member_id: str):
        return self.c.groups["g"].members[member_id]

    def state(self) -> ConsumerGroupState:
        return self.c.groups["g"].state()


def owned(*numbers: int, topic=T):
    return {topic: frozenset(numbers)} if numbers else {}


def test_the_first_member_gets_every_partition_at_epoch_1():
    g = Group()
    r = g.join()
    assert (r.error, r.member_id, r.member_epoch) == (ErrorCode.NONE, "m0", 1)
    assert r.assignment == owned(0, 1, 2, 3, 4, 5) and r.heartbeat_interval_ms == 5000
    assert g.state() is ConsumerGroupState.STABLE
    kinds = [key.type for key, _ in r.records]  # Kafka's order: member, subscription metadata, epoch, target, current
    assert kinds == [rec.MEMBER_METADATA, rec.PARTITION_METADATA, rec.METADATA, rec.TARGET_MEMBER,
                     rec.TARGET_METADATA, rec.CURRENT_ASSIGNMENT]


def test_revoke_before_assign_and_the_epoch_moves_only_once_the_member_acknowledged():
    g = Group()
    g.join()
    second = g.join()
    assert (second.member_epoch, second.assignment) == (2, {})  # its partitions are still m0's
    assert g.member("m1").state is MemberState.UNRELEASED_PARTITIONS and g.state() is ConsumerGroupState.RECONCILING
    first = g.hb("m0", 1, owned(0, 1, 2, 3, 4, 5))
    assert first.member_epoch == 1 and first.assignment == owned(0, 1, 2)  # revoke 3-5 first, same epoch
    assert g.member("m0").pending_revocation == owned(3, 4, 5)
    assert g.hb("m1", 2, {}).assignment is None  # still owned by m0: nothing yet
    still = g.hb("m0", 1, owned(0, 1, 2, 3, 4, 5))  # it has not revoked yet: no progress
    assert still.member_epoch == 1 and g.member("m0").state is MemberState.UNREVOKED_PARTITIONS
    acked = g.hb("m0", 1, owned(0, 1, 2))
    assert acked.member_epoch == 2 and g.member("m0").state is MemberState.STABLE
    given = g.hb("m1", 2, {})
    assert given.assignment == owned(3, 4, 5) and g.state() is ConsumerGroupState.STABLE


def test_a_lost_answer_is_tolerated_a_member_ahead_is_fenced():
    g = Group()
    g.join()
    g.join()
    g.hb("m0", 1, owned(0, 1, 2, 3, 4, 5))
    g.hb("m0", 1, owned(0, 1, 2))  # epoch 2 in an answer the member never got
    again = g.hb("m0", 1, owned(0, 1, 2))  # previous epoch, owning a subset of its assignment: accepted
    assert (again.error, again.member_epoch) == (ErrorCode.NONE, 2)
    assert g.hb("m0", 1, owned(0, 1, 2, 3)).error is ErrorCode.FENCED_MEMBER_EPOCH  # more than it may own
    assert g.hb("m0", 9, owned(0, 1, 2)).error is ErrorCode.FENCED_MEMBER_EPOCH  # ahead of the coordinator
    assert g.hb("nobody", 3, {}).error is ErrorCode.UNKNOWN_MEMBER_ID


def test_leaving_bumps_the_epoch_and_the_rest_take_the_partitions():
    g = Group()
    g.join()
    g.join()
    g.hb("m0", 1, owned(0, 1, 2, 3, 4, 5))
    g.hb("m0", 1, owned(0, 1, 2))
    g.hb("m1", 2, {})
    left = g.hb("m1", -1)
    assert (left.error, left.member_epoch) == (ErrorCode.NONE, -1)
    assert "m1" not in g.c.groups["g"].members and g.c.groups["g"].group_epoch == 3
    assert [key.type for key, value in left.records if value is None] == [
        rec.CURRENT_ASSIGNMENT, rec.TARGET_MEMBER, rec.MEMBER_METADATA]
    assert g.hb("m0", 2, owned(0, 1, 2)).assignment == owned(0, 1, 2, 3, 4, 5)


def test_a_session_that_expires_fences_the_member():
    g = Group(session_timeout_ms=45000)
    g.join()
    g.now = 1000
    g.join()
    assert g.c.next_deadline() == 45000
    g.now = 45000
    records = g.c.poll(g.now)
    assert "m0" not in g.c.groups["g"].members and any(v is None for _, v in records)
    g.now = 45001
    assert g.hb("m1", 2, {}).assignment == owned(0, 1, 2, 3, 4, 5)


def test_a_member_that_does_not_revoke_within_its_rebalance_timeout_is_fenced():
    g = Group()
    g.join(rebalance_timeout_ms=10000)
    g.join()
    g.now = 100
    g.hb("m0", 1, owned(0, 1, 2, 3, 4, 5))  # told to revoke: its rebalance timeout starts
    g.now = 10099
    assert g.c.poll(g.now) == ()
    g.now = 10100
    g.c.poll(g.now)
    assert "m0" not in g.c.groups["g"].members


def test_a_static_member_keeps_its_partitions_while_it_restarts():
    g = Group()
    g.join(instance_id="i-1")
    g.join(instance_id="i-2")
    g.hb("m0", 1, owned(0, 1, 2, 3, 4, 5))
    g.hb("m0", 1, owned(0, 1, 2))
    g.hb("m1", 2, {})
    assert g.hb("m0", -2, instance_id="i-1").member_epoch == -2  # leaves for a restart
    assert g.member("m0").assigned == owned(0, 1, 2) and g.c.groups["g"].group_epoch == 2  # no rebalance
    assert g.hb("other", 0, instance_id="i-2").error is ErrorCode.UNRELEASED_INSTANCE_ID
    back = g.hb("m9", 0, instance_id="i-1")
    assert (back.error, back.member_id, back.assignment) == (ErrorCode.NONE, "m9", owned(0, 1, 2))
    assert "m0" not in g.c.groups["g"].members and g.c.groups["g"].group_epoch == 2
    assert g.hb("m0", 2, {}, instance_id="i-1").error is ErrorCode.FENCED_INSTANCE_ID
    assert g.hb("m5", 2, {}, instance_id="i-7").error is ErrorCode.UNKNOWN_MEMBER_ID


def test_requests_kafka_refuses():
    g = Group(max_size=1, assignors=("uniform", "range"))
    cases = [
        (dict(member="", epoch=0, rebalance_timeout_ms=-1), ErrorCode.INVALID_REQUEST,
         "RebalanceTimeoutMs must be provided in first request."),
        (dict(member="", epoch=0, subscribed_topic_names=()), ErrorCode.INVALID_REQUEST,
         "SubscribedTopicNames must be set in first request."),
        (dict(member="", epoch=0, owned=owned(1)), ErrorCode.INVALID_REQUEST,
         "TopicPartitions must be empty when (re-)joining."),
        (dict(member="", epoch=3), ErrorCode.INVALID_REQUEST, "MemberId can't be empty."),
        (dict(member="x", epoch=-3), ErrorCode.INVALID_REQUEST, "MemberEpoch is invalid."),
        (dict(member="x", epoch=-2), ErrorCode.INVALID_REQUEST, "InstanceId can't be null."),
        (dict(member="", epoch=0, server_assignor="sticky"), ErrorCode.UNSUPPORTED_ASSIGNOR,
         "ServerAssignor sticky is not supported. Supported assignors: uniform, range."),
        (dict(member="x", epoch=0, subscribed_topic_regex="t-[", version=1), ErrorCode.INVALID_REGULAR_EXPRESSION,
         None),
        (dict(member="", epoch=0, version=1), ErrorCode.INVALID_REQUEST, "MemberId can't be empty."),
    ]
    for fields, error, message in cases:
        fields = dict(fields)
        result = g.hb(fields.pop("member"), fields.pop("epoch"), fields.pop("owned", None), **fields)
        assert result.error is error, fields
        assert message is None or result.message == message
    assert g.hb("nobody", 1, {}).error is ErrorCode.GROUP_ID_NOT_FOUND
    assert g.join().error is ErrorCode.NONE
    full = g.join()
    assert (full.error, full.message) == (ErrorCode.GROUP_MAX_SIZE_REACHED,
                                          "The consumer group has reached its maximum capacity of 1 members.")
    assert len(g.c.groups["g"].members) == 1


def test_a_regex_is_resolved_on_the_coordinator_and_picks_up_new_topics():
    g = Group(topics={"t-a": (T, 2), "other": (U, 2)})
    r = g.hb("m-1", 0, subscribed_topic_regex="t-.*", version=1)
    assert r.assignment == owned(0, 1)
    assert g.c.groups["g"].resolved_regexes["t-.*"].topics == ("t-a",)
    new = uuid.UUID(int=3)
    g.image = TopicImage({"t-a": (T, 2), "other": (U, 2), "t-b": (new, 1)}, version=2)
    g.c.metadata_changed(g.image)
    g.now = REGEX_REFRESH_MS - 1
    assert g.hb("m-1", 1, owned(0, 1)).assignment is None  # resolved less than the refresh interval ago
    g.now = REGEX_REFRESH_MS
    picked = g.hb("m-1", 1, owned(0, 1))
    assert picked.assignment == {T: frozenset({0, 1}), new: frozenset({0})} and picked.member_epoch == 2
    regex_records = [(k.sub, v) for k, v in picked.records if k.type == rec.REGULAR_EXPRESSION]
    assert regex_records == [("t-.*", rec.RegexValue(("t-a", "t-b"), 2, REGEX_REFRESH_MS))]
    left = g.hb("m-1", -1)  # the last member using the regex: its resolution is tombstoned
    assert (rec.ConsumerGroupKey(rec.REGULAR_EXPRESSION, "g", "t-.*"), None) in left.records


def test_a_regex_resolves_only_over_the_topics_the_heartbeats_principal_may_describe():
    g = Group(topics={"t-a": (T, 2), "t-secret": (U, 2)})
    r = g.hb("m-1", 0, subscribed_topic_regex="t-.*", version=1, topic_visible=lambda name: name != "t-secret")
    assert r.assignment == owned(0, 1)
    assert g.c.groups["g"].resolved_regexes["t-.*"].topics == ("t-a",)
    everyone = Group(topics={"t-a": (T, 2), "t-secret": (U, 2)})
    assert everyone.hb("m-1", 0, subscribed_topic_regex="t-.*", version=1).assignment == {
        T: frozenset({0, 1}), U: frozenset({0, 1})}


def test_new_partitions_and_deleted_topics_bump_the_group_epoch():
    g = Group(topics={"t": (T, 2), "u": (U, 2)})
    g.join(subscribed_topic_names=("t", "u"))
    g.image = TopicImage({"t": (T, 4), "u": (U, 2)}, version=2)
    g.c.metadata_changed(g.image)
    grown = g.hb("m0", 1, {T: frozenset({0, 1}), U: frozenset({0, 1})})
    assert grown.member_epoch == 2 and grown.assignment == {T: frozenset({0, 1, 2, 3}), U: frozenset({0, 1})}
    g.image = TopicImage({"t": (T, 4)}, version=3)
    g.c.metadata_changed(g.image)
    shrunk = g.hb("m0", 2, {T: frozenset({0, 1, 2, 3}), U: frozenset({0, 1})})
    assert shrunk.assignment == {T: frozenset({0, 1, 2, 3})} and g.member("m0").pending_revocation == {
        U: frozenset({0, 1})}


def test_the_server_assignor_members_ask_for():
    g = Group()
    g.join(server_assignor="range")
    g.join(server_assignor="range")
    g.hb("m0", 1, owned(0, 1, 2, 3, 4, 5))
    g.hb("m0", 1, owned(0, 1, 2))
    assert g.c.preferred_assignor(g.c.groups["g"]) == "range"
    assert g.c.groups["g"].target == {"m0": owned(0, 1, 2), "m1": owned(3, 4, 5)}


def test_offset_commits_and_fetches_carry_the_member_epoch():
    g = Group()
    g.join()
    assert g.c.check_commit("g", "m0", 1, 9) is ErrorCode.NONE
    assert g.c.check_commit("g", "m0", 0, 9) is ErrorCode.STALE_MEMBER_EPOCH
    assert g.c.check_commit("g", "m0", 1, 8) is ErrorCode.UNSUPPORTED_VERSION
    assert g.c.check_commit("g", "zz", 1, 9) is ErrorCode.UNKNOWN_MEMBER_ID
    assert g.c.check_commit("g", "", -1, 9) is ErrorCode.UNKNOWN_MEMBER_ID  # admin commits: empty groups only
    assert g.c.check_fetch("g", None, -1) is ErrorCode.NONE
    assert g.c.check_fetch("g", "m0", 0) is ErrorCode.STALE_MEMBER_EPOCH
    g.hb("m0", -1)
    assert g.c.check_commit("g", "", -1, 9) is ErrorCode.NONE
    assert g.c.delete_group("g")[0] is ErrorCode.NONE and "g" not in g.c.groups


def test_replaying_the_records_rebuilds_the_same_group():
    """What a new coordinator loads from __consumer_offsets is the state the old one had."""
    g = Group()
    g.join()
    g.join(instance_id="static")
    g.hb("m0", 1, owned(0, 1, 2, 3, 4, 5))
    loaded = ConsumerCoordinator(ConsumerGroupConfig())
    for key, value in g.records:
        loaded.replay(rec.decode_key(rec.encode_key(key)),
                      None if value is None else rec.decode_value(key.type, rec.encode_value(value)))
    before, after = g.c.groups["g"], loaded.groups["g"]
    assert after.members == before.members and after.target == before.target
    assert (after.group_epoch, after.assignment_epoch, after.partition_owners) == (
        before.group_epoch, before.assignment_epoch, before.partition_owners)
    loaded.loaded(500)
    assert loaded.session_deadlines == {("g", "m0"): 45500, ("g", "m1"): 45500}
    assert ("g", "m0") in loaded.rebalance_deadlines  # m0 was revoking


@pytest.mark.parametrize("members", [1, 2, 3, 4, 7])
def test_members_joining_one_at_a_time_converge_to_a_balanced_disjoint_assignment(members):
    g = Group()
    owned_by: dict[str, dict] = {}
    epochs: dict[str, int] = {}
    for _ in range(members):
        r = g.join()
        owned_by[r.member_id], epochs[r.member_id] = r.assignment or {}, r.member_epoch
    for _ in range(10):  # a few rounds of heartbeats, every member acking what it was told
        for member_id in list(owned_by):
            r = g.hb(member_id, epochs[member_id], owned_by[member_id])
            assert r.error is ErrorCode.NONE
            epochs[member_id] = r.member_epoch
            if r.assignment is not None:
                owned_by[member_id] = r.assignment
    counts = sorted(len(a.get(T, ())) for a in owned_by.values())
    assert sum(counts) == 6 and counts[-1] - counts[0] <= 1
    assert len(set().union(*(a.get(T, frozenset()) for a in owned_by.values()))) == 6
    assert g.state() is ConsumerGroupState.STABLE


def test_offsets_expire_unless_subscribed_and_an_empty_group_goes_with_them():
    from pykraft.broker.group_state import OffsetEntry
    from pykraft.broker.offset_expiry import expired_consumer_offsets
    g = Group(topics={"t": (T, 1), "u": (U, 1)})
    g.join()
    group = g.c.groups["g"]
    group.offsets.update({("t", 0): OffsetEntry(5, 1, "", 0), ("u", 0): OffsetEntry(7, 1, "", 0),
                          ("u", 1): OffsetEntry(8, 1, "", 900)})
    assert expired_consumer_offsets(group, 999, 1000) is None
    expired = expired_consumer_offsets(group, 1000, 1000)  # "t" is subscribed: kept; "u" 0 is old enough
    assert (expired.partitions, expired.group_too) == ((("u", 0),), False)
    g.hb("m0", -1)
    gone = expired_consumer_offsets(group, 1900, 1000)  # empty now: every offset is eligible
    assert (gone.partitions, gone.group_too) == ((("t", 0), ("u", 0), ("u", 1)), True)
