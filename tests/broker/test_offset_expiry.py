"""Committed offsets and empty groups expire by Kafka's classic-group rules (offsets.retention.minutes), and the
coordinator forgets them once their tombstones are written, unless committed again meanwhile."""

from __future__ import annotations

import struct

from pykraft.broker.group_coordinator import GroupConfig, GroupCoordinator
from pykraft.broker.group_state import Group, GroupState, Member, OffsetEntry
from pykraft.broker.offset_expiry import Expired, expired_offsets

RETENTION = 100


def subscription(*topics: str) -> bytes:
    """ConsumerProtocolSubscription v0: version, topics, user data (null)."""
    out = struct.pack(">hi", 0, len(topics))
    for topic in topics:
        out += struct.pack(">h", len(topic)) + topic.encode()
    return out + struct.pack(">i", -1)


def entry(at: int) -> OffsetEntry:
    return OffsetEntry(5, -1, "", at)


def group(protocol_type: str | None, state: GroupState, offsets: dict, stamp: int = -1,
          subscriptions: tuple[bytes, ...] = ()) -> Group:
    g = Group("g", state=state, protocol_type=protocol_type, protocol_name="range" if subscriptions else None,
              offsets=dict(offsets), state_timestamp_ms=stamp)
    for i, sub in enumerate(subscriptions):
        g.members[f"m{i}"] = Member(f"m{i}", None, "c", "h", 10_000, 10_000, protocol_type or "", (("range", sub),))
    return g


def test_a_simple_consumers_offsets_expire_from_their_commit_and_then_the_group() -> None:
    g = group(None, GroupState.EMPTY, {("a", 0): entry(0), ("a", 1): entry(50)})
    assert expired_offsets(g, 99, RETENTION) is None
    assert expired_offsets(g, 120, RETENTION) == Expired("g", (("a", 0),), False)
    assert expired_offsets(g, 150, RETENTION) == Expired("g", (("a", 0), ("a", 1)), True)


def test_an_empty_groups_offsets_expire_from_when_it_became_empty() -> None:
    g = group("consumer", GroupState.EMPTY, {("a", 0): entry(0)}, stamp=1000)
    assert expired_offsets(g, 1099, RETENTION) is None
    assert expired_offsets(g, 1100, RETENTION) == Expired("g", (("a", 0),), True)
    unknown_stamp = group("consumer", GroupState.EMPTY, {("a", 0): entry(0)})
    assert expired_offsets(unknown_stamp, 100, RETENTION) == Expired("g", (("a", 0),), True)


def test_a_stable_consumer_group_loses_only_offsets_of_topics_no_member_subscribes_to() -> None:
    g = group("consumer", GroupState.STABLE, {("a", 0): entry(0), ("b", 0): entry(0)},
              subscriptions=(subscription("a"), subscription("a", "c")))
    assert expired_offsets(g, 500, RETENTION) == Expired("g", (("b", 0),), False)
    unreadable = group("consumer", GroupState.STABLE, {("b", 0): entry(0)}, subscriptions=(b"\x00",))
    assert expired_offsets(unreadable, 500, RETENTION) is None


def test_other_groups_with_members_keep_their_offsets() -> None:
    assert expired_offsets(group("connect", GroupState.STABLE, {("b", 0): entry(0)}, subscriptions=(b"x",)),
                           10**9, RETENTION) is None
    rebalancing = group("consumer", GroupState.PREPARING_REBALANCE, {("b", 0): entry(0)},
                        subscriptions=(subscription("a"),))
    assert expired_offsets(rebalancing, 10**9, RETENTION) is None


def test_an_empty_group_without_offsets_goes_at_the_next_check() -> None:
    assert expired_offsets(group("consumer", GroupState.EMPTY, {}, stamp=5), 6, RETENTION) == Expired("g", (), True)


def test_the_coordinator_forgets_what_expired_unless_committed_again() -> None:
    coordinator = GroupCoordinator(GroupConfig(offsets_retention_ms=RETENTION))
    coordinator.offsets_committed("g", {("a", 0): entry(0), ("a", 1): entry(0)})
    (expired,) = coordinator.expiration(200)
    assert expired == Expired("g", (("a", 0), ("a", 1)), True)
    decided = dict(coordinator.groups["g"].offsets)
    coordinator.offsets_committed("g", {("a", 1): entry(190)})  # committed again while the tombstones were written
    coordinator.expiry_written(expired, decided)
    assert set(coordinator.groups["g"].offsets) == {("a", 1)}
    (expired,) = coordinator.expiration(300)
    coordinator.expiry_written(expired, dict(coordinator.groups["g"].offsets))
    assert "g" not in coordinator.groups
