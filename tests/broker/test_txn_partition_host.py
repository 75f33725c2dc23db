"""Transactions in a partition log (PartitionHost with real files, no sockets): transactional batches and markers,
the last stable offset, the `.txnindex` and its rebuild after a crash or a damaged file, read_committed Fetch."""

from __future__ import annotations

import asyncio
import struct

from pykraft.node.apis.txn_markers_api import MarkerRequest, append_marker
from pykraft.broker import txn_verification
from pykraft.protocol.errors import ErrorCode
from pykraft.records import SimpleRecord, encode_batch
from pykraft.records.crc import crc32c
from pykraft.storage.txn_index import AbortedTxn, txn_index_name

from .test_producer_snapshot_host import NOW, _crash, _log, _open


def txn_batch(producer_id: int, sequence: int, epoch: int = 0, records: int = 2) -> bytes:
    data = bytearray(encode_batch([SimpleRecord(value=b"t" * 50)] * records, base_offset=0, partition_leader_epoch=-1,
                                  timestamp_ms=NOW))
    struct.pack_into(">h", data, 21, 0x10)
    struct.pack_into(">qhi", data, 43, producer_id, epoch, sequence)
    struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
    return bytes(data)


def produce(host, producer_id: int, sequence: int, guard=txn_verification.SKIP):
    return host.append_as_leader("t", 0, txn_batch(producer_id, sequence), acks=1, verified=guard)


def marker(host, producer_id: int, commit: bool, epoch: int = 0, coordinator_epoch: int = 0):
    return append_marker(host, "t", 0, MarkerRequest(producer_id, epoch, commit, coordinator_epoch, (("t", 0),)), NOW)


def test_markers_move_the_lso_and_abort_entries_survive_a_crash(tmp_path, monkeypatch):
    async def scenario():
        host, _ = _open(tmp_path, monkeypatch)
        replica = host.replicas[("t", 0)]
        assert produce(host, 5, 0).base_offset == 0
        assert produce(host, 6, 0).base_offset == 2
        log = _log(host)
        assert replica.producers.last_stable_offset(log.high_watermark()) == 0
        assert marker(host, 5, commit=False).base_offset == 4
        assert replica.producers.last_stable_offset(log.end_offset()) == 2
        assert log.txn_index.all_entries() == [AbortedTxn(5, 0, 4, 2)]
        assert marker(host, 6, commit=True).error is ErrorCode.NONE
        assert replica.producers.last_stable_offset(log.end_offset()) == log.end_offset() == 6
        assert marker(host, 6, commit=True, coordinator_epoch=-1).error is ErrorCode.TRANSACTION_COORDINATOR_FENCED
        produce(host, 7, 0)  # left open across the crash
        _crash(host)
        (tmp_path / "b1" / "t-0" / "00000000000000000000.snapshot").unlink(missing_ok=True)
        again, _ = _open(tmp_path, monkeypatch)
        log = _log(again)
        assert log.txn_index.all_entries() == [AbortedTxn(5, 0, 4, 2)]  # rebuilt once, not twice
        assert again.replicas[("t", 0)].producers.open_transactions() == {7: 6}
        assert again.replicas[("t", 0)].producers.last_stable_offset(log.end_offset()) == 6
        again.logs.close()

    asyncio.run(scenario())


def test_a_damaged_txnindex_is_rebuilt_from_the_log(tmp_path, monkeypatch):
    async def scenario():
        host, _ = _open(tmp_path, monkeypatch)
        produce(host, 5, 0)
        marker(host, 5, commit=False)
        host.close()  # a clean stop: the snapshot at the log end would skip the replay
        path = tmp_path / "b1" / "t-0" / txn_index_name(0)
        path.write_bytes(path.read_bytes()[:-1])
        again, _ = _open(tmp_path, monkeypatch)
        assert _log(again).txn_index.all_entries() == [AbortedTxn(5, 0, 2, 3)]
        again.logs.close()

    asyncio.run(scenario())


def test_a_verified_write_is_refused_once_a_marker_intervened(tmp_path, monkeypatch):
    async def scenario():
        host, _ = _open(tmp_path, monkeypatch)
        replica = host.replicas[("t", 0)]
        assert txn_verification.needs_verification(replica, 5, 0)
        guard = txn_verification.start(replica, 5, 0)
        marker(host, 5, commit=False)  # e.g. the transaction timed out meanwhile
        assert produce(host, 5, 0, guard).error is ErrorCode.INVALID_TXN_STATE
        guard = txn_verification.start(replica, 5, 0)
        assert produce(host, 5, 0, guard).error is ErrorCode.NONE
        assert not txn_verification.needs_verification(replica, 5, 0)
        host.logs.close()

    asyncio.run(scenario())
