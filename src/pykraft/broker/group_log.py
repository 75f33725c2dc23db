"""The `__consumer_offsets` records of the classic group coordinator, pure: replaying a partition's log into groups
and committed offsets (a coordinator's load), and the records a coordinator writes (offsets, a generation's group
metadata). The node's GroupHost (node/hosts/group_host.py) and the simulator's (sim/hosts/group_plane.py) both use
them over their logs.
"""

from __future__ import annotations

import logging
from typing import Any

from pykraft.records import RecordsError, SimpleRecord, iter_batches
from pykraft.records.group_records import (
    GroupKey, GroupRecordError, GroupValue, MemberValue, OffsetKey, OffsetValue, decode_group_value, decode_key,
    decode_offset_value, encode_group_value, encode_key, encode_offset_value,
)

from .group_state import Group, Member, OffsetEntry

_log = logging.getLogger("pykraft.node.groups")
OFFSETS_TOPIC = "__consumer_offsets"
LOAD_SLICE_BYTES = 16 * 1024  # read and replayed per step while loading (the node yields to its loop between)


def replay_slice(log: Any, offset: int, groups: dict[str, Group]) -> int:
    """Apply the records of up to `LOAD_SLICE_BYTES` of the log from `offset`; returns the next offset."""
    info = log.read(offset, LOAD_SLICE_BYTES)
    start = offset
    for batch in iter_batches(info.records, verify_crc=False, allow_truncated_tail=True):
        if batch.is_control or batch.next_offset <= offset:
            offset = max(offset, batch.next_offset)
            continue
        try:
            records = list(batch.records())
        except RecordsError as exc:  # a batch we cannot decode: say so, keep what the others hold
            _log.error("skipping an undecodable batch of %s at offset %d: %s", OFFSETS_TOPIC, batch.base_offset, exc)
            records = []
        for r in records:
            if r.key is not None:
                apply_record(groups, bytes(r.key), None if r.value is None else bytes(r.value))
        offset = batch.next_offset
    if offset == start:  # a batch larger than the slice: FileLog.read returns it whole, so only a bug lands here
        raise AssertionError(f"no progress loading {OFFSETS_TOPIC} at offset {offset}")
    return offset


def apply_record(groups: dict[str, Group], raw_key: bytes, raw_value: bytes | None) -> None:
    """Replay one __consumer_offsets record into the groups being loaded (later records win)."""
    try:
        key = decode_key(raw_key)
        if isinstance(key, OffsetKey):
            group = groups.setdefault(key.group, Group(key.group))
            if raw_value is None:
                group.offsets.pop((key.topic, key.partition), None)
                return
            v = decode_offset_value(raw_value)
            group.offsets[(key.topic, key.partition)] = OffsetEntry(v.offset, v.leader_epoch, v.metadata,
                                                                   v.commit_timestamp_ms)
            return
        if raw_value is None:
            groups.pop(key.group, None)
            return
        restore_metadata(groups.setdefault(key.group, Group(key.group)), decode_group_value(raw_value))
    except GroupRecordError as exc:
        _log.error("skipping an unreadable %s record: %s", OFFSETS_TOPIC, exc)


def restore_metadata(group: Group, value: GroupValue) -> None:
    group.generation, group.protocol_type = value.generation, value.protocol_type or None
    group.protocol_name, group.leader = value.protocol, value.leader
    group.state_timestamp_ms = value.state_timestamp_ms
    group.members = {m.member_id: Member(
        m.member_id, m.instance_id, m.client_id, m.client_host, m.session_timeout_ms,
        m.rebalance_timeout_ms if m.rebalance_timeout_ms >= 0 else m.session_timeout_ms, value.protocol_type,
        ((value.protocol or "", m.subscription),), assignment=m.assignment) for m in value.members}


def group_value(group: Group) -> GroupValue:
    members = tuple(MemberValue(m.member_id, m.instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                                m.session_timeout_ms, m.metadata_for(group.protocol_name), m.assignment)
                    for m in group.members.values())
    return GroupValue(group.protocol_type or "", group.generation, group.protocol_name, group.leader,
                      group.state_timestamp_ms, members)


def replay_all(log: Any) -> dict[str, Group]:
    """Every group and committed offset of a partition, from its log start to its end, in one go."""
    groups: dict[str, Group] = {}
    offset = log.start_offset()
    while offset < log.end_offset():
        offset = replay_slice(log, max(offset, log.start_offset()), groups)
    return groups


def offset_records(group_id: str, offsets: dict[tuple[str, int], OffsetEntry]) -> list[SimpleRecord]:
    """An OffsetCommit's records (OffsetCommitKey -> OffsetCommitValue)."""
    return [SimpleRecord(encode_offset_value(OffsetValue(e.offset, e.leader_epoch, e.metadata, e.commit_timestamp_ms)),
                         encode_key(OffsetKey(group_id, topic, partition)))
            for (topic, partition), e in offsets.items()]


def group_record(group: Group) -> SimpleRecord:
    """A generation's group metadata (GroupMetadataKey -> GroupMetadataValue)."""
    return SimpleRecord(encode_group_value(group_value(group)), encode_key(GroupKey(group.group_id)))
