"""The online migration of non-empty groups (broker/group_migration.py, broker/consumer_classic.py), pure: Kafka
4.x's upgrade of a classic group when a consumer-protocol member joins, its classic members kept as consumer group
members that rejoin to reconcile, and the downgrade when the last consumer-protocol member leaves.

`World` holds one classic coordinator and one consumer coordinator, as a broker's group host does for one
`__consumer_offsets` partition, with explicit time; classic members send real consumer-protocol subscriptions.
"""

from __future__ import annotations

import uuid

import pytest

from pykraft.broker import consumer_classic
from pykraft.broker.consumer_coordinator import ConsumerCoordinator, ConsumerGroupConfig, HeartbeatRequest, TopicImage
from pykraft.broker.consumer_group import MemberState
from pykraft.broker.group_coordinator import GroupConfig, GroupCoordinator, JoinRequest
from pykraft.broker.group_migration import (
    MigrationPolicy, MigrationRefused, check_upgrade, downgrade_allowed, parse_policy,
)
from pykraft.broker.group_state import GroupState, JoinReply, StoreGroup, SyncReply
from pykraft.protocol.errors import ErrorCode
from pykraft.records import consumer_group_records as rec
from pykraft.records.consumer_protocol import decode_assignment, encode_assignment, encode_subscription
from pykraft.records.group_records import GroupKey, GroupValue

T = uuid.UUID(int=1)
G = "g"


class World:
    def __init__(self, policy: MigrationPolicy = MigrationPolicy.BIDIRECTIONAL, **config) -> None:
        ids = iter(f"c{i}" for i in range(1000))
        self.classic = GroupCoordinator(GroupConfig(), lambda client: f"{client}-id")
        self.consumer = ConsumerCoordinator(ConsumerGroupConfig(migration_policy=policy, **config), lambda: next(ids))
        self.image = TopicImage({"t": (T, 6)}, version=1)
        self.now = 0
        self.records: list = []

    def classic_group(self, *clients: str) -> None:
        """A Stable classic group of these members, assigned by range (member order) at generation 1."""
        for client in clients:  # JoinGroup v4+: the member id first, then the join, parked for the initial delay
            self.classic.join(self.join_request(client, ""), client, self.now)
            self.classic.join(self.join_request(client, f"{client}-id"), client, self.now)
        self.classic.poll(self.now + 3000)
        assignment = {"a-id": [("t", 0), ("t", 1), ("t", 2)], "b-id": [("t", 3), ("t", 4), ("t", 5)]}
        for client in clients:
            out = self.classic.sync(G, f"{client}-id", 1, {m: encode_assignment(p) for m, p in assignment.items()}
                                    if client == clients[0] else {}, client, self.now)
            for reply in out:
                if isinstance(reply, StoreGroup):
                    self.classic.group_stored(G, 1, ErrorCode.NONE, self.now)
        assert self.classic.groups[G].state is GroupState.STABLE

    def join_request(self, client: str, member_id: str, owned=()) -> JoinRequest:
        return JoinRequest(G, member_id, None, client, "/h", 10000, 20000, "consumer",
                           (("range", encode_subscription(["t"], owned)),), True)

    def upgrade_with(self, member: str):
        """Kafka's order: the conversion, then the joining member's heartbeat."""
        self.consumer.upgrade(self.classic.groups[G], self.image, self.now)
        result = self.hb(member, 0)
        self.classic.release(G)
        return result

    def hb(self, member: str, epoch: int, owned=None):
        fields = {}
        if epoch == 0:
            fields = {"rebalance_timeout_ms": 30000, "subscribed_topic_names": ("t",)}
            owned = {} if owned is None else owned
        result = self.consumer.heartbeat(HeartbeatRequest(G, member, epoch, owned=owned, **fields), self.image,
                                         self.now)
        self.records += result.records
        return result

    def cjoin(self, client: str, member_id: str, owned=()) -> JoinReply:
        reply, records = consumer_classic.join(self.consumer, self.group, self.join_request(client, member_id, owned),
                                               self.image, self.now)
        self.records += records
        return reply

    def csync(self, member_id: str, generation: int) -> SyncReply:
        return consumer_classic.sync(self.consumer, self.group, member_id, None, generation, "consumer", "range",
                                     self.image, self.now)

    def cbeat(self, member_id: str, generation: int) -> ErrorCode:
        return consumer_classic.heartbeat(self.consumer, self.group, member_id, None, generation, self.now)

    @property
    def group(self):
        return self.consumer.groups[G]


def partitions(*numbers: int):
    return {T: frozenset(numbers)} if numbers else {}


def test_the_policy_parses_case_insensitively_and_says_what_it_allows():
    assert parse_policy("BIDIRECTIONAL") is MigrationPolicy.BIDIRECTIONAL
    assert parse_policy(" Upgrade ") is MigrationPolicy.UPGRADE
    assert MigrationPolicy.UPGRADE.upgrade_enabled and not MigrationPolicy.UPGRADE.downgrade_enabled
    assert MigrationPolicy.DOWNGRADE.downgrade_enabled and not MigrationPolicy.DOWNGRADE.upgrade_enabled
    assert not MigrationPolicy.DISABLED.upgrade_enabled and not MigrationPolicy.DISABLED.downgrade_enabled
    with pytest.raises(ValueError, match="group.consumer.migration.policy"):
        parse_policy("sideways")


@pytest.mark.parametrize("policy,max_size,protocol_type,refusal", [
    (MigrationPolicy.DISABLED, 10, "consumer", "online upgrade is disabled"),
    (MigrationPolicy.DOWNGRADE, 10, "consumer", "online upgrade is disabled"),
    (MigrationPolicy.UPGRADE, 10, "connect", "does not use the consumer embedded protocol"),
    (MigrationPolicy.BIDIRECTIONAL, 1, "consumer", "exceeds the consumer group maximum size"),
    (MigrationPolicy.UPGRADE, 2, "consumer", None),
])
def test_the_upgrade_is_validated_as_kafka_does(policy, max_size, protocol_type, refusal):
    w = World()
    w.classic_group("a", "b")
    w.classic.groups[G].protocol_type = protocol_type
    if refusal is None:
        check_upgrade(w.classic.groups[G], policy, max_size)
        return
    with pytest.raises(MigrationRefused, match=refusal):
        check_upgrade(w.classic.groups[G], policy, max_size)


def test_the_upgrade_writes_kafkas_records_and_keeps_the_classic_assignment_as_target():
    w = World()
    w.classic_group("a", "b")
    w.consumer.upgrade(w.classic.groups[G], w.image, w.now)
    written = w.consumer._take()
    kinds = [(key.type, key.sub) for key, _ in written]
    assert kinds == [(rec.MEMBER_METADATA, "a-id"), (rec.MEMBER_METADATA, "b-id"), (rec.METADATA, None),
                     (rec.TARGET_MEMBER, "a-id"), (rec.TARGET_MEMBER, "b-id"), (rec.TARGET_METADATA, None),
                     (rec.CURRENT_ASSIGNMENT, "a-id"), (rec.CURRENT_ASSIGNMENT, "b-id")]
    values = dict(((key.type, key.sub), value) for key, value in written)
    a_meta = values[(rec.MEMBER_METADATA, "a-id")]
    assert a_meta.classic == rec.ClassicProtocols(10000, (("range", encode_subscription(["t"])),))
    assert a_meta.subscribed_topic_names == ("t",) and a_meta.rebalance_timeout_ms == 20000
    assert values[(rec.METADATA, None)] == rec.GroupEpochValue(1)
    assert values[(rec.TARGET_MEMBER, "b-id")].partitions == partitions(3, 4, 5)
    assert values[(rec.CURRENT_ASSIGNMENT, "a-id")] == rec.CurrentAssignmentValue(1, 1, 0, partitions(0, 1, 2), {})
    assert w.group.state().value == "Stable" and w.group.members["a-id"].uses_classic


def test_a_consumer_member_joining_bumps_the_epoch_and_classic_members_rejoin_to_reconcile():
    w = World()
    w.classic_group("a", "b")
    joined = w.upgrade_with("java")
    assert joined.error is ErrorCode.NONE and joined.member_epoch == 2
    assert G not in w.classic.groups and w.group.group_epoch == 2
    target = {m: w.group.target[m] for m in ("a-id", "b-id", "java")}
    assert sorted(len(p[T]) for p in target.values()) == [2, 2, 2]
    assert joined.assignment == {}  # everything is still owned by the classic members
    # The classic members learn of it from their heartbeat, rejoin (eager: owning nothing) and get their target.
    assert w.cbeat("a-id", 1) is ErrorCode.REBALANCE_IN_PROGRESS
    assert w.cbeat("a-id", 2) is ErrorCode.ILLEGAL_GENERATION
    rejoined = w.cjoin("a", "a-id")
    assert (rejoined.error, rejoined.generation, rejoined.leader, rejoined.protocol_name) == (
        ErrorCode.NONE, 2, "", "range")
    synced = w.csync("a-id", 2)
    assert synced.error is ErrorCode.NONE
    assert decode_assignment(synced.assignment) == sorted(("t", n) for n in target["a-id"][T])
    assert w.cbeat("a-id", 2) is ErrorCode.NONE
    w.cjoin("b", "b-id")
    # The Java member takes what the classic members released.
    again = w.hb("java", 2, owned={})
    assert again.assignment == target["java"]
    assert w.group.members["java"].state is MemberState.STABLE and w.group.state().value == "Stable"


def test_a_classic_member_waiting_for_partitions_is_told_to_rejoin_once_they_are_free():
    w = World()
    w.classic_group("a", "b")
    w.upgrade_with("java")
    w.cjoin("a", "a-id")
    w.cjoin("b", "b-id")
    java = w.hb("java", 2, owned={}).assignment
    assert w.group.state().value == "Stable"
    first = w.cjoin("c", "")
    assert first.error is ErrorCode.MEMBER_ID_REQUIRED and first.member_id not in w.group.members
    joined = w.cjoin("c", first.member_id)
    c = w.group.members[joined.member_id]
    assert (joined.error, joined.generation) == (ErrorCode.NONE, 3) and c.uses_classic
    assert c.state is MemberState.UNRELEASED_PARTITIONS and c.assigned == {}
    assert consumer_classic.waiting_on_unreleased(w.group, c)
    assert w.cbeat(c.member_id, 3) is ErrorCode.NONE  # nothing to do until the owners let go
    for client in ("a", "b"):  # the classic owners rejoin (owning nothing, eager) ...
        assert w.cbeat(f"{client}-id", 2) is ErrorCode.REBALANCE_IN_PROGRESS
        w.cjoin(client, f"{client}-id")
    epoch = 2
    for _ in range(3):  # ... and the Java member revokes what it must, then acknowledges
        answer = w.hb("java", epoch, owned=java)
        epoch, java = answer.member_epoch, answer.assignment if answer.assignment is not None else java
    assert w.cbeat(c.member_id, 3) is ErrorCode.REBALANCE_IN_PROGRESS
    w.cjoin("c", c.member_id)
    synced = w.csync(c.member_id, 3)
    assert decode_assignment(synced.assignment) == sorted(("t", n) for n in w.group.target[c.member_id][T])
    assert w.group.state().value == "Stable"


def test_the_last_consumer_member_leaving_downgrades_the_group_with_kafkas_records():
    w = World()
    w.classic_group("a", "b")
    w.upgrade_with("java")
    w.hb("java", 2, owned={})
    w.records.clear()
    epoch = w.group.group_epoch
    left = w.hb("java", -1)
    assert left.error is ErrorCode.NONE
    kinds = [(key.type if not isinstance(key, GroupKey) else "GroupMetadata", getattr(key, "sub", None))
             for key, _ in left.records]
    assert kinds == [(rec.CURRENT_ASSIGNMENT, "a-id"), (rec.CURRENT_ASSIGNMENT, "b-id"),
                     (rec.CURRENT_ASSIGNMENT, "java"), (rec.TARGET_MEMBER, "a-id"), (rec.TARGET_MEMBER, "b-id"),
                     (rec.TARGET_MEMBER, "java"), (rec.TARGET_METADATA, None), (rec.MEMBER_METADATA, "a-id"),
                     (rec.MEMBER_METADATA, "b-id"), (rec.MEMBER_METADATA, "java"), (rec.PARTITION_METADATA, None),
                     (rec.METADATA, None), ("GroupMetadata", None)]
    assert all(value is None for _, value in left.records[:-1])
    value = left.records[-1][1]
    assert isinstance(value, GroupValue) and value.generation == epoch and value.protocol_type == "consumer"
    assert [m.member_id for m in value.members] == ["a-id", "b-id"] and value.leader == "a-id"
    assert G not in w.consumer.groups and not w.consumer.session_deadlines
    ((classic, _),) = w.consumer.take_downgrades()
    replies = w.classic.adopt(classic, w.now)
    assert replies == [] and w.classic.groups[G].state is GroupState.PREPARING_REBALANCE
    assert w.classic.heartbeat(G, "a-id", epoch, w.now) is ErrorCode.REBALANCE_IN_PROGRESS


def test_the_downgrade_hands_each_classic_member_its_target_in_its_protocol_version():
    w = World()
    w.classic_group("a", "b")
    w.upgrade_with("java")
    targets = {m: sorted(("t", n) for n in w.group.target[m][T]) for m in ("a-id", "b-id")}
    w.hb("java", -1)
    ((classic, _),) = w.consumer.take_downgrades()
    assert {m: decode_assignment(x.assignment) for m, x in classic.members.items()} == targets
    assert classic.offsets == {} and classic.protocol_name == "range"


@pytest.mark.parametrize("policy", [MigrationPolicy.UPGRADE, MigrationPolicy.DISABLED])
def test_no_downgrade_when_the_policy_forbids_it(policy):
    w = World(policy=MigrationPolicy.BIDIRECTIONAL)
    w.classic_group("a", "b")
    w.upgrade_with("java")
    w.consumer.config = ConsumerGroupConfig(migration_policy=policy)
    w.hb("java", -1)
    assert w.consumer.take_downgrades() == [] and set(w.group.members) == {"a-id", "b-id"}


def test_no_downgrade_while_another_consumer_member_remains_or_when_a_classic_member_leaves():
    w = World()
    w.classic_group("a", "b")
    w.upgrade_with("java")
    w.hb("java2", 0)
    group = w.group
    assert not downgrade_allowed(group, {"java"}, MigrationPolicy.BIDIRECTIONAL)
    assert downgrade_allowed(group, {"java", "java2"}, MigrationPolicy.BIDIRECTIONAL)
    assert not downgrade_allowed(group, {"a-id"}, MigrationPolicy.BIDIRECTIONAL)
    errors, records = consumer_classic.leave(w.consumer, group, [("a-id", None), ("java", None), ("nobody", None)])
    assert errors == [ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.UNKNOWN_MEMBER_ID]
    assert [key.type for key, _ in records][-1] == rec.METADATA  # one epoch bump for the leave
    assert set(w.group.members) == {"b-id", "java", "java2"}


def test_a_classic_member_that_does_not_rejoin_within_its_rebalance_timeout_is_fenced():
    w = World()
    w.classic_group("a", "b")
    w.upgrade_with("java")
    assert w.cbeat("a-id", 1) is ErrorCode.REBALANCE_IN_PROGRESS  # its join timer starts: 20 s
    for w.now in (9_000, 18_000):  # both keep their sessions (10 s) alive; b's join timer starts at 9 s
        assert w.cbeat("a-id", 1) is w.cbeat("b-id", 1) is ErrorCode.REBALANCE_IN_PROGRESS
    w.now = 19_999
    w.consumer.poll(w.now)
    assert "a-id" in w.group.members
    w.now = 20_000
    w.consumer.poll(w.now)
    assert "a-id" not in w.group.members and "b-id" in w.group.members


def test_a_classic_member_that_does_not_sync_is_fenced_and_one_that_stops_heartbeating_too():
    w = World()
    w.classic_group("a", "b")
    w.upgrade_with("java")
    w.cjoin("a", "a-id")
    w.now = 9_999
    w.cbeat("a-id", w.group.members["a-id"].member_epoch)
    w.consumer.poll(w.now)
    assert "b-id" in w.group.members  # its classic session (10 s) has not run out yet
    w.now = 10_000
    w.consumer.poll(w.now)
    assert "b-id" not in w.group.members  # no heartbeat for 10 s
    w.now = 20_000
    w.consumer.poll(w.now)
    assert "a-id" not in w.group.members  # joined at 0 with a 20 s rebalance timeout and never synced


def test_classic_requests_from_unknown_or_consumer_protocol_members_and_wrong_protocols():
    w = World()
    w.classic_group("a", "b")
    w.upgrade_with("java")
    assert w.cbeat("java", 2) is ErrorCode.UNKNOWN_MEMBER_ID  # it speaks the consumer protocol
    assert w.csync("nobody", 1).error is ErrorCode.UNKNOWN_MEMBER_ID
    wrong = consumer_classic.sync(w.consumer, w.group, "a-id", None, 1, "consumer", "roundrobin", w.image, w.now)
    assert wrong.error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert w.csync("a-id", 1).error is ErrorCode.REBALANCE_IN_PROGRESS  # the group epoch moved on
    other = JoinRequest(G, "x", None, "x", "/h", 10000, 20000, "consumer", (("roundrobin", b"\0\0"),), True)
    reply, records = consumer_classic.join(w.consumer, w.group, other, w.image, w.now)
    assert reply.error is ErrorCode.INCONSISTENT_GROUP_PROTOCOL and records == ()


def test_offset_commits_check_a_classic_members_generation():
    w = World()
    w.classic_group("a", "b")
    w.upgrade_with("java")
    assert w.consumer.check_commit(G, "a-id", 1, 8) is ErrorCode.NONE  # any version for a classic member
    assert w.consumer.check_commit(G, "a-id", 2, 8) is ErrorCode.ILLEGAL_GENERATION
    assert w.consumer.check_commit(G, "java", 1, 9) is ErrorCode.STALE_MEMBER_EPOCH
    assert w.consumer.check_commit(G, "java", 2, 8) is ErrorCode.UNSUPPORTED_VERSION


def test_the_converted_group_loads_back_as_it_was_built():
    w = World()
    w.classic_group("a", "b")
    w.consumer.upgrade(w.classic.groups[G], w.image, w.now)
    records = list(w.consumer._take())
    w.hb("java", 0)
    loaded = ConsumerCoordinator(ConsumerGroupConfig())
    for key, value in records + w.records:
        loaded.replay(key, value)
    assert loaded.groups[G].members == w.group.members and loaded.groups[G].target == w.group.target
    loaded.loaded(0)
    assert loaded.session_deadlines[(G, "a-id")] == 10000  # a classic member keeps its classic session timeout


def test_a_classic_static_member_replacing_the_last_consumer_member_downgrades_without_a_rebalance():
    w = World()
    w.classic_group("a", "b")
    w.consumer.upgrade(w.classic.groups[G], w.image, w.now)
    static = HeartbeatRequest(G, "java", 0, instance_id="i1", rebalance_timeout_ms=30000,
                              subscribed_topic_names=("t",), owned={})
    assert w.consumer.heartbeat(static, w.image, w.now).error is ErrorCode.NONE
    w.classic.release(G)
    java_target = w.group.target["java"]
    epoch = w.group.group_epoch
    request = JoinRequest(G, "", "i1", "i1-client", "/h", 10000, 20000, "consumer",
                          (("range", encode_subscription(["t"])),), True)
    reply, records = consumer_classic.join(w.consumer, w.group, request, w.image, w.now)
    assert reply.error is ErrorCode.NONE and reply.generation == epoch and reply.member_id != "java"
    assert G not in w.consumer.groups
    assert isinstance(records[-1][0], GroupKey) and records[-1][1].generation == epoch
    tombstoned = {key.sub for key, value in records[:-1] if value is None and key.type == rec.MEMBER_METADATA}
    assert tombstoned == {"java", "a-id", "b-id", reply.member_id}  # the replaced one, then all under their ids
    ((classic, rebalance),) = w.consumer.take_downgrades()
    assert not rebalance and set(classic.members) == {"a-id", "b-id", reply.member_id}
    assert decode_assignment(classic.members[reply.member_id].assignment) == sorted(("t", n) for n in java_target[T])
    w.classic.adopt(classic, w.now, rebalance)
    assert w.classic.groups[G].state is GroupState.STABLE
    synced = w.classic.sync(G, reply.member_id, epoch, {}, "tok", w.now)
    assert decode_assignment(synced[0].assignment) == sorted(("t", n) for n in java_target[T])


def test_no_downgrade_when_a_classic_static_member_replaces_a_classic_one():
    w = World()
    w.classic_group("a", "b")
    w.upgrade_with("java")
    first = JoinRequest(G, "", "i2", "c", "/h", 10000, 20000, "consumer", (("range", encode_subscription(["t"])),),
                        True)
    joined, _ = consumer_classic.join(w.consumer, w.group, first, w.image, w.now)
    again, _ = consumer_classic.join(w.consumer, w.group, first, w.image, w.now)  # restarted: replaces itself
    assert again.error is ErrorCode.NONE and again.member_id != joined.member_id
    assert w.consumer.take_downgrades() == [] and "java" in w.group.members
