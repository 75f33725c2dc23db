"""One cleaner pass over one log (Kafka's `Cleaner`): the offset map of the dirty section, then each group of
segments rewritten into one `.cleaned` segment and handed to the log's owner to swap in (segment_swap.py).

It runs on a cleaner thread (node/hosts/log_cleaner.py), never touching the `FileLog`: the owner plans the pass on
its own thread (`CleanTask`: the segments' paths and sizes, the dirty range, the settings, the active producers'
last batches) and carries out each swap there (`CleanerHost.swap`), after checking that the log was not truncated,
deleted or cleaned meanwhile. The segments are read by name: only this pass replaces them, and a truncation or a
deletion aborts it (`CleanerHost.check_aborted`, called between chunks).

Per record and per batch the rules are compaction_rules.py's. A batch whose records all stay (and needs no delete
horizon) is copied as it is; one that loses records is rebuilt around the kept ones (records/rebuild.py); an
emptied batch goes, unless it is an active producer's last or the round's last (then an empty batch stays).
Reads are in chunks of the I/O buffer (grown to fit one larger batch), throttled by the shared `Throttler`. The
thread holds the GIL while it decodes; the event loop gets it back within the interpreter's switch interval (5 ms)
whenever it waits for it (an explicit yield per chunk cost ~30% of a pass on a loaded machine: a sleep(0) gives
the core away).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from pykraft.records import RecordBatch, iter_batches
from pykraft.records.rebuild import delete_horizon, empty_batch, rebuild_batch, record_keys, records_section

from .cleaner_txns import marker_type, transaction_seam
from .compaction_rules import (
    BatchRetention,
    ProducerLast,
    SegmentFacts,
    TransactionSeam,
    batch_retention,
    group_segments_by_size,
    needs_delete_horizon,
    retained_records,
    segments_between,
)
from .files import pread_exact, sync_data
from .index import SegmentIndex
from .offset_map import OffsetMap, Throttler
from .segment_swap import CLEANED_SUFFIX, CleanedSegment
from .txn_index import AbortedTxn

_PREFIX_SIZE = 12


class CleaningAborted(Exception):
    """The log was truncated, deleted or paused during the pass: stop, swap nothing more."""


@dataclass(frozen=True, slots=True)
class SourceSegment:
    facts: SegmentFacts
    path: str


@dataclass(frozen=True, slots=True)
class CleanTask:
    """What a pass needs of one log, captured by its owner (cleaner_manager.py)."""

    key: tuple[str, int]
    log_dir: str
    directory: str
    segments: tuple[SourceSegment, ...]  # the sealed segments below `first_uncleanable`, oldest first
    first_dirty: int
    first_uncleanable: int
    dirty_position: int  # byte position in the segment holding `first_dirty` where its mapping starts
    delete_retention_ms: int
    segment_bytes: int
    max_index_bytes: int
    index_interval: int
    producers: Mapping[int, ProducerLast]
    now_ms: int
    layout_version: int
    aborted: tuple[AbortedTxn, ...] = ()  # the aborted transactions overlapping the cleanable range (.txnindex)


@dataclass(slots=True)
class CleanerStats:
    """Kafka's CleanerStats (times from the monotonic clock, in seconds)."""

    start: float = field(default_factory=time.monotonic)
    map_done: float = -1.0
    end: float = -1.0
    bytes_read: int = 0
    bytes_written: int = 0
    map_bytes_read: int = 0
    map_messages_read: int = 0
    messages_read: int = 0
    messages_written: int = 0
    invalid_messages: int = 0
    buffer_utilization: float = 0.0

    @property
    def elapsed_s(self) -> float:
        return max(self.end - self.start, 0.0)

    @property
    def map_elapsed_s(self) -> float:
        return max(self.map_done - self.start, 0.0)


class CleanerHost(Protocol):
    def check_aborted(self, key: tuple[str, int]) -> None: ...  # raises CleaningAborted

    def swap(self, task: CleanTask, cleaned: CleanedSegment, old_bases: list[int]) -> bool: ...


class Cleaner:
    def __init__(self, offset_map: OffsetMap, io_buffer_size: int, throttler: Throttler, *,
                 clock_ns: Callable[[], int] = time.monotonic_ns, sleep: Callable[[float], None] = time.sleep,
                 seam_factory: Callable[[Any], TransactionSeam] = transaction_seam) -> None:
        self.offset_map = offset_map
        self.io_buffer_size = max(io_buffer_size, 1024)
        self.throttler = throttler
        self._clock_ns = clock_ns
        self._sleep = sleep
        self._seam_factory = seam_factory

    # ---- the pass ----------------------------------------------------------------------------------------------
    def clean(self, task: CleanTask, host: CleanerHost) -> tuple[int, CleanerStats]:
        """Clean `task`'s log. Returns the first offset not cleaned (the next pass's first dirty offset) and the
        stats. Raises CleaningAborted, or OSError / RecordsError for a failure the owner reports."""
        stats = CleanerStats()
        end = self._build_map(task, host, stats)
        stats.map_done = time.monotonic()
        facts = [s.facts for s in task.segments if s.facts.base_offset < end]
        by_base = {s.facts.base_offset: s for s in task.segments}
        seam = self._seam_factory(task.aborted)
        for group in group_segments_by_size(facts, task.segment_bytes, task.max_index_bytes, task.first_uncleanable):
            kept_before = len(getattr(seam, "kept_aborted", ()))
            cleaned = self._clean_group(task, host, [by_base[f.base_offset] for f in group], seam, stats)
            # The aborted transactions whose markers this group kept (their batches went): its .txnindex.
            cleaned.aborted = tuple(getattr(seam, "kept_aborted", ())[kept_before:])
            if not host.swap(task, cleaned, [f.base_offset for f in group]):
                raise CleaningAborted()
        stats.buffer_utilization = self.offset_map.utilization
        stats.end = time.monotonic()
        return end, stats

    def _build_map(self, task: CleanTask, host: CleanerHost, stats: CleanerStats) -> int:
        """Kafka's `buildOffsetMap`: key -> last offset over [first dirty, first uncleanable), until the map is
        full. Returns the end of what was mapped (latest mapped offset + 1)."""
        omap = self.offset_map
        omap.clear()
        dirty = segments_between([s.facts for s in task.segments], task.first_dirty, task.first_uncleanable)
        by_base = {s.facts.base_offset: s for s in task.segments}
        bounds = [s.base_offset for s in dirty[1:]] + [task.first_uncleanable]
        seam = self._seam_factory(task.aborted)
        for facts, upper in zip(dirty, bounds):
            position = task.dirty_position if facts is dirty[0] else 0
            if self._map_segment(task, host, by_base[facts.base_offset], position, upper, seam, stats):
                break
        return omap.latest_offset + 1

    def _map_segment(self, task: CleanTask, host: CleanerHost, source: SourceSegment, position: int, upper: int,
                     seam: TransactionSeam, stats: CleanerStats) -> bool:
        omap, start = self.offset_map, task.first_dirty
        for batch in self._batches(task, host, source, position, stats, mapping=True):
            count = batch.record_count
            if batch.is_control:
                seam.on_control_batch_read(batch.producer_id, batch.last_offset, marker_type(batch))
                stats.map_messages_read += 1
            elif seam.on_batch_read(batch.producer_id, batch.is_transactional, batch.last_offset):
                stats.map_messages_read += count  # an aborted transaction's batch is never mapped
            else:
                records = record_keys(records_section(batch), count)
                if omap.put_records(batch.base_offset, records, start):
                    return True
                stats.map_messages_read += count
            if batch.last_offset >= start:
                omap.update_latest_offset(batch.last_offset)
        omap.update_latest_offset(upper - 1)  # across an offset gap to the next segment
        return False

    # ---- rewriting a group -------------------------------------------------------------------------------------
    def _clean_group(self, task: CleanTask, host: CleanerHost, group: list[SourceSegment], seam: TransactionSeam,
                     stats: CleanerStats) -> CleanedSegment:
        writer = CleanedWriter(task.directory, group[0].facts.base_offset, task.index_interval, self.io_buffer_size)
        try:
            for source in group:
                for batch in self._batches(task, host, source, 0, stats, mapping=False):
                    kept = self.filter_batch(batch, task, seam, stats)
                    if kept is not None:
                        writer.append(kept)
                        self._throttle(len(kept))
            return writer.finish()
        except BaseException:
            writer.discard()
            raise

    def filter_batch(self, batch: RecordBatch, task: CleanTask, seam: TransactionSeam,
                     stats: CleanerStats) -> bytes | memoryview | None:
        """What of `batch` goes into the cleaned segment: its bytes, a rebuilt batch, an empty one, or None."""
        now, omap = task.now_ms, self.offset_map
        horizon = delete_horizon(batch)
        if batch.is_control:
            can_discard = seam.on_control_batch_read(batch.producer_id, batch.last_offset, marker_type(batch))
            discard_records = can_discard and horizon is not None and horizon <= now
        else:
            can_discard = seam.on_batch_read(batch.producer_id, batch.is_transactional, batch.last_offset)
            discard_records = can_discard
        retention = batch_retention(producer_id=batch.producer_id, producer_epoch=batch.producer_epoch,
                                    is_control=batch.is_control, last_offset=batch.last_offset,
                                    next_offset=batch.next_offset, producers=task.producers,
                                    upper_bound=task.first_uncleanable, discard_records=discard_records)
        stats.bytes_read += batch.size_in_bytes
        if retention is BatchRetention.DELETE:
            return None
        body = records_section(batch)
        records = record_keys(body, batch.record_count)
        stats.messages_read += len(records)
        if discard_records:
            kept = []
        elif batch.is_control:
            kept = records
        else:
            kept, invalid = retained_records(records, batch.base_offset, latest_mapped=omap.latest_offset,
                                             key_offset_of=omap.get, delete_horizon_ms=horizon, now_ms=now)
            stats.invalid_messages += invalid
        if kept:
            tombstone = any(r.null_value for r in kept)
            set_horizon = needs_delete_horizon(horizon is not None, tombstone, can_discard and batch.is_control)
            if len(kept) == len(records) and not set_horizon:
                out: bytes | memoryview = batch.buffer
            else:
                out = rebuild_batch(batch, body, kept, now + task.delete_retention_ms if set_horizon else horizon)
        elif retention is BatchRetention.RETAIN_EMPTY:
            out = empty_batch(batch)
        else:
            return None
        stats.messages_written += len(kept)
        stats.bytes_written += len(out)
        return out

    # ---- reading -----------------------------------------------------------------------------------------------
    def _batches(self, task: CleanTask, host: CleanerHost, source: SourceSegment, position: int,
                 stats: CleanerStats, *, mapping: bool) -> Iterator[RecordBatch]:
        """The batches of a segment from `position`, read in I/O-buffer chunks, each chunk throttled and checked
        for an abort."""
        end = source.facts.size
        try:
            fd = os.open(source.path, os.O_RDONLY)
        except FileNotFoundError:
            raise CleaningAborted() from None
        try:
            chunk_size = self.io_buffer_size
            while position < end:
                host.check_aborted(task.key)
                chunk = pread_exact(fd, min(chunk_size, end - position), position)
                if len(chunk) < _PREFIX_SIZE:
                    raise CleaningAborted()  # the file shrank under us: a truncation is on its way
                whole = 0
                for batch in iter_batches(chunk, verify_crc=False, allow_truncated_tail=True):
                    yield batch
                    whole += batch.size_in_bytes
                if whole == 0:  # one batch larger than the buffer: read it whole (Kafka grows its buffers)
                    chunk_size = _PREFIX_SIZE + int.from_bytes(chunk[8:12], "big")
                    continue
                chunk_size = self.io_buffer_size
                position += whole
                if mapping:
                    stats.map_bytes_read += whole
                self._throttle(whole)
        finally:
            os.close(fd)

    def _throttle(self, amount: int) -> None:
        pause = self.throttler.observe(amount, self._clock_ns())
        if pause > 0:
            self._sleep(pause)


class CleanedWriter:
    """Writes one cleaned segment under `.cleaned` names with Kafka's index entries (index.py)."""

    def __init__(self, directory: str, base_offset: int, index_interval: int, buffer_size: int) -> None:
        name = f"{base_offset:020d}"
        self.directory, self.base_offset = directory, base_offset
        paths = [os.path.join(directory, f"{name}{suffix}{CLEANED_SUFFIX}") for suffix in (".log", ".index",
                                                                                         ".timeindex")]
        for path in paths:  # Kafka's createNewCleanedSegment: a stale one from an aborted pass goes
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        self.fd = os.open(paths[0], os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
        self.index = SegmentIndex(base_offset, paths[1], paths[2], index_interval)
        self.index.open_files()
        self._buffer = bytearray()
        self._buffer_size = buffer_size
        self.size = 0
        self.next_offset = base_offset
        self.first_timestamp = -1

    def append(self, batch: bytes | memoryview) -> None:
        view = memoryview(batch)
        base = int.from_bytes(view[0:8], "big", signed=True)
        length = int.from_bytes(view[8:12], "big")
        last = base + int.from_bytes(view[23:27], "big", signed=True)
        max_timestamp = int.from_bytes(view[35:43], "big", signed=True)
        offset_entry, time_entry = self.index.observe(self.size, last, max_timestamp, length + _PREFIX_SIZE)
        self.index.write(offset_entry, time_entry)
        if self.size == 0:
            self.first_timestamp = max_timestamp
        self._buffer += view
        self.size += len(view)
        self.next_offset = last + 1
        if len(self._buffer) >= self._buffer_size:
            self._flush()

    def _flush(self) -> None:
        view = memoryview(self._buffer)
        written = 0
        while written < len(view):
            written += os.pwrite(self.fd, view[written:], self.size - len(view) + written)
        view.release()
        self._buffer.clear()

    def finish(self) -> CleanedSegment:
        """Make the segment's records durable before any swap (Kafka's `cleaned.flush()`). Its indexes are not
        synced: an open checks every index against the batches and rewrites a torn one (log_open.py), and the
        fsyncs of two small files per group were a third of a pass's time on large records."""
        self._flush()
        self.index.write(b"", self.index.seal_entry())
        sync_data(self.fd)
        return CleanedSegment(self.directory, self.base_offset, self.fd, self.index, self.size, self.next_offset,
                              self.first_timestamp)

    def discard(self) -> None:
        CleanedSegment(self.directory, self.base_offset, self.fd, self.index, self.size, self.next_offset,
                       self.first_timestamp).discard()
