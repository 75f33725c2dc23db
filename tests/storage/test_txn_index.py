"""The `.txnindex` files (Kafka's TransactionIndex): entries, collect, truncation, damage."""

from __future__ import annotations

import os
import struct

from pykraft.storage.txn_index import ENTRY_SIZE, AbortedTxn, TxnIndexFiles, txn_index_name


def test_entries_are_kafkas_34_bytes_and_collect_overlaps(tmp_path):
    index = TxnIndexFiles(str(tmp_path))
    index.append(0, AbortedTxn(1, 5, 9, 10))
    index.append(100, AbortedTxn(2, 95, 120, 121))
    index.append(100, AbortedTxn(3, 130, 140, 141))
    raw = (tmp_path / txn_index_name(100)).read_bytes()
    assert len(raw) == 2 * ENTRY_SIZE and raw[:ENTRY_SIZE] == struct.pack(">hqqqq", 0, 2, 95, 120, 121)
    assert index.collect(0, 8) == [AbortedTxn(1, 5, 9, 10)]
    assert index.collect(10, 100) == [AbortedTxn(2, 95, 120, 121)]
    assert index.collect(121, 200) == [AbortedTxn(3, 130, 140, 141)]
    again = TxnIndexFiles(str(tmp_path))
    assert again.all_entries() == index.all_entries() and again.damaged_from is None


def test_truncation_and_segment_deletion(tmp_path):
    index = TxnIndexFiles(str(tmp_path))
    index.append(0, AbortedTxn(1, 5, 9, 10))
    index.append(100, AbortedTxn(2, 95, 120, 121))
    index.truncate_to(120)
    assert index.all_entries() == [AbortedTxn(1, 5, 9, 10)]
    assert not (tmp_path / txn_index_name(100)).exists()
    index.retain_segments([100])
    assert index.all_entries() == [] and not os.listdir(tmp_path)


def test_a_damaged_file_is_deleted_and_named(tmp_path):
    (tmp_path / txn_index_name(200)).write_bytes(b"\x00" * 33)
    (tmp_path / txn_index_name(50)).write_bytes(struct.pack(">hqqqq", 0, 1, 1, 2, 3))
    index = TxnIndexFiles(str(tmp_path))
    assert index.damaged_from == 200 and not (tmp_path / txn_index_name(200)).exists()
    assert index.all_entries() == [AbortedTxn(1, 1, 2, 3)]
