"""The log cleaner with transactions (cleaner_txns.py wired into cleaner.py): an aborted transaction's batches go
whatever their keys, its ABORT marker stays (with its .txnindex entry) until they are gone and then until its delete
horizon; a committed transaction's records compact like any others."""

from __future__ import annotations

import struct

from pykraft.records import SimpleRecord, encode_batch
from pykraft.records.crc import crc32c
from pykraft.records.txn_markers import encode_txn_marker_batch
from pykraft.storage.cleaner_manager import CleanerManager, CompactionSettings
from pykraft.storage.txn_index import AbortedTxn

from .cleaner_helpers import batches, new_log, put, records, run_pass

SETTINGS = CompactionSettings(min_cleanable_ratio=0.0, segment_bytes=1200, delete_retention_ms=5000)


def txn_put(log, producer_id: int, sequence: int, key: str, value: str) -> int:
    offset = log.end_offset()
    data = bytearray(encode_batch([SimpleRecord(value.encode(), key.encode(), timestamp_ms=1000)],
                                  base_offset=offset, partition_leader_epoch=1, timestamp_ms=1000))
    struct.pack_into(">h", data, 21, 0x10)
    struct.pack_into(">qhi", data, 43, producer_id, 0, sequence)
    struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
    log.append_as_follower(bytes(data), 1)
    return offset


def marker(log, producer_id: int, commit: bool) -> int:
    offset = log.end_offset()
    log.append_as_follower(encode_txn_marker_batch(producer_id, 0, 0, commit, timestamp_ms=1000, base_offset=offset,
                                                   partition_leader_epoch=1), 1)
    return offset


def test_aborted_batches_go_and_their_marker_waits(tmp_path):
    log = new_log(str(tmp_path))
    put(log, "k1", "plain")
    first = txn_put(log, 7, 0, "k2", "aborted-a")
    txn_put(log, 8, 0, "k3", "committed")
    txn_put(log, 7, 1, "k4", "aborted-b")
    abort_at = marker(log, 7, commit=False)
    commit_at = marker(log, 8, commit=True)
    log.txn_index.append(log.active_segment_base(), AbortedTxn(7, first, abort_at, abort_at + 1))
    put(log, "k9", "after")
    log.roll()
    log.update_high_watermark(log.end_offset())
    task, _, _ = run_pass(CleanerManager([str(tmp_path)]), log, 10_000, settings=SETTINGS)
    assert task.aborted == (AbortedTxn(7, first, abort_at, abort_at + 1),)
    values = [v for _, _, v in records(log)]
    assert "aborted-a" not in values and "aborted-b" not in values
    assert {"plain", "committed", "after"} <= set(values)
    controls = [b.base_offset for b in batches(log) if b.is_control]
    assert abort_at in controls and commit_at in controls  # batches of both transactions were in this pass
    assert log.txn_index.all_entries() == [AbortedTxn(7, first, abort_at, abort_at + 1)]  # the cleaned segment's
    # The next passes (new dirty data makes them due): no batch of the aborted transaction is left, so its marker
    # may go: the first of them sets its delete horizon, a pass after it removes it. The committed transaction's
    # marker stays while its batch (k3, still the latest of its key) does.
    for now in (20_000, 40_000):
        put(log, "k9", f"again-{now}")
        log.roll()
        log.update_high_watermark(log.end_offset())
        assert run_pass(CleanerManager([str(tmp_path)]), log, now, settings=SETTINGS) is not None
        if now == 20_000:
            assert [b.base_offset for b in batches(log) if b.is_control] == [abort_at, commit_at]
    assert [b.base_offset for b in batches(log) if b.is_control and b.record_count] == [commit_at]
    assert log.txn_index.all_entries() == []
    log.close()
