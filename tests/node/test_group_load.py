"""Rebuilding groups from `__consumer_offsets` records (what a new coordinator does on becoming leader)."""

from __future__ import annotations

from pykraft.broker.group_state import Group
from pykraft.node.hosts.group_host import _apply_record, _group_value
from pykraft.records.group_records import (
    GroupKey, GroupValue, MemberValue, OffsetKey, OffsetValue, encode_group_value, encode_key, encode_offset_value,
)


def replay(records) -> dict[str, Group]:
    groups: dict[str, Group] = {}
    for key, value in records:
        _apply_record(groups, key, value)
    return groups


def offset(group: str, partition: int, value: int):
    return encode_key(OffsetKey(group, "t", partition)), encode_offset_value(OffsetValue(value, 1, "", 0))


def test_later_offsets_win_tombstones_delete_and_group_metadata_comes_back():
    member = MemberValue("m1", None, "client", "/h", 30000, 10000, b"sub", b"asg")
    metadata = GroupValue("consumer", 7, "range", "m1", 5, (member,))
    groups = replay([offset("g", 0, 10), offset("g", 1, 3), offset("g", 0, 12),
                     (encode_key(OffsetKey("g", "t", 1)), None),
                     (encode_key(GroupKey("g")), encode_group_value(metadata)),
                     offset("gone", 0, 1), (encode_key(GroupKey("gone")), None)])
    assert set(groups) == {"g"}
    group = groups["g"]
    assert {k: v.offset for k, v in group.offsets.items()} == {("t", 0): 12}
    assert group.generation == 7 and group.leader == "m1" and group.protocol_name == "range"
    assert group.members["m1"].assignment == b"asg" and group.members["m1"].metadata_for("range") == b"sub"
    assert _group_value(group).members == (member,)  # what is written again is what was read


def test_an_unreadable_record_is_skipped_not_fatal():
    groups = replay([(b"\x00\x09garbage", b""), offset("g", 0, 4), (encode_key(OffsetKey("g", "t", 1)), b"\x00")])
    assert {k: v.offset for k, v in groups["g"].offsets.items()} == {("t", 0): 4}
