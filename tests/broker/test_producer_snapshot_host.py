"""Producer snapshots on a broker (node/hosts/producer_recovery.py with PartitionHost): restart, retention, corruption,
truncation. Real logs in tmp_path, no sockets; a "crash" closes the logs without the shutdown snapshot."""

from __future__ import annotations

import asyncio
import logging
import os
import struct

import pytest

from pykraft.broker.isr_manager import IsrManager, IsrManagerConfig
from pykraft.broker.metadata_cache import MetadataCache
from pykraft.broker.topic_settings import TopicSettings
from pykraft.node.hosts import partitions as partitions_module
from pykraft.node.hosts.partitions import DataPlaneSettings, PartitionHost
from pykraft.node.hosts.producer_recovery import open_producer_state
from pykraft.protocol.errors import ErrorCode
from pykraft.records import SimpleRecord, encode_batch
from pykraft.records.crc import crc32c

from .records import partition, register, topic

NOW = 1_000
SEGMENT_BYTES = 1000  # about five 170-byte batches per segment


def _open(tmp_path, monkeypatch, **settings) -> tuple[PartitionHost, list[int]]:
    """A broker (id 1) leading t-0 alone, opened as at start-up; returns the batch-header counts its producer
    state loads read."""
    reads: list[int] = []
    monkeypatch.setattr(partitions_module, "open_producer_state",
                        lambda replica: reads.append(open_producer_state(replica)))
    cache = MetadataCache()
    cache.replay_all(enumerate([register(1, 11), topic("t"), partition(0, [1], [1], 1)]))
    isr_manager = IsrManager(IsrManagerConfig(1), cache)
    isr_manager.sync_metadata(NOW)
    host = PartitionHost(DataPlaneSettings(1, TopicSettings(segment_bytes=SEGMENT_BYTES, **settings)), cache, None,
                         report_progress=lambda p: isr_manager.update_progress(p, NOW),
                         high_watermark_of=isr_manager.high_watermark, now_ms=lambda: NOW)
    from pykraft.storage import PartitionLogs

    host.logs = PartitionLogs((str(tmp_path / "b1"),), host.log_config_for)
    host.load()
    host.sync_metadata(NOW)
    return host, reads


def _batch(producer_id: int, sequence: int, epoch: int = 0) -> bytes:
    data = bytearray(encode_batch([SimpleRecord(value=b"v" * 100)], base_offset=0, partition_leader_epoch=-1,
                                  timestamp_ms=NOW + sequence))
    struct.pack_into(">qhi", data, 43, producer_id, epoch, sequence)
    struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
    return bytes(data)


def _produce(host: PartitionHost, producer_id: int, sequence: int):
    return host.append_as_leader("t", 0, _batch(producer_id, sequence), acks=1)


def _crash(host: PartitionHost) -> None:
    """Stop without the clean-shutdown snapshot (the logs are flushed: only the producer snapshot is missing)."""
    host.logs.close()


def _log(host: PartitionHost):
    return host.replicas[("t", 0)].log


def test_a_restart_reads_only_the_batches_after_the_latest_snapshot(tmp_path, monkeypatch) -> None:
    async def scenario() -> None:
        host, reads = _open(tmp_path, monkeypatch)
        assert reads == [0]
        for seq in range(60):
            assert _produce(host, 7, seq).error is ErrorCode.NONE
        log = _log(host)
        bases = log.segment_base_offsets()
        assert len(bases) >= 10
        assert log.producer_snapshots.offsets == bases[1:]  # one snapshot per roll, at the new segment's base
        _crash(host)

        host, reads = _open(tmp_path, monkeypatch)
        assert reads == [60 - bases[-1]]  # the active segment's batches only (one record per batch)
        retry = _produce(host, 7, 59)
        assert (retry.error, retry.base_offset, _log(host).end_offset()) == (ErrorCode.NONE, 59, 60)
        assert _produce(host, 7, 61).error is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        assert _produce(host, 7, 60).base_offset == 60
        host.close()  # clean shutdown: a snapshot at the log end

        host, reads = _open(tmp_path, monkeypatch)
        assert reads == [0]
        assert _log(host).producer_snapshots.offsets[-1] == 61
        assert _produce(host, 7, 60).base_offset == 60  # still a duplicate
        host.close()

    asyncio.run(scenario())


def test_a_producer_whose_batches_retention_deleted_is_still_deduplicated_after_a_restart(tmp_path, monkeypatch):
    async def scenario() -> None:
        host, _ = _open(tmp_path, monkeypatch, retention_bytes=2 * SEGMENT_BYTES)
        assert _produce(host, 5, 0).base_offset == 0  # producer 5 writes once, at offset 0
        for seq in range(40):
            _produce(host, 7, seq)
        host.maintain(NOW)
        log = _log(host)
        assert log.start_offset() > 0  # producer 5's only batch is gone
        assert log.producer_snapshots.offsets[0] == log.start_offset()  # older snapshots went with their segments
        assert sorted(f for f in os.listdir(log.directory) if f.endswith(".snapshot")) == \
            [f"{o:020d}.snapshot" for o in log.producer_snapshots.offsets]
        _crash(host)

        host, _ = _open(tmp_path, monkeypatch, retention_bytes=2 * SEGMENT_BYTES)
        end = _log(host).end_offset()
        retry = _produce(host, 5, 0)  # the producer retries its first batch (its answer was lost)
        assert (retry.error, retry.base_offset, _log(host).end_offset()) == (ErrorCode.NONE, 0, end)
        assert _produce(host, 5, 2).error is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        host.close()

    asyncio.run(scenario())


@pytest.mark.parametrize("damage", ["flip", "truncate"])
def test_a_corrupt_snapshot_is_deleted_and_the_state_rebuilt(tmp_path, monkeypatch, caplog, damage) -> None:
    async def scenario() -> None:
        host, _ = _open(tmp_path, monkeypatch)
        for seq in range(30):
            _produce(host, 7, seq)
        host.close()
        files = sorted(f for f in os.listdir(tmp_path / "b1" / "t-0") if f.endswith(".snapshot"))
        for name in files:  # every snapshot is damaged: only the whole log can tell
            path = tmp_path / "b1" / "t-0" / name
            data = bytearray(path.read_bytes())
            if damage == "flip":
                data[-1] ^= 0xFF
            else:
                del data[len(data) // 2:]
            path.write_bytes(bytes(data))

        with caplog.at_level(logging.WARNING, logger="pykraft.node.producers"):
            host, reads = _open(tmp_path, monkeypatch)
        assert reads == [30]
        assert sum("unreadable" in r.getMessage() for r in caplog.records) == len(files)
        assert not _log(host).producer_snapshots.offsets
        assert not [f for f in os.listdir(tmp_path / "b1" / "t-0") if f.endswith(".snapshot")]
        assert _produce(host, 7, 29).base_offset == 29  # deduplicated from the rebuilt state
        host.close()

    asyncio.run(scenario())


def test_a_corrupt_latest_snapshot_falls_back_to_the_previous_one(tmp_path, monkeypatch) -> None:
    async def scenario() -> None:
        host, _ = _open(tmp_path, monkeypatch)
        for seq in range(30):
            _produce(host, 7, seq)
        previous = _log(host).producer_snapshots.offsets[-1]
        host.close()
        latest = tmp_path / "b1" / "t-0" / f"{30:020d}.snapshot"
        latest.write_bytes(latest.read_bytes()[:-3])
        host, reads = _open(tmp_path, monkeypatch)
        assert reads == [30 - previous] and not latest.exists()
        assert _produce(host, 7, 29).base_offset == 29
        host.close()

    asyncio.run(scenario())


def test_a_truncation_drops_the_snapshots_above_it_and_reloads_the_state(tmp_path, monkeypatch) -> None:
    async def scenario() -> None:
        host, _ = _open(tmp_path, monkeypatch)
        for seq in range(30):
            _produce(host, 7, seq)
        replica = host.replicas[("t", 0)]
        kept = replica.log.producer_snapshots.offsets[1]
        host.truncate_diverging(replica, kept + 2, replica.leader_epoch)
        assert replica.log.end_offset() == kept + 2
        assert replica.log.producer_snapshots.offsets[-1] <= kept + 2
        assert not [f for f in os.listdir(replica.log.directory)
                    if f.endswith(".snapshot") and int(f[:20]) > kept + 2]
        assert replica.producers.check(7, 0, kept + 2, kept + 2).error is ErrorCode.NONE  # the next sequence
        assert replica.producers.check(7, 0, kept + 1, kept + 1).duplicate_of is not None
        assert replica.producers.check(7, 0, 29, 29).error is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        host.close()

    asyncio.run(scenario())


def test_roll_snapshots_are_synced_by_the_next_flush_not_when_written(tmp_path, monkeypatch) -> None:
    async def scenario() -> None:
        host, _ = _open(tmp_path, monkeypatch)
        synced: list[int] = []
        monkeypatch.setattr("pykraft.storage.flush.sync_data", lambda fd: synced.append(fd))
        for seq in range(8):
            _produce(host, 7, seq)
        log = _log(host)
        assert log.producer_snapshots.offsets and not synced  # written at the roll, not synced on the loop
        pending = len(log.producer_snapshots._unsynced)
        ticket = log.prepare_flush()
        assert pending and log.producer_snapshots._unsynced == {}
        ticket.sync()
        log.complete_flush(ticket)
        assert len(synced) >= pending
        host.close()

    asyncio.run(scenario())


def test_the_maintenance_round_syncs_roll_snapshots_though_the_topic_never_flushes(tmp_path, monkeypatch) -> None:
    async def scenario() -> None:
        host, _ = _open(tmp_path, monkeypatch)  # Kafka's defaults: flush.ms and flush.messages never due
        for seq in range(8):
            _produce(host, 7, seq)
        snapshots = _log(host).producer_snapshots
        assert snapshots.has_unsynced()  # written at the rolls

        async def run_blocking(work):
            work()

        await host.maintain_off_loop(lambda: NOW, run_blocking)
        assert not snapshots.has_unsynced()  # synced and their descriptors closed, in the worker's place
        host.close()

    asyncio.run(scenario())


def test_expired_producers_leave_the_state_and_the_next_snapshots(tmp_path, monkeypatch) -> None:
    async def scenario() -> None:
        host, _ = _open(tmp_path, monkeypatch)
        host.settings = DataPlaneSettings.of(1, {"producer.id.expiration.ms": "60000"})
        assert host.settings.producer_id_expiration_ms == 60_000
        _produce(host, 5, 0)
        host.maintain(NOW + 59_000)
        assert _produce(host, 5, 0).base_offset == 0  # still known: a duplicate
        host.maintain(NOW + 61_000)
        assert _produce(host, 5, 0).base_offset == 1  # forgotten: appended as new, as Kafka would
        host.close()
        host, _ = _open(tmp_path, monkeypatch)
        assert [e.producer_id for e in host.replicas[("t", 0)].producers.entries()] == [5]  # its new batch
        host.close()

    asyncio.run(scenario())


def test_a_snapshot_that_cannot_be_written_fails_neither_the_append_nor_the_shutdown(tmp_path, monkeypatch, caplog):
    async def scenario() -> None:
        host, _ = _open(tmp_path, monkeypatch)

        def disk_full(fd, data):
            raise OSError(28, "No space left on device")

        monkeypatch.setattr("pykraft.storage.producer_snapshots.write_all", disk_full)
        with caplog.at_level(logging.ERROR, logger="pykraft.node.producers"):
            for seq in range(12):
                assert _produce(host, 7, seq).error is ErrorCode.NONE
            log = _log(host)
            assert len(log.segment_base_offsets()) >= 2 and log.producer_snapshots.offsets == []
            host.close()
        assert "could not write the producer snapshot" in caplog.text
        assert not [f for f in os.listdir(log.directory) if f.endswith(".snapshot")]  # no empty file left behind

    asyncio.run(scenario())


def test_snapshots_outside_the_recovered_log_are_deleted_on_open(tmp_path, monkeypatch) -> None:
    async def scenario() -> None:
        host, _ = _open(tmp_path, monkeypatch)
        for seq in range(3):
            _produce(host, 7, seq)
        host.close()
        directory = tmp_path / "b1" / "t-0"
        real = (directory / f"{3:020d}.snapshot").read_bytes()
        (directory / f"{50:020d}.snapshot").write_bytes(real)  # past the log end (e.g. a torn tail was cut)
        host, reads = _open(tmp_path, monkeypatch)
        assert reads == [0] and not (directory / f"{50:020d}.snapshot").exists()
        assert _log(host).producer_snapshots.offsets == [3]
        host.close()

    asyncio.run(scenario())
