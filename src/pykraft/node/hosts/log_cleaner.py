"""`LogCleaner`: the broker's log cleaner threads (Kafka's `LogCleaner`), off the event loop, each running its
passes in a child process (cleaner_child.py) so that decoding logs never holds the broker's GIL.

`log.cleaner.threads` threads (none when `log.cleaner.enable=false`), so as many passes at once, each thread's
process with its own offset map of `log.cleaner.dedupe.buffer.size / threads` bytes and I/O buffers of
`log.cleaner.io.buffer.size / threads / 2`, all sharing one throttle of `log.cleaner.io.max.bytes.per.second`.
A thread loops: ask the event loop for the dirtiest compacted partition (`CleanerManager.plan` runs there, where
the logs live), hand the pass to its process (storage/cleaner.py there: it reads the segment files and writes
`.cleaned` files), have each swap done on the loop (`CleanerManager.swap`, refused if the log was truncated,
deleted or paused meanwhile), then `done` on the loop (the checkpoint). A truncation, deletion, pause or move of
the partition stops the process's pass at once (`CleanerManager.on_abort`), its `.cleaned` files removed. With
nothing to clean it waits `log.cleaner.backoff.ms`. Every replica on the broker is cleaned, leader or follower,
each on its own high watermark, as in Kafka. A pass that fails marks its partition uncleanable.

Each pass logs one line with the bytes read and written and the time it took; `metrics()` gives Kafka's gauges
(`kafka.log:type=LogCleaner` and `type=LogCleanerManager`, node/runtime/metrics.py renders them).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pykraft.node.hosts.cleaner_child import ChildConfig, CleanerChild, ChildFailed, SharedPage
from pykraft.storage.cleaner import CleanerStats, CleaningAborted, CleanTask
from pykraft.storage.cleaner_manager import CleanableLog, CleanerManager, CompactionSettings
from pykraft.storage.compaction_rules import ProducerLast
from pykraft.storage.offset_map import new_offset_map
from pykraft.storage.segment_swap import CleanedSegment

if TYPE_CHECKING:
    from pykraft.node.hosts.partitions import PartitionHost, Replica

_log = logging.getLogger("pykraft.node.log_cleaner")
_MB = 1024 * 1024


@dataclass(frozen=True, slots=True)
class CleanerConfig:
    """Kafka's CleanerConfig, from server.properties."""

    enable: bool = True  # log.cleaner.enable
    threads: int = 1  # log.cleaner.threads
    dedupe_buffer_size: int = 128 * _MB  # log.cleaner.dedupe.buffer.size
    io_buffer_size: int = 512 * 1024  # log.cleaner.io.buffer.size
    load_factor: float = 0.9  # log.cleaner.io.buffer.load.factor
    max_io_bytes_per_second: float = 1.7976931348623157e308  # log.cleaner.io.max.bytes.per.second
    backoff_ms: int = 15_000  # log.cleaner.backoff.ms

    @classmethod
    def of(cls, raw: Mapping[str, Any]) -> CleanerConfig:
        """ValueError names a value Kafka's CleanerConfig refuses."""
        values: dict[str, Any] = {}
        for name, key, kind, least in (("threads", "log.cleaner.threads", int, 0),
                                       ("dedupe_buffer_size", "log.cleaner.dedupe.buffer.size", int, None),
                                       ("io_buffer_size", "log.cleaner.io.buffer.size", int, 0),
                                       ("load_factor", "log.cleaner.io.buffer.load.factor", float, None),
                                       ("max_io_bytes_per_second", "log.cleaner.io.max.bytes.per.second", float,
                                        None),
                                       ("backoff_ms", "log.cleaner.backoff.ms", int, 0)):
            text = str(raw.get(key, "")).strip()
            if not text:
                continue
            try:
                value = kind(text)
            except ValueError:
                raise ValueError(f"{key}: {text!r} is not a number") from None
            if least is not None and value < least:
                raise ValueError(f"{key}: {value} is below the minimum {least}")
            values[name] = value
        enable = str(raw.get("log.cleaner.enable", "true")).strip().lower()
        if enable not in ("true", "false"):
            raise ValueError(f"log.cleaner.enable: {enable!r} is not true or false")
        config = cls(enable=enable == "true", **values)
        if config.enable and config.threads > 0:
            new_offset_map(config.dedupe_buffer_size // config.threads, config.load_factor)  # Kafka's check at start
        return config


def compaction_settings(replica: Replica) -> CompactionSettings:
    s = replica.settings
    return CompactionSettings(s.min_cleanable_ratio, s.min_compaction_lag_ms, s.max_compaction_lag_ms,
                              s.delete_retention_ms, s.segment_bytes, s.segment_index_bytes, s.delete)


class _Thread:
    def __init__(self, index: int, child: CleanerChild) -> None:
        self.index = index
        self.child = child
        self.task: CleanTask | None = None  # the pass under way
        self.last_stats = CleanerStats(start=0.0, end=0.0)
        self.last_delay_ms = 0
        self.failed = False
        self.thread: threading.Thread | None = None


class LogCleaner:
    STOP_GRACE_S = 2.0  # how long a stopping cleaner waits for a process to end its pass before killing it

    def __init__(self, config: CleanerConfig, host: PartitionHost, log_dirs: tuple[str, ...],
                 clock_ms: Callable[[], int], *, abort_grace_s: float = 5.0) -> None:
        self.config = config
        self.host = host
        self.manager = CleanerManager(log_dirs)
        self.manager.on_abort = self._abort_pass
        self.clock_ms = clock_ms
        self.abort_grace_s = abort_grace_s
        self.page: SharedPage | None = None
        self.threads: list[_Thread] = []
        self.last_run_ms = clock_ms()
        self._planned: dict[tuple[str, int], Any] = {}  # key -> the FileLog a running pass was planned on
        self._stopped = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None

    # ---- lifecycle (event loop) --------------------------------------------------------------------------------
    def start(self) -> None:
        if not self.config.enable or self.config.threads <= 0:
            _log.info("the log cleaner is disabled (log.cleaner.enable=%s, log.cleaner.threads=%d)",
                      str(self.config.enable).lower(), self.config.threads)
            return
        self._loop = asyncio.get_running_loop()
        c = self.config
        self.page = SharedPage()
        child_config = ChildConfig(min(c.dedupe_buffer_size // c.threads, (1 << 31) - 1), c.load_factor,
                                   c.io_buffer_size // c.threads // 2, c.max_io_bytes_per_second)
        for index in range(c.threads):
            worker = _Thread(index, CleanerChild(index, child_config, self.page, grace_s=self.abort_grace_s))
            worker.thread = threading.Thread(target=self._run, args=(worker,), daemon=True,
                                             name=f"kafka-log-cleaner-thread-{index}")
            self.threads.append(worker)
            worker.thread.start()
        _log.info("started the log cleaner: %d threads, each with its cleaner process", c.threads)

    def stop(self) -> None:
        """Ends the threads at their next step and their processes' passes at once: a pass under way swaps nothing
        more (its `.cleaned` files are removed by its process, by its thread, or by the next open)."""
        self._stopped.set()
        for worker in self.threads:
            worker.child.abort()

    def join(self, timeout_s: float) -> None:
        """For tests: wait for the threads (never from the event loop while a pass may wait on it)."""
        for worker in self.threads:
            if worker.thread is not None:
                worker.thread.join(timeout_s)

    def _abort_pass(self, key: tuple[str, int]) -> None:
        """CleanerManager.on_abort: the partition's pass stops now (its thread also polls the manager)."""
        for worker in self.threads:
            if worker.task is not None and worker.task.key == key:
                worker.child.abort()

    # ---- the thread --------------------------------------------------------------------------------------------
    def _run(self, worker: _Thread) -> None:
        try:
            while not self._stopped.is_set():
                try:
                    cleaned = self._one_pass(worker)
                except CleaningAborted:
                    cleaned = False
                except (OSError, ChildFailed) as exc:  # a checkpoint not written, a process not started: retry
                    _log.error("log cleaner thread %d: %s; trying again after log.cleaner.backoff.ms", worker.index,
                               exc)
                    cleaned = False
                except Exception:  # a bug must not kill the thread silently (Kafka's DeadThreadCount)
                    _log.exception("log cleaner thread %d failed", worker.index)
                    worker.failed = True
                    return
                if not cleaned:
                    self._stopped.wait(self.config.backoff_ms / 1000)
        finally:
            worker.child.close(self.STOP_GRACE_S)

    def _one_pass(self, worker: _Thread) -> bool:
        task = self._on_loop(self._plan)
        if task is None:
            return False
        worker.last_delay_ms = self.manager.last_delay_ms
        worker.task = task
        end: int | None = None
        started = False
        try:
            if worker.child.process is None:  # started with the first pass it has: a broker with no compacted
                worker.child.start(self._stopped.is_set)  # log due for cleaning starts no process
            started = True
            end, stats = worker.child.clean(task, self._swap_on_loop, lambda: self._aborted(task))
            worker.last_stats = stats
            _log.info("%s", pass_line(worker.index, task, end, stats))
        except CleaningAborted:
            pass
        except Exception as exc:  # Kafka marks the partition uncleanable and goes on
            if not started:
                raise  # no process to run it: the thread tries again after its backoff
            if not self._aborted(task):
                _log.warning("unexpected exception when cleaning %s-%d, marking it uncleanable: %s", *task.key, exc)
                self.manager.mark_uncleanable(task.log_dir, task.key)
        finally:
            worker.task = None
            self._on_loop(lambda: self._done(task, end), allow_stopped=True)
        return True

    def _aborted(self, task: CleanTask) -> bool:
        if self._stopped.is_set():
            return True
        try:
            self.manager.check_aborted(task.key)
        except CleaningAborted:
            return True
        return False

    def _swap_on_loop(self, task: CleanTask, cleaned: CleanedSegment, old_bases: list[int]) -> bool:
        return self._on_loop(lambda: self.swap(task, cleaned, old_bases))

    def _on_loop(self, fn: Callable[[], Any], allow_stopped: bool = False) -> Any:
        """Run `fn` on the event loop and wait for its result. CleaningAborted once stopped."""
        if (self._stopped.is_set() and not allow_stopped) or self._loop is None:
            raise CleaningAborted()
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()

        def call() -> None:
            try:
                future.set_result(fn())
            except BaseException as exc:  # handed to the waiting thread
                future.set_exception(exc)

        try:
            self._loop.call_soon_threadsafe(call)
        except RuntimeError:  # the loop is closed
            raise CleaningAborted() from None
        while True:
            try:
                return future.result(timeout=0.2)
            except concurrent.futures.TimeoutError:
                if self._stopped.is_set():
                    raise CleaningAborted() from None

    # ---- on the event loop -------------------------------------------------------------------------------------
    def _plan(self) -> CleanTask | None:
        host = self.host
        if self._stopped.is_set() or host.logs is None:
            return None
        offered = []
        for key, replica in host.replicas.items():
            log_dir = host.logs.dir_of(*key)
            if replica.settings.compact and log_dir is not None:
                offered.append(CleanableLog(key, log_dir, replica.log, compaction_settings(replica),
                                            functools.partial(_producers, replica),
                                            replica.producers.last_stable_offset(replica.log.high_watermark())))
        self.manager.keep_only(host.replicas)
        self.last_run_ms = self.clock_ms()
        task = self.manager.plan(offered, self.last_run_ms)
        if task is not None:
            self._planned[task.key] = host.replicas[task.key].log
        return task

    def swap(self, task: CleanTask, cleaned: CleanedSegment, old_bases: list[int]) -> bool:
        replica = self.host.replicas.get(task.key)
        log = self._planned.get(task.key)
        if self._stopped.is_set() or replica is None or replica.log is not log:
            cleaned.discard()
            return False
        return self.manager.swap(log, task, cleaned, old_bases)

    def _done(self, task: CleanTask, end: int | None) -> None:
        self._planned.pop(task.key, None)
        self.manager.done(task, end)

    # ---- metrics -----------------------------------------------------------------------------------------------
    def metrics(self, now_ms: int) -> dict[str, float]:
        """Kafka's LogCleaner and LogCleanerManager gauges (without tags), by Kafka's names."""
        stats = [w.last_stats for w in self.threads]
        read, written = sum(s.bytes_read for s in stats), sum(s.bytes_written for s in stats)
        return {
            "max-buffer-utilization-percent": int(max((s.buffer_utilization for s in stats), default=0.0) * 100),
            "cleaner-recopy-percent": int(100 * written / max(read, 1)),
            "max-clean-time-secs": int(max((s.elapsed_s for s in stats), default=0.0)),
            "max-compaction-delay-secs": int(max((w.last_delay_ms for w in self.threads), default=0) / 1000),
            "DeadThreadCount": sum(1 for w in self.threads if w.failed),
            "max-dirty-percent": int(100 * self.manager.dirtiest_ratio),
            "time-since-last-run-ms": max(0, now_ms - self.last_run_ms),
        }


def _producers(replica: Replica) -> dict[int, ProducerLast]:
    return {pid: ProducerLast(last, epoch) for pid, (last, epoch) in replica.producers.last_batches().items()}


def pass_line(thread: int, task: CleanTask, end: int, stats: CleanerStats) -> str:
    """Kafka's per-pass report, on one line."""
    def mb(n: float) -> float:
        return n / _MB

    total, index = stats.elapsed_s, stats.map_elapsed_s
    clean = max(total - index, 1e-9)
    return (f"Log cleaner thread {thread} cleaned log {task.key[0]}-{task.key[1]} (dirty section = "
            f"[{task.first_dirty}, {end}]): {mb(stats.bytes_read):,.1f} MB of log processed in {total:,.1f} seconds "
            f"({mb(stats.bytes_read) / max(total, 1e-9):,.1f} MB/sec); indexed {mb(stats.map_bytes_read):,.1f} MB in "
            f"{index:.1f} seconds; buffer utilization {100 * stats.buffer_utilization:.1f}%; cleaned "
            f"{mb(stats.bytes_read):,.1f} MB in {total - index:.1f} seconds ({mb(stats.bytes_read) / clean:,.1f} "
            f"MB/sec); start size {mb(stats.bytes_read):,.1f} MB ({stats.messages_read:,d} messages), end size "
            f"{mb(stats.bytes_written):,.1f} MB ({stats.messages_written:,d} messages); read "
            f"{stats.bytes_read} bytes, wrote {stats.bytes_written} bytes; "
            f"{100 * (1 - stats.bytes_written / max(stats.bytes_read, 1)):.1f}% size reduction "
            f"({100 * (1 - stats.messages_written / max(stats.messages_read, 1)):.1f}% fewer messages)")
