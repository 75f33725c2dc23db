"""The `__consumer_offsets` records of the classic group coordinator, pure: replaying a partition's log into groups
and committed offsets (a coordinator's load), and the records a coordinator writes (offsets, a generation's group
metadata). Offsets committed in transactions wait for their marker (group_txn_offsets.py), and KIP-848's
records go to the consumer group coordinator. The node's GroupHost (node/hosts/group_host.py) and the simulator's (sim/hosts/group_plane.py) both use
them over their logs.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from pykraft.records import RecordsError, SimpleRecord, iter_batches
from pykraft.records import consumer_group_records as cg_records
from pykraft.records.group_records import (
    GroupKey, GroupRecordError, GroupValue, MemberValue, OffsetKey, OffsetValue, decode_group_value, decode_key,
    decode_offset_value, encode_group_value, encode_key, encode_offset_value,
)

from .group_state import Group, Member, OffsetEntry
from .group_txn_offsets import replay_marker, replay_txn_offsets
from .txn_offsets import PendingTxnOffsets

if TYPE_CHECKING:
    from .consumer_coordinator import ConsumerCoordinator

_log = logging.getLogger("pykraft.node.groups")
OFFSETS_TOPIC = "__consumer_offsets"
LOAD_SLICE_BYTES = 16 * 1024  # read and replayed per step while loading (the node yields to its loop between)


def replay_slice(log: Any, offset: int, groups: dict[str, Group], pending: PendingTxnOffsets,
                 consumers: ConsumerCoordinator | None = None) -> int:
    """Apply the records of up to `LOAD_SLICE_BYTES` of the log from `offset`; returns the next offset.
    Offsets in a transactional batch wait in `pending` for their transaction's marker; KIP-848 records go to
    `consumers`."""
    info = log.read(offset, LOAD_SLICE_BYTES)
    start = offset
    for batch in iter_batches(info.records, verify_crc=False, allow_truncated_tail=True):
        if batch.next_offset <= offset:
            continue
        if batch.is_control:
            if batch.is_transactional:
                replay_marker(batch, groups, pending)
            offset = max(offset, batch.next_offset)
            continue
        if batch.is_transactional:
            replay_txn_offsets(batch, pending)
            offset = batch.next_offset
            continue
        try:
            records = list(batch.records())
        except RecordsError as exc:  # a batch we cannot decode: say so, keep what the others hold
            _log.error("skipping an undecodable batch of %s at offset %d: %s", OFFSETS_TOPIC, batch.base_offset, exc)
            records = []
        for r in records:
            if r.key is not None:
                apply_record(groups, bytes(r.key), None if r.value is None else bytes(r.value), consumers)
        offset = batch.next_offset
    if offset == start:  # a batch larger than the slice: FileLog.read returns it whole, so only a bug lands here
        raise AssertionError(f"no progress loading {OFFSETS_TOPIC} at offset {offset}")
    return offset


def apply_record(groups: dict[str, Group], raw_key: bytes, raw_value: bytes | None,
                 consumers: ConsumerCoordinator | None = None) -> None:
    """Replay one __consumer_offsets record into the groups being loaded (later records win)."""
    try:
        kind = cg_records.key_type(raw_key)
        if kind in cg_records.CONSUMER_GROUP_KEY_TYPES:
            key_cg = cg_records.decode_key(raw_key)
            value = None if raw_value is None else cg_records.decode_value(kind, raw_value)
            if consumers is not None:
                consumers.replay(key_cg, value)
            return
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
            gone = groups.pop(key.group, None)
            if gone is not None and gone.offsets and consumers is not None:
                # Maybe converted to a consumer group (its offsets stay): kept aside for it (adopt_offsets).
                consumers.orphan_offsets[key.group] = gone.offsets
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
    """Every group and committed offset of a partition, from its log start to its end, in one go (offsets of
    transactions left open at the end are not committed, so not there)."""
    groups: dict[str, Group] = {}
    pending = PendingTxnOffsets()
    offset = log.start_offset()
    while offset < log.end_offset():
        offset = replay_slice(log, max(offset, log.start_offset()), groups, pending)
    return groups


def offset_records(group_id: str, offsets: dict[tuple[str, int], OffsetEntry]) -> list[SimpleRecord]:
    """An OffsetCommit's records (OffsetCommitKey -> OffsetCommitValue)."""
    return [SimpleRecord(encode_offset_value(OffsetValue(e.offset, e.leader_epoch, e.metadata, e.commit_timestamp_ms)),
                         encode_key(OffsetKey(group_id, topic, partition)))
            for (topic, partition), e in offsets.items()]


def group_record(group: Group) -> SimpleRecord:
    """A generation's group metadata (GroupMetadataKey -> GroupMetadataValue)."""
    return SimpleRecord(encode_group_value(group_value(group)), encode_key(GroupKey(group.group_id)))
