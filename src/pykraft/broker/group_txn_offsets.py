"""Offsets committed in transactions, the `__consumer_offsets` side (TxnOffsetCommit, KIP-98/KIP-447): how the
group coordinator writes them (a transactional batch of the producer: Kafka writes TxnOffsetCommit's records so) and
how a load replays them (pending until the producer's COMMIT marker, dropped at its ABORT), over
broker/txn_offsets.py's pure bookkeeping.
"""

from __future__ import annotations

import logging
import struct
from typing import Any

from pykraft.records import RecordsError, SimpleRecord, encode_batch
from pykraft.records.batch import ATTR_TRANSACTIONAL
from pykraft.records.crc import crc32c
from pykraft.records.group_records import GroupRecordError, OffsetKey, decode_key, decode_offset_value
from pykraft.records.txn_markers import decode_txn_marker

from .group_state import Group, OffsetEntry
from .txn_offsets import PendingTxnOffsets

_log = logging.getLogger("pykraft.node.groups")
OFFSETS_TOPIC = "__consumer_offsets"


def replay_marker(batch: Any, groups: dict[str, Group], pending: PendingTxnOffsets) -> None:
    try:
        commit = decode_txn_marker(batch).commit
    except RecordsError as exc:
        _log.error("skipping an unreadable marker of %s at offset %d: %s", OFFSETS_TOPIC, batch.base_offset, exc)
        return
    for group_id, offsets in pending.complete(batch.producer_id, commit).items():
        groups.setdefault(group_id, Group(group_id)).offsets.update(offsets)


def replay_txn_offsets(batch: Any, pending: PendingTxnOffsets) -> None:
    try:
        for r in batch.records():
            key = decode_key(bytes(r.key)) if r.key is not None else None
            if isinstance(key, OffsetKey) and r.value is not None:
                v = decode_offset_value(bytes(r.value))
                pending.add(batch.producer_id, key.group, {(key.topic, key.partition): OffsetEntry(
                    v.offset, v.leader_epoch, v.metadata, v.commit_timestamp_ms)})
    except (RecordsError, GroupRecordError) as exc:
        _log.error("skipping transactional offsets of %s at offset %d: %s", OFFSETS_TOPIC, batch.base_offset, exc)


def encode_txn_batch(records: list[SimpleRecord], producer_id: int, epoch: int, sequence: int, now_ms: int) -> bytes:
    """A transactional batch of the producer (Kafka writes TxnOffsetCommit's records so)."""
    batch = bytearray(encode_batch(records, base_offset=0, partition_leader_epoch=0, timestamp_ms=now_ms))
    struct.pack_into(">h", batch, 21, ATTR_TRANSACTIONAL)
    struct.pack_into(">qhi", batch, 43, producer_id, epoch, sequence)
    struct.pack_into(">I", batch, 17, crc32c(memoryview(batch)[21:]))
    return bytes(batch)
