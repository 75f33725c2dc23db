"""The broker's log cleaner threads over a PartitionHost (real logs, real metadata cache, an event loop, no
sockets): a compacted topic's replica cleaned off the loop, Kafka's gauges, retention by cleanup.policy, the
cleaner settings refused as Kafka refuses them, and a truncation that aborts the partition's cleaning."""

from __future__ import annotations

import asyncio
import os
from types import SimpleNamespace

import pytest

from pykraft.broker.isr_manager import IsrManager, IsrManagerConfig
from pykraft.broker.metadata_cache import MetadataCache
from pykraft.broker.topic_settings import TopicSettings
from pykraft.node.hosts.log_cleaner import CleanerConfig, LogCleaner, compaction_settings
from pykraft.node.hosts.partitions import DataPlaneSettings, PartitionHost
from pykraft.node.runtime.broker_metrics import cleaner_families
from pykraft.protocol.framing import FileRegion
from pykraft.records import SimpleRecord, encode_batch, iter_batches
from pykraft.storage import PartitionLogs
from pykraft.node.apis.fetch_api import _answer_one
from pykraft.protocol.errors import ErrorCode
from pykraft.storage.cleaner import Cleaner, CleaningAborted
from pykraft.storage.cleaner_manager import CleanableLog, clean_once
from pykraft.storage.offset_map import OffsetMap, Throttler
from pykraft.storage.files import CLEANER_CHECKPOINT
from pykraft.storage.offset_checkpoints import read_offsets, update_offsets

from .records import config, partition, register, topic

NOW = 1_000


def _host(tmp_path, policy: str, retention_ms: str = "604800000") -> PartitionHost:
    cache = MetadataCache()
    records = [register(1, 11), topic("t"), partition(0, [1], [1], 1), config("cleanup.policy", policy),
               config("segment.ms", "10"), config("min.cleanable.dirty.ratio", "0.01"),
               config("retention.ms", retention_ms)]
    cache.replay_all(enumerate(records))
    isr_manager = IsrManager(IsrManagerConfig(1), cache)
    isr_manager.sync_metadata(NOW)
    host = PartitionHost(DataPlaneSettings(1, TopicSettings()), cache, None,
                         report_progress=lambda p: isr_manager.update_progress(p, NOW),
                         high_watermark_of=isr_manager.high_watermark, now_ms=lambda: NOW)
    host.logs = PartitionLogs((str(tmp_path),), host.log_config_for)
    host.sync_metadata(NOW)
    return host


def _write(host: PartitionHost, rounds: int = 5, keys: int = 8) -> None:
    stamp = 1000
    for r in range(rounds):
        for k in range(keys):
            stamp += 20  # > segment.ms: each batch rolls a segment
            batch = encode_batch([SimpleRecord(f"r{r}".encode(), f"k{k}".encode())], base_offset=0,
                                 partition_leader_epoch=-1, timestamp_ms=stamp)
            assert host.append_as_leader("t", 0, batch, acks=1).error.name == "NONE"


def _latest(log) -> dict[str, tuple[int, str]]:
    found = {}
    offset = log.start_offset()
    while offset < log.end_offset():
        for batch in iter_batches(log.read(offset, 1 << 20).records):
            for r in batch.records():
                found.setdefault(bytes(r.key).decode(), []).append((r.offset, bytes(r.value).decode()))
            offset = max(offset, batch.next_offset)
    return found


def test_a_compacted_replica_is_cleaned_off_the_loop_and_the_gauges_say_so(tmp_path) -> None:
    async def scenario() -> None:
        host = _host(tmp_path, "compact")
        _write(host)
        log = host.replicas[("t", 0)].log
        assert log.high_watermark() == log.end_offset() == 40
        cleaner = LogCleaner(CleanerConfig(backoff_ms=20), host, (str(tmp_path),), lambda: NOW)
        host.cleaning = cleaner.manager
        cleaner.start()
        checkpoint = os.path.join(str(tmp_path), CLEANER_CHECKPOINT)
        for _ in range(500):
            if read_offsets(checkpoint).get(("t", 0), 0) >= 39:
                break
            await asyncio.sleep(0.02)
        cleaner.stop()
        await asyncio.get_running_loop().run_in_executor(None, cleaner.join, 10)
        latest = _latest(log)
        assert all(len(rows) == 1 and rows[0][1] == "r4" for key, rows in latest.items() if key != "k7")
        # k7's last record is in the active segment, which is never cleaned nor mapped: its previous one stays.
        assert latest["k7"] == [(31, "r3"), (39, "r4")]
        gauges = cleaner.metrics(NOW + 5)
        assert 0 < gauges["cleaner-recopy-percent"] < 100 and gauges["DeadThreadCount"] == 0
        assert gauges["time-since-last-run-ms"] == 5 and gauges["max-clean-time-secs"] >= 0
        names = {family.name for family in cleaner_families(cleaner, NOW)}
        assert {"kafka_log_logcleaner_max_clean_time_secs", "kafka_log_logcleaner_cleaner_recopy_percent",
                "kafka_log_logcleanermanager_max_dirty_percent",
                "kafka_log_logcleanermanager_uncleanable_partitions_count"} <= names
        host.close()

    asyncio.run(scenario())


@pytest.mark.parametrize("policy, deleted", [("compact", False), ("compact,delete", True), ("delete", True)])
def test_retention_applies_only_where_delete_is_in_the_policy(tmp_path, policy: str, deleted: bool) -> None:
    async def scenario() -> None:
        host = _host(tmp_path, policy, retention_ms="1")
        _write(host, rounds=1)
        log = host.replicas[("t", 0)].log
        host.maintain(NOW + 10**9)
        assert (log.start_offset() > 0) is deleted
        host.close()

    asyncio.run(scenario())


def test_a_truncation_aborts_the_partitions_pass_and_lowers_its_checkpoint(tmp_path) -> None:
    async def scenario() -> None:
        host = _host(tmp_path, "compact")
        _write(host)
        cleaner = LogCleaner(CleanerConfig(enable=False), host, (str(tmp_path),), lambda: NOW)
        host.cleaning = cleaner.manager
        replica = host.replicas[("t", 0)]
        task = cleaner._plan()  # what a cleaner thread asks the loop for
        assert task is not None and cleaner.manager.in_progress(("t", 0))
        epoch = replica.log.epoch_entries()[-1][0]
        assert host.truncate_diverging(replica, 30, epoch) == 30  # e.g. a follower's divergence
        with pytest.raises(CleaningAborted):
            cleaner.manager.check_aborted(("t", 0))
        cleaner.manager.done(task, 40)  # the aborted pass ends: no checkpoint written
        checkpoint = os.path.join(str(tmp_path), CLEANER_CHECKPOINT)
        assert read_offsets(checkpoint) == {}
        update_offsets(checkpoint, {("t", 0): 30})
        host.truncate_diverging(replica, 20, epoch)
        assert read_offsets(checkpoint) == {("t", 0): 20}  # Kafka's maybeTruncateCheckpoint
        host.close()

    asyncio.run(scenario())


@pytest.mark.parametrize("key, value, reason", [
    ("log.cleaner.threads", "-1", "below the minimum"),
    ("log.cleaner.backoff.ms", "soon", "not a number"),
    ("log.cleaner.enable", "yes", "not true or false"),
    ("log.cleaner.dedupe.buffer.size", "40", "log.cleaner.dedupe.buffer.size"),  # 1 slot of 24 bytes, 0.9 keys
])
def test_cleaner_settings_kafka_refuses_are_refused_at_start(key: str, value: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        CleanerConfig.of({key: value})
    assert CleanerConfig.of({"log.cleaner.threads": "2", "log.cleaner.io.max.bytes.per.second": "1e6"}) == \
        CleanerConfig(threads=2, max_io_bytes_per_second=1e6)


def test_a_compacted_topic_refuses_records_without_a_key_as_kafka_does(tmp_path) -> None:
    async def scenario() -> None:
        host = _host(tmp_path, "compact")
        keyless = encode_batch([SimpleRecord(b"v", b"k"), SimpleRecord(b"v")], base_offset=0,
                               partition_leader_epoch=-1, timestamp_ms=5)
        refused = host.append_as_leader("t", 0, keyless, acks=1)
        assert refused.error.name == "INVALID_RECORD"
        assert refused.message == "Compacted topic cannot accept message without key in topic partition t-0."
        assert host.replicas[("t", 0)].log.end_offset() == 0
        keyed = encode_batch([SimpleRecord(b"v", b"k")], base_offset=0, partition_leader_epoch=-1, timestamp_ms=5)
        assert host.append_as_leader("t", 0, keyed, acks=1).error.name == "NONE"
        host.close()

    asyncio.run(scenario())


def test_a_fetch_from_an_offset_the_cleaner_removed_gets_the_next_record(tmp_path) -> None:
    async def scenario() -> None:
        host = _host(tmp_path, "compact")
        _write(host)
        replica = host.replicas[("t", 0)]
        cleaner = LogCleaner(CleanerConfig(enable=False), host, (str(tmp_path),), lambda: NOW)
        offered = CleanableLog(("t", 0), str(tmp_path), replica.log, compaction_settings(replica))
        assert clean_once(cleaner.manager, Cleaner(OffsetMap(1 << 20), 4096, Throttler(1e18, 0)), [offered], NOW)
        for replica_id in (-1, 2):  # a consumer, and a follower catching up from scratch
            p = SimpleNamespace(partition=0, fetch_offset=3, current_leader_epoch=-1, last_fetched_epoch=-1,
                                partition_max_bytes=1 << 20)
            answer = _answer_one(host, "t", ErrorCode.UNKNOWN_TOPIC_ID, p, replica_id, -1, NOW)
            records = answer.records  # a consumer's: a region of the segment file, sent from the file on the wire
            first = next(iter_batches(records.read() if isinstance(records, FileRegion) else records))
            assert answer.error is ErrorCode.NONE and first.base_offset > 3  # offsets 3.. were overwritten
            assert [r.offset for r in first.records()][0] == first.base_offset
        host.close()

    asyncio.run(scenario())


def test_a_cleaned_replica_moves_to_another_log_dir_with_its_gaps_and_its_checkpoint(tmp_path, monkeypatch) -> None:
    from pykraft.node.hosts import replica_move
    from pykraft.node.hosts.replica_move import ReplicaMover

    monkeypatch.setattr(replica_move, "COPY_CHUNK_BYTES", 1)  # a batch per read: the copy meets every gap

    async def scenario() -> None:
        first, second = tmp_path / "d1", tmp_path / "d2"
        first.mkdir()
        second.mkdir()
        cache = MetadataCache()
        cache.replay_all(enumerate([register(1, 11), topic("t"), partition(0, [1], [1], 1),
                                    config("cleanup.policy", "compact"), config("segment.ms", "10")]))
        isr_manager = IsrManager(IsrManagerConfig(1), cache)
        isr_manager.sync_metadata(NOW)
        host = PartitionHost(DataPlaneSettings(1, TopicSettings()), cache, None,
                             report_progress=lambda p: isr_manager.update_progress(p, NOW),
                             high_watermark_of=isr_manager.high_watermark, now_ms=lambda: NOW)
        host.logs = PartitionLogs((str(first), str(second)), host.log_config_for)
        host.sync_metadata(NOW)
        solo = encode_batch([SimpleRecord(b"once", b"solo")], base_offset=0, partition_leader_epoch=-1, timestamp_ms=9)
        assert host.append_as_leader("t", 0, solo, acks=1).error is ErrorCode.NONE  # kept: a gap follows it
        _write(host)
        replica = host.replicas[("t", 0)]
        source = host.logs.dir_of("t", 0)
        target = str(second) if source == str(first) else str(first)
        cleaner = LogCleaner(CleanerConfig(enable=False), host, (str(first), str(second)), lambda: NOW)
        host.cleaning = cleaner.manager
        offered = CleanableLog(("t", 0), source, replica.log, compaction_settings(replica))
        assert clean_once(cleaner.manager, Cleaner(OffsetMap(1 << 20), 4096, Throttler(1e18, 0)), [offered], NOW)
        cleaned = _latest(replica.log)
        moved = asyncio.Event()
        mover = ReplicaMover(host, lambda r, d: moved.set())
        assert mover.request("t", 0, target) is ErrorCode.NONE
        await asyncio.wait_for(moved.wait(), 10)
        assert host.logs.dir_of("t", 0) == target and _latest(host.replicas[("t", 0)].log) == cleaned
        assert read_offsets(os.path.join(source, CLEANER_CHECKPOINT)) == {}
        assert read_offsets(os.path.join(target, CLEANER_CHECKPOINT)) == {("t", 0): 40}
        offsets = sorted(o for rows in cleaned.values() for o, _ in rows)
        assert cleaned["solo"] == [(0, "once")] and offsets[1] > 1  # the copy went across the gap after 0
        host.close()

    asyncio.run(scenario())
