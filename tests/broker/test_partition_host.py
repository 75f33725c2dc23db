"""PartitionHost (node/hosts/partitions.py) in one process: real logs, the real metadata cache and ISR manager, no
sockets."""

from __future__ import annotations

import asyncio
import struct
from types import SimpleNamespace

from pykraft.broker.isr_manager import IsrManager, IsrManagerConfig
from pykraft.broker.metadata_cache import MetadataCache
from pykraft.node.apis import produce_api
from pykraft.node.apis.fetch_api import _answer_one
from pykraft.broker.topic_settings import TopicSettings
from pykraft.node.hosts.partitions import DataPlaneSettings, PartitionHost, to_log_config
from pykraft.protocol.errors import ErrorCode
from pykraft.records import SimpleRecord, encode_batch, iter_batches
from pykraft.storage import PartitionLogs

from .records import config, partition, register, topic

NOW = 1_000


def _host(tmp_path, me: int, leader: int, isr: list[int], min_insync: int = 1, configs: tuple = (),
          now=None) -> PartitionHost:
    cache = MetadataCache()
    records = [register(b, 10 + b) for b in (1, 2, 3)] + [topic("t"), partition(0, [1, 2, 3], isr, leader)]
    records += list(configs)
    cache.replay_all(enumerate(records))
    isr_manager = IsrManager(IsrManagerConfig(me), cache)
    isr_manager.sync_metadata(NOW)
    settings = DataPlaneSettings(me, TopicSettings(min_insync_replicas=min_insync))
    host = PartitionHost(settings, cache, None, report_progress=lambda p: isr_manager.update_progress(p, NOW),
                         high_watermark_of=isr_manager.high_watermark, now_ms=now)
    host.logs = PartitionLogs((str(tmp_path / f"b{me}"),), host.log_config_for)
    host.sync_metadata(NOW)
    return host


def _records(count: int = 1) -> bytes:
    return encode_batch([SimpleRecord(value=b"v")] * count, base_offset=0, partition_leader_epoch=-1, timestamp_ms=1)


def _fetch(host: PartitionHost, replica: int, offset: int, last_epoch: int = -1):
    p = SimpleNamespace(partition=0, fetch_offset=offset, current_leader_epoch=-1, last_fetched_epoch=last_epoch,
                        partition_max_bytes=1 << 20)
    return _answer_one(host, "t", ErrorCode.UNKNOWN_TOPIC_ID, p, replica, 10 + replica, NOW)


def test_acks_all_wakes_followers_and_answers_when_the_isr_has_fetched(tmp_path) -> None:
    async def scenario() -> None:
        host = _host(tmp_path, me=1, leader=1, isr=[1, 2, 3])
        woken = host.changed
        result = host.append_as_leader("t", 0, _records(3), acks=-1)
        # Regression: without this wake-up the followers' long polls slept their whole MaxWait (500 ms per
        # acks=all request, found by benchmarks/produce.py).
        assert woken.is_set()
        assert result.error is ErrorCode.NONE and result.base_offset == 0 and not result.waiter.done()
        assert bytes(_fetch(host, 2, 0).records)[:8] == b"\0" * 8  # followers read up to the log end
        _fetch(host, 2, 3)
        assert not result.waiter.done()  # follower 3 has not fetched it yet
        _fetch(host, 3, 3)
        assert result.waiter.done() and result.waiter.result() is ErrorCode.NONE
        assert host.replicas[("t", 0)].log.high_watermark() == 3
        host.close()

    asyncio.run(scenario())


def test_min_insync_refuses_before_appending_and_produce_to_a_follower_is_refused(tmp_path) -> None:
    async def scenario() -> None:
        leader = _host(tmp_path, me=1, leader=1, isr=[1], min_insync=2)
        assert leader.append_as_leader("t", 0, _records(), acks=-1).error is ErrorCode.NOT_ENOUGH_REPLICAS
        assert leader.replicas[("t", 0)].log.end_offset() == 0
        assert leader.append_as_leader("t", 0, _records(), acks=1).error is ErrorCode.NONE
        follower = _host(tmp_path, me=2, leader=1, isr=[1])
        assert follower.append_as_leader("t", 0, _records(), acks=1).error is ErrorCode.NOT_LEADER_OR_FOLLOWER
        leader.close()
        follower.close()

    asyncio.run(scenario())


def test_idempotent_retry_is_not_written_twice(tmp_path) -> None:
    async def scenario() -> None:
        host = _host(tmp_path, me=1, leader=1, isr=[1])
        data = bytearray(_records(2))
        struct.pack_into(">qhi", data, 43, 77, 0, 0)  # producer id 77, epoch 0, sequence 0
        from pykraft.records.crc import crc32c

        struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
        first = host.append_as_leader("t", 0, bytes(data), acks=1)
        retry = host.append_as_leader("t", 0, bytes(data), acks=1)
        assert (first.base_offset, retry.base_offset, retry.error) == (0, 0, ErrorCode.NONE)
        assert host.replicas[("t", 0)].log.end_offset() == 2
        host.close()

    asyncio.run(scenario())


def test_a_diverging_follower_truncates_to_where_the_histories_agree(tmp_path) -> None:
    async def scenario() -> None:
        leader = _host(tmp_path, me=1, leader=1, isr=[1, 2, 3])
        follower = _host(tmp_path, me=2, leader=1, isr=[1, 2, 3])
        leader_log, follower_log = leader.replicas[("t", 0)].log, follower.replicas[("t", 0)].log
        # Both hold offsets 0-4 of epoch 0; the follower also has 5-7 from an epoch-1 leader the others never saw.
        for log in (leader_log, follower_log):
            log.append_as_follower(encode_batch([SimpleRecord(value=b"a")] * 5, base_offset=0,
                                                partition_leader_epoch=0, timestamp_ms=1), 0)
        follower_log.append_as_follower(encode_batch([SimpleRecord(value=b"b")] * 3, base_offset=5,
                                                     partition_leader_epoch=1, timestamp_ms=1), 1)
        leader_log.initialize_leader_epoch(2)
        answer = _fetch(leader, 2, follower_log.end_offset(), last_epoch=1)
        assert answer.diverging == (0, 5) and answer.records == b""
        follower.truncate_diverging(follower.replicas[("t", 0)], answer.diverging[1], answer.diverging[0])
        assert follower_log.end_offset() == 5
        assert _fetch(leader, 2, 5, last_epoch=0).diverging is None
        leader.close()
        follower.close()

    asyncio.run(scenario())


def _alter(host: PartitionHost, *records) -> None:
    """Replay ConfigRecords into the host's metadata cache as a live broker does, then the host's metadata hook."""
    offset = host.cache.last_applied_offset
    host.cache.replay_all((offset + 1 + i, r) for i, r in enumerate(records))
    host.sync_metadata(NOW)


def test_topic_configs_take_effect_on_a_live_partition(tmp_path) -> None:
    async def scenario() -> None:
        host = _host(tmp_path, me=1, leader=1, isr=[1, 2])
        replica = host.replicas[("t", 0)]
        assert host.append_as_leader("t", 0, _records(), acks=-1).error is ErrorCode.NONE
        _alter(host, config("min.insync.replicas", "3"))
        assert host.append_as_leader("t", 0, _records(), acks=-1).error is ErrorCode.NOT_ENOUGH_REPLICAS
        _alter(host, config("min.insync.replicas", None))  # deleted: back to the broker's setting
        assert host.append_as_leader("t", 0, _records(), acks=-1).error is ErrorCode.NONE
        # max.message.bytes: the cluster-wide dynamic default applies until the topic sets its own
        _alter(host, config("message.max.bytes", "50", resource="", resource_type=4))
        assert host.append_as_leader("t", 0, _records(), acks=1).error is ErrorCode.MESSAGE_TOO_LARGE
        _alter(host, config("max.message.bytes", "100000"))
        assert host.append_as_leader("t", 0, _records(), acks=1).error is ErrorCode.NONE
        _alter(host, config("segment.bytes", str(2 << 20)), config("segment.ms", "60000"))
        assert (replica.log.config.segment_bytes, replica.log.config.segment_ms) == (2 << 20, 60000)
        host.close()

    asyncio.run(scenario())


def test_log_append_time_topic_stamps_the_batch_and_answers_the_time(tmp_path) -> None:
    async def scenario() -> None:
        host = _host(tmp_path, me=1, leader=1, isr=[1], now=lambda: 987_654,
                     configs=(config("message.timestamp.type", "LogAppendTime"),))
        result = host.append_as_leader("t", 0, _records(2), acks=1)
        assert result.error is ErrorCode.NONE and result.log_append_time_ms == 987_654
        (answer,) = produce_api._response(9, [("t", 0, result)]).responses[0].partition_responses
        assert answer.log_append_time.timestamp() * 1000 == 987_654
        stored = host.replicas[("t", 0)].log.read(0, 1 << 20).records
        (batch,) = list(iter_batches(bytes(stored), verify_crc=True))
        assert batch.max_timestamp == 987_654
        _alter(host, config("message.timestamp.type", "CreateTime"))
        result = host.append_as_leader("t", 0, _records(1), acks=1)
        assert result.log_append_time_ms == -1
        host.close()

    asyncio.run(scenario())


def test_retention_ms_of_the_topic_deletes_old_segments_at_maintenance(tmp_path) -> None:
    async def scenario() -> None:
        host = _host(tmp_path, me=1, leader=1, isr=[1], configs=(config("segment.bytes", str(1 << 20)),))
        replica = host.replicas[("t", 0)]
        big = encode_batch([SimpleRecord(value=b"x" * 1000)] * 600, base_offset=0, partition_leader_epoch=-1,
                           timestamp_ms=NOW)
        for _ in range(3):  # ~600 KB each: three segments of 1 MiB at most
            assert host.append_as_leader("t", 0, big, acks=1).error is ErrorCode.NONE
        replica.log.update_high_watermark(replica.log.end_offset())
        assert len(replica.log._segments) >= 2
        host.maintain(NOW + 10_000)  # the broker's 7 days: nothing expires
        assert replica.log.start_offset() == 0
        _alter(host, config("retention.ms", "5000"))
        host.maintain(NOW + 10_000)
        assert replica.log.start_offset() > 0
        host.close()

    asyncio.run(scenario())


def test_a_follower_below_the_leaders_log_start_restarts_its_log_there(tmp_path) -> None:
    from pykraft.node.hosts.replica_fetcher import ReplicaFetchers

    async def scenario() -> None:
        leader = _host(tmp_path, me=1, leader=1, isr=[1, 2, 3],
                       configs=(config("segment.bytes", str(1 << 20)), config("retention.ms", "5000")))
        follower = _host(tmp_path, me=2, leader=1, isr=[1, 2, 3])
        leader_log, follower_log = leader.replicas[("t", 0)].log, follower.replicas[("t", 0)].log
        for base in range(0, 1800, 600):  # three segments of 1 MiB at most
            leader_log.append_as_follower(encode_batch([SimpleRecord(value=b"x" * 1000)] * 600, base_offset=base,
                                                       partition_leader_epoch=0, timestamp_ms=NOW), 0)
        leader_log.update_high_watermark(leader_log.end_offset())
        leader.maintain(NOW + 10_000)  # retention moves the leader's log start past everything the follower has
        start = leader_log.start_offset()
        assert start > 0 and follower_log.end_offset() == 0
        answer = _fetch(leader, 2, 0)
        assert answer.error is ErrorCode.OFFSET_OUT_OF_RANGE and answer.log_start_offset == start
        fetchers = ReplicaFetchers(follower, broker_epoch=lambda: 12, address_of=lambda b: None, send=None)
        data = SimpleNamespace(error_code=int(answer.error), log_start_offset=answer.log_start_offset)
        assert fetchers._apply_partition(follower.replicas[("t", 0)], data)
        assert (follower_log.start_offset(), follower_log.end_offset()) == (start, start)
        records = _fetch(leader, 2, start).records
        follower.append_as_follower(follower.replicas[("t", 0)], records, leader_log.high_watermark(), start)
        assert follower_log.end_offset() == leader_log.end_offset()
        follower.close()
        leader.close()
        # the new start is durable: a restart recovers the follower's log from there
        reopened = PartitionLogs((str(tmp_path / "b2"),), lambda topic: to_log_config(TopicSettings()))
        reopened.load()
        assert reopened.get("t", 0).start_offset() == start
        reopened.close()

    asyncio.run(scenario())


def test_maintenance_flushes_in_a_worker_thread_then_writes_the_checkpoints(tmp_path) -> None:
    import threading

    from pykraft.node.runtime.flusher import thread_runner
    from pykraft.storage.offset_checkpoints import read_offsets

    async def scenario() -> None:
        host = _host(tmp_path, me=1, leader=1, isr=[1], configs=(config("flush.ms", "0"),))
        log = host.replicas[("t", 0)].log
        assert host.append_as_leader("t", 0, _records(3), acks=1).error is ErrorCode.NONE
        assert log.flushed_end_offset() == 0
        threads: list[threading.Thread] = []
        runner = thread_runner()

        async def run_blocking(fn) -> None:
            def recorded() -> None:
                threads.append(threading.current_thread())
                fn()
            await runner(recorded)

        await host.maintain_off_loop(lambda: NOW, run_blocking)
        assert threads and threads[0] is not threading.main_thread()  # the fsyncs ran off the event loop
        assert log.flushed_end_offset() == 3
        checkpoint = read_offsets(str(tmp_path / "b1" / "recovery-point-offset-checkpoint"))
        assert checkpoint[("t", 0)] == 3
        host.close()

    asyncio.run(scenario())


def test_maintenance_flushes_only_what_flush_ms_or_flush_messages_make_due(tmp_path) -> None:
    """Kafka's defaults never fsync a partition (flush.ms and flush.messages are Long.MAX): durability comes from
    replication, and the checkpoint keeps the last flushed offset. A topic's flush.messages or flush.ms (or the
    broker's log.flush.interval.*) makes the maintenance round flush it."""
    async def scenario() -> None:
        host = _host(tmp_path, me=1, leader=1, isr=[1])
        log = host.replicas[("t", 0)].log
        assert host.append_as_leader("t", 0, _records(3), acks=1).error is ErrorCode.NONE
        host.maintain(NOW)
        host.maintain(NOW + 3_600_000)
        assert log.flushed_end_offset() == 0  # Kafka's default: never
        _alter(host, config("flush.messages", "4"))
        host.maintain(NOW + 3_600_000)
        assert log.flushed_end_offset() == 0  # 3 unflushed < 4
        assert host.append_as_leader("t", 0, _records(1), acks=1).error is ErrorCode.NONE
        host.maintain(NOW + 3_600_000)
        assert log.flushed_end_offset() == 4
        _alter(host, config("flush.messages", str((1 << 63) - 1)), config("flush.ms", "60000"))
        assert host.append_as_leader("t", 0, _records(1), acks=1).error is ErrorCode.NONE
        host.maintain(NOW + 3_600_000 + 59_999)
        assert log.flushed_end_offset() == 4  # flushed 59.999 s ago
        host.maintain(NOW + 3_600_000 + 60_000)
        assert log.flushed_end_offset() == 5
        host.close()

    asyncio.run(scenario())


def test_the_leader_keeps_appended_batches_in_memory_until_every_follower_fetched_them(tmp_path, monkeypatch) -> None:
    import pykraft.storage.segment as segment

    async def scenario() -> None:
        host = _host(tmp_path, me=1, leader=1, isr=[1, 2, 3])
        preads: list[int] = []
        real = segment.pread_exact
        monkeypatch.setattr(segment, "pread_exact", lambda fd, size, pos: preads.append(size) or real(fd, size, pos))
        for _ in range(3):
            host.append_as_leader("t", 0, _records(2), acks=1)
        assert len(list(iter_batches(_fetch(host, 2, 0).records))) == 3  # from memory
        _fetch(host, 2, 4)
        assert preads == []
        _fetch(host, 3, 2)  # both followers are past the first batch now
        assert len(list(iter_batches(_fetch(host, 3, 2).records))) == 2 and preads == []
        assert len(list(iter_batches(_fetch(host, 3, 0).records))) == 3 and preads  # released: from the file
        host.close()

    asyncio.run(scenario())


def test_a_follower_restarted_inside_a_batch_takes_the_whole_batch(tmp_path) -> None:
    """DeleteRecords put the leader's start inside a batch; the follower restarted its log there (OFFSET_OUT_OF_RANGE)
    and the leader answers with the whole batch: the empty log starts at the batch's base (Kafka's rule for
    UnexpectedAppendOffsetException), it does not refuse the batch forever (found by the simulator, data_swarm
    seed 100017)."""
    follower = _host(tmp_path, me=2, leader=1, isr=[1, 2, 3])
    replica = follower.replicas[("t", 0)]
    follower.restart_at_leader_start(replica, 4)
    batch = encode_batch([SimpleRecord(value=b"v")] * 3, base_offset=3, partition_leader_epoch=0, timestamp_ms=NOW)
    follower.append_as_follower(replica, batch, 6, 4)
    assert replica.log.end_offset() == 6  # then its start follows the leader's (4) again
