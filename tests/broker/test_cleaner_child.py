"""The log cleaner's passes in child processes (node/hosts/cleaner_child.py) over a PartitionHost with an event loop:
a pass runs outside the broker's process and its swaps happen on the loop; a truncation stops a pass under way and
its `.cleaned` files go while the process stays for the next pass; a process that does not stop is killed and its
files removed; stopping the cleaner ends its processes; the throttle is shared by all.

A pass "under way" is held at its first swap (`HeldSwap`): the child waits for the broker's answer with the first
group's cleaned files handed over and the second group's its own, on disk. Catching it mid-rewrite by polling for a `.cleaned` file was a race: Kafka's throttle lets
a check interval (300 ms) of I/O through before it first sleeps, and a whole pass of these logs fits in it."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time

from pykraft.broker.isr_manager import IsrManager, IsrManagerConfig
from pykraft.broker.metadata_cache import MetadataCache
from pykraft.broker.topic_settings import TopicSettings
from pykraft.node.hosts.cleaner_child import SharedPage, SharedThrottler
from pykraft.node.hosts.log_cleaner import CleanerConfig, LogCleaner
from pykraft.node.hosts.partitions import DataPlaneSettings, PartitionHost
from pykraft.records import SimpleRecord, encode_batch, iter_batches
from pykraft.storage import PartitionLogs
from pykraft.storage.files import CLEANER_CHECKPOINT
from pykraft.storage.offset_checkpoints import read_offsets
from pykraft.storage.offset_map import Throttler

from .records import config, partition, register, topic

NOW = 1_000
KEY = ("t", 0)


def _host(tmp_path) -> PartitionHost:
    cache = MetadataCache()
    cache.replay_all(enumerate([register(1, 11), topic("t"), partition(0, [1], [1], 1),
                                config("cleanup.policy", "compact"), config("segment.ms", "10"),
                                config("min.cleanable.dirty.ratio", "0.01"), config("segment.bytes", str(1 << 20))]))
    isr_manager = IsrManager(IsrManagerConfig(1), cache)
    isr_manager.sync_metadata(NOW)
    host = PartitionHost(DataPlaneSettings(1, TopicSettings()), cache, None,
                         report_progress=lambda p: isr_manager.update_progress(p, NOW),
                         high_watermark_of=isr_manager.high_watermark, now_ms=lambda: NOW)
    host.logs = PartitionLogs((str(tmp_path),), host.log_config_for)
    host.sync_metadata(NOW)
    return host


def _write(host: PartitionHost, batches: int = 40, per_batch: int = 20, value: int = 1000) -> None:
    """Batches of keyed records, a segment each (segment.ms): every key but one of each batch overwritten by the
    later batches: the one kept record makes the rewrite read and rebuild every batch."""
    stamp = 1000
    for b in range(batches):
        stamp += 20
        records = [SimpleRecord(b"%d" % b * value, b"k%d" % (i % 10)) for i in range(per_batch - 1)]
        records.append(SimpleRecord(b"%d" % b * value, b"unique-%d" % b))
        batch = encode_batch(records, base_offset=0, partition_leader_epoch=-1, timestamp_ms=stamp)
        assert host.append_as_leader("t", 0, batch, acks=1).error.name == "NONE"


class HeldSwap:
    """The cleaner's first swap waits (on the cleaner's thread) until the test releases it: meanwhile the child waits
    for the answer with its cleaned files on disk, the pass under way."""

    def __init__(self, cleaner: LogCleaner) -> None:
        self.reached, self.released = threading.Event(), threading.Event()
        original = cleaner._swap_on_loop

        def held(task, cleaned, old_bases):
            if not self.reached.is_set():
                self.reached.set()
                self.released.wait(60)
            return original(task, cleaned, old_bases)
        cleaner._swap_on_loop = held

    async def wait(self, directory: str) -> None:
        await _until(self.reached.is_set)
        # The first group's files, handed to the broker for the swap, and the second's, the child's own (segment.bytes
        # of 1 MiB makes two groups of the 1.3 MB log; the swaps run one group behind: cleaned_swaps.py).
        assert len({name.split(".")[0] for name in _cleaned_files(directory)}) == 2


def _held_cleaner(host, grace_s: float = 5.0) -> tuple[LogCleaner, HeldSwap]:
    """One thread, 16 KiB reads, its first swap held."""
    settings = CleanerConfig(backoff_ms=50, io_buffer_size=16 * 1024)
    cleaner = LogCleaner(settings, host, (host.logs.log_dirs[0],), lambda: NOW, abort_grace_s=grace_s)
    host.cleaning = cleaner.manager
    return cleaner, HeldSwap(cleaner)


async def _until(condition, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.02)


def _cleaned_files(directory: str) -> list[str]:
    return [n for n in os.listdir(directory) if n.endswith(".cleaned")]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def _stop(cleaner: LogCleaner) -> None:
    cleaner.stop()
    await asyncio.get_running_loop().run_in_executor(None, cleaner.join, 30)


def test_a_pass_runs_in_a_child_process_and_is_swapped_in_on_the_loop(tmp_path) -> None:
    async def scenario() -> None:
        host = _host(tmp_path)
        _write(host, batches=12, per_batch=5, value=10)
        cleaner = LogCleaner(CleanerConfig(backoff_ms=50), host, (str(tmp_path),), lambda: NOW)
        host.cleaning = cleaner.manager
        cleaner.start()
        checkpoint = os.path.join(str(tmp_path), CLEANER_CHECKPOINT)
        await _until(lambda: read_offsets(checkpoint).get(KEY, 0) > 0)
        pid = cleaner.threads[0].child.pid
        assert pid is not None and pid != os.getpid() and _alive(pid)
        log = host.replicas[KEY].log
        kept = [r.offset for b in iter_batches(log.read(log.start_offset(), 1 << 20).records) for r in b.records()]
        assert len(kept) < 60 and kept == sorted(kept)
        await _stop(cleaner)
        assert not _alive(pid) or os.waitpid(pid, os.WNOHANG) != (0, 0)
        host.close()

    asyncio.run(scenario())


def test_a_truncation_stops_the_childs_pass_at_once_and_its_cleaned_files_go(tmp_path) -> None:
    async def scenario() -> None:
        host = _host(tmp_path)
        _write(host)
        replica = host.replicas[KEY]
        before = replica.log.size_in_bytes()
        cleaner, held = _held_cleaner(host)
        cleaner.start()
        await held.wait(replica.log.directory)  # the pass is under way
        pid = cleaner.threads[0].child.pid
        epoch = replica.log.epoch_entries()[-1][0]
        host.truncate_diverging(replica, 700, epoch)  # e.g. a follower's divergence: Kafka's abortCleaning
        cleaner.manager.abort_and_pause(KEY)  # (only so that no next pass starts before the checks below)
        held.released.set()
        await _until(lambda: not cleaner.manager.in_progress(KEY))
        assert _cleaned_files(replica.log.directory) == []
        checkpoint = os.path.join(str(tmp_path), CLEANER_CHECKPOINT)
        assert read_offsets(checkpoint).get(KEY) is None  # the aborted pass cleaned nothing
        assert replica.log.end_offset() == 700 and replica.log.size_in_bytes() < before
        cleaner.manager.resume(KEY)
        await _until(lambda: read_offsets(checkpoint).get(KEY) is not None)
        # The process stopped its pass by itself: one killed after its grace would have been replaced.
        assert cleaner.threads[0].child.pid == pid and _alive(pid)  # the same process took the next pass
        await _stop(cleaner)
        host.close()

    asyncio.run(scenario())


def test_a_child_that_does_not_stop_is_killed_and_its_cleaned_files_removed(tmp_path) -> None:
    async def scenario() -> None:
        host = _host(tmp_path)
        _write(host)
        replica = host.replicas[KEY]
        cleaner, held = _held_cleaner(host, grace_s=0.5)
        cleaner.start()
        await held.wait(replica.log.directory)
        pid = cleaner.threads[0].child.pid
        os.kill(pid, signal.SIGSTOP)  # stuck: it will never read its abort flag
        cleaner.manager.abort(KEY)  # Kafka's abortCleaning (a DeleteRecords, say)
        held.released.set()
        await _until(lambda: not cleaner.manager.in_progress(KEY))
        assert _cleaned_files(replica.log.directory) == []
        assert not _alive(pid) or os.waitpid(pid, os.WNOHANG)[0] == pid
        await _until(lambda: cleaner.threads[0].child.pid not in (None, pid))  # the next pass: a new process
        await _stop(cleaner)
        assert _cleaned_files(replica.log.directory) == []
        host.close()

    asyncio.run(scenario())


def test_stopping_the_cleaner_mid_pass_ends_its_process_and_leaves_no_cleaned_file(tmp_path) -> None:
    async def scenario() -> None:
        host = _host(tmp_path)
        _write(host)
        replica = host.replicas[KEY]
        cleaner, held = _held_cleaner(host)
        cleaner.start()
        await held.wait(replica.log.directory)
        pid = cleaner.threads[0].child.pid
        cleaner.stop()
        held.released.set()
        await _stop(cleaner)
        assert _cleaned_files(replica.log.directory) == []
        assert not _alive(pid) or os.waitpid(pid, os.WNOHANG)[0] == pid
        assert all(not w.thread.is_alive() for w in cleaner.threads)
        host.close()

    asyncio.run(scenario())


def test_the_processes_share_one_throttle_as_kafkas_threads_do() -> None:
    page = SharedPage()
    try:
        one, other = SharedThrottler(page, 1000.0), SharedThrottler(page, 1000.0)
        reference = Throttler(1000.0, now_ns=0)
        from pykraft.node.hosts import cleaner_child

        cleaner_child._THROTTLE.pack_into(page.map, 0, 0, 0.0)  # the same start as the reference
        steps = [(one, 3000, 100_000_000), (other, 2000, 200_000_000), (one, 0, 500_000_000),
                 (other, 100, 5_400_000_000), (one, 10_000, 5_900_000_000)]
        for throttler, amount, now in steps:
            assert throttler.observe(amount, now) == reference.observe(amount, now)
        assert one.observe(0, 6_000_000_000) == reference.observe(0, 6_000_000_000)
    finally:
        page.close()
