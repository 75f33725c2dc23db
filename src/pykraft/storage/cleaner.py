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
Reads are in chunks of the I/O buffer (grown to fit one larger batch), throttled by the shared `Throttler`; on the
fast path a chunk is a window of up to `_MAX_WINDOW` where the dedupe buffer has room the pass's map table leaves
(`_window`), read into one reused buffer. Each chunk goes through cleaner_chunks.py's numpy paths (the map's
records, the filter), batch by batch only where a batch needs it. The map's read keeps the rows of the records it
mapped, with their places in the segment files (cleaner_mapped.py, in the same room), and the header fields of the
batches it mapped (cleaner_skips.py): the rewrite does not read the long runs of batches dropped whole, decides the
others from the rows and rebuilds those that keep some records from the rows' places (records/rebuild_many.py),
and scans again only the batches the rows do not cover (segments below the dirty section, compressed batches kept
in part, batches past a full map). Each cleaned segment is fsynced while the next group is rewritten, and swapped
in after (cleaned_swaps.py). `fast=False` takes the record-by-record
path everywhere (`filter_batch`: the reference the fast path is tested against, and what it falls back to for
control batches, discarded ones and malformed chunks).
A broker runs passes in a child process (node/hosts/cleaner_child.py), so that decoding never holds its GIL.
Without a working numpy (a platform with no wheel of it) every pass takes the record-by-record path over a
`PlainOffsetMap` (offset_map.py): slower, the same segments.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from typing import Any

from pykraft.records import RecordBatch, iter_batches
from pykraft.records.rebuild import empty_batch, rebuild_batch, record_keys, records_section

from .cleaner_txns import Item, Verdict, marker_type, transaction_seam, verdict_of
from .compaction_rules import (BatchRetention, TransactionSeam, batch_retention,
                               group_segments_by_size, needs_delete_horizon, retained_records, segments_between)
from .key_hash import PAD_BYTES, np  # np: loaded at first use (records/lazy_numpy.py)
from .offset_map import HAVE_NUMPY, OffsetMap, PlainOffsetMap, RateLimiter, Throttler
from .cleaned_swaps import CleanedSwaps
from .cleaned_writer import CleanedWriter
from .cleaner_task import CleanerHost, CleanerStats, CleaningAborted, CleanTask, SourceSegment
from .segment_swap import CleanedSegment

if HAVE_NUMPY:
    from .cleaner_chunks import filter_scanned, kept_records, map_chunk, needs_rebuild, rebuilt_columns, scan_chunk
    from .cleaner_mapped import ROW_BYTES, MappedRecords
    from .cleaner_skips import DroppedBatches

_PREFIX_SIZE = 12
_MAX_WINDOW = 8 << 20  # a window beyond a segment's default size gains little more
_SKIP_SHARE = 16  # the rewrite skips runs of dropped batches of a sixteenth of a window at least (cleaner_skips.py)
_ROW_BYTES = 160  # a record's columns and the scan's temporaries (record_scan.py, cleaner_chunks.py), about


class Cleaner:
    def __init__(self, offset_map: OffsetMap | PlainOffsetMap, io_buffer_size: int, throttler: RateLimiter, *,
                 clock_ns: Callable[[], int] = time.monotonic_ns, sleep: Callable[[float], None] = time.sleep,
                 seam_factory: Callable[[Any], TransactionSeam] = transaction_seam, fast: bool = True) -> None:
        self.offset_map = offset_map
        self.io_buffer_size = max(io_buffer_size, 1024)
        self.throttler = throttler
        self._clock_ns = clock_ns
        self._sleep = sleep
        self._seam_factory = seam_factory
        self.fast = fast and HAVE_NUMPY and isinstance(offset_map, OffsetMap)
        self._buffer = bytearray()
        self._mapped: MappedRecords | None = None  # during a pass on the fast path
        self._dropped: DroppedBatches | None = None  # ditto: the batches the rewrite need not read

    # ---- the pass ----------------------------------------------------------------------------------------------
    def clean(self, task: CleanTask, host: CleanerHost) -> tuple[int, CleanerStats]:
        """Clean `task`'s log. Returns the first offset not cleaned (the next pass's first dirty offset) and the
        stats. Raises CleaningAborted, or OSError / RecordsError for a failure the owner reports."""
        stats = CleanerStats()
        try:
            end = self._build_map(task, host, stats)
            mapped, dropped = self._mapped, self._dropped
            if mapped is not None and dropped is not None:
                assert isinstance(self.offset_map, OffsetMap)  # self.fast: the flat map
                mapped.seal(self.offset_map)
                if mapped.sealed:
                    dropped.seal(mapped.offsets, mapped.bases, mapped.stay_rows, producers=task.producers,
                                 upper_bound=task.first_uncleanable, min_run_bytes=self._window() // _SKIP_SHARE)
            stats.map_done = time.monotonic()
            return self._rewrite(task, host, stats, end)
        finally:
            self._mapped = self._dropped = None

    def _rewrite(self, task: CleanTask, host: CleanerHost, stats: CleanerStats, end: int) -> tuple[int, CleanerStats]:
        facts = [s.facts for s in task.segments if s.facts.base_offset < end]
        by_base = {s.facts.base_offset: s for s in task.segments}
        seam = self._seam_factory(task.aborted)
        swaps = CleanedSwaps(lambda cleaned, bases: host.swap(task, cleaned, bases), CleaningAborted)
        try:
            for group in group_segments_by_size(facts, task.segment_bytes, task.max_index_bytes,
                                                task.first_uncleanable):
                kept_before = len(getattr(seam, "kept_aborted", ()))
                cleaned = self._clean_group(task, host, [by_base[f.base_offset] for f in group], seam, stats)
                # The aborted transactions whose markers this group kept (their batches went): its .txnindex.
                cleaned.aborted = tuple(getattr(seam, "kept_aborted", ())[kept_before:])
                swaps.add(cleaned, [f.base_offset for f in group])  # synced meanwhile, swapped after the next
            swaps.finish()
        except BaseException:
            swaps.discard()
            raise
        stats.buffer_utilization = self.offset_map.utilization
        stats.end = time.monotonic()
        return end, stats

    def _build_map(self, task: CleanTask, host: CleanerHost, stats: CleanerStats) -> int:
        """Kafka's `buildOffsetMap`: key -> last offset over [first dirty, first uncleanable), until the map is
        full. Returns the end of what was mapped (latest mapped offset + 1)."""
        omap = self.offset_map
        omap.clear(task.first_uncleanable - task.first_dirty)  # no more keys than offsets
        if self.fast:  # the rows kept for the rewrite take what the table leaves of the buffer
            self._mapped = MappedRecords(self._room() // 2 // ROW_BYTES)  # half: the windows take a quarter
            self._dropped = DroppedBatches()
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
        for chunk, items, at in self._chunks(task, host, source, position, stats, mapping=True):
            if self._map_chunk(chunk, items, at, task.first_dirty, seam, stats, source.facts.base_offset):
                return True
        self.offset_map.update_latest_offset(upper - 1)  # across an offset gap to the next segment
        return False

    def _map_chunk(self, chunk: memoryview, items: list[Item], chunk_position: int, start: int,
                   seam: TransactionSeam, stats: CleanerStats, segment: int = -1) -> bool:
        """Map one chunk's batches (read at `chunk_position` of the segment at `segment`); True when the map
        filled up."""
        omap = self.offset_map
        aborted = [False] * len(items)  # the seam's answers, asked in log order before any record is mapped
        data = []
        for i, (_, batch) in enumerate(items):
            if batch.is_control:
                seam.on_control_batch_read(batch.producer_id, batch.last_offset, marker_type(batch))
            elif seam.on_batch_read(batch.producer_id, batch.is_transactional, batch.last_offset):
                aborted[i] = True  # an aborted transaction's batch is never mapped
            else:
                data.append(i)
        scanned = scan_chunk(chunk, items, data, padded=True) if self.fast and data else None
        full_at = -1
        if scanned is not None:
            assert isinstance(omap, OffsetMap)  # self.fast: the flat map
            stop = map_chunk(omap, scanned, start, self._mapped, chunk_position)
            full_at = len(items) if stop is None else data[stop]
            noted = data if stop is None else data[:stop]
            if self._dropped is not None and self._mapped is not None and self._mapped.reserve(len(noted)):
                self._dropped.note(segment, chunk_position, chunk, [items[i][0] for i in noted])
            if stop is None and len(data) == len(items):  # the usual chunk: every batch a data batch, all mapped
                stats.map_messages_read += sum(batch.record_count for _, batch in items)
                last = max(batch.last_offset for _, batch in items)
                if last >= start:
                    omap.update_latest_offset(last)
                return False
        for i, (_, batch) in enumerate(items):
            count = batch.record_count
            if batch.is_control:
                stats.map_messages_read += 1
            elif aborted[i]:
                stats.map_messages_read += count
            else:
                if i == full_at or (scanned is None and omap.put_records(
                        batch.base_offset, record_keys(records_section(batch), count), start)):
                    return True
                stats.map_messages_read += count
            if batch.last_offset >= start:
                omap.update_latest_offset(batch.last_offset)
        return False

    # ---- rewriting a group -------------------------------------------------------------------------------------
    def _clean_group(self, task: CleanTask, host: CleanerHost, group: list[SourceSegment], seam: TransactionSeam,
                     stats: CleanerStats) -> CleanedSegment:
        writer = CleanedWriter(task.directory, group[0].facts.base_offset, task.index_interval, self.io_buffer_size)
        try:
            for source in group:
                for chunk, items, at in self._chunks(task, host, source, 0, stats, mapping=False):
                    written = 0
                    for out in self._filter_chunk(chunk, items, task, seam, stats, at):
                        if out is not None:
                            writer.append(out)
                            written += len(out)
                    self._throttle(written)
            return writer.finish(sync=False)  # cleaned_swaps.py syncs it while the next group is rewritten
        except BaseException:
            writer.discard()
            raise

    def _filter_chunk(self, chunk: memoryview, items: list[Item], task: CleanTask, seam: TransactionSeam,
                      stats: CleanerStats, chunk_position: int = 0) -> list[bytes | memoryview | None]:
        """What of each batch of the chunk (read at `chunk_position` of its segment) goes into the cleaned
        segment (see `filter_batch`)."""
        verdicts = [verdict_of(batch, seam, task.now_ms) for _, batch in items]
        data = [i for i, (_, batch) in enumerate(items) if not batch.is_control and not verdicts[i].discard_records]
        now = task.now_ms
        mapped = self._mapped
        known = {} if mapped is None else mapped.decide(items, data, verdicts, producers=task.producers,
                                                        upper_bound=task.first_uncleanable, now_ms=now, chunk=chunk,
                                                        chunk_position=chunk_position,
                                                        delete_retention_ms=task.delete_retention_ms)
        rest = [i for i in data if i not in known] if known else data
        scanned = scan_chunk(chunk, items, rest, padded=True) if self.fast and rest else None
        if scanned is None and rest:
            return [self._filter(batch, task, verdict, stats) for (_, batch), verdict in zip(items, verdicts)]
        if scanned is not None:
            tombstones_go = np.array([verdicts[i].horizon is not None and now >= verdicts[i].horizon  # type: ignore[operator]
                                      for i in rest], dtype=np.bool_)
            assert isinstance(self.offset_map, OffsetMap)  # self.fast: the flat map
            kept = kept_records(self.offset_map, scanned, tombstones_go)
            rebuilt = rebuilt_columns(scanned, kept, [needs_rebuild(items[i][1], kept.counts[k], kept.null_values[k],
                                                                    verdicts[i]) for k, i in enumerate(rest)])
        scanned_index = {i: k for k, i in enumerate(rest)}
        found: list[bytes | memoryview | None] = []
        for i, (_, batch) in enumerate(items):
            decided = known.get(i)
            k = scanned_index.get(i)
            if decided is not None:
                out, count = decided
            elif k is not None and scanned is not None:
                stats.invalid_messages += kept.invalid[k]
                out = filter_scanned(batch, k, scanned, kept, rebuilt, verdicts[i], producers=task.producers,
                                     upper_bound=task.first_uncleanable, now_ms=now,
                                     delete_retention_ms=task.delete_retention_ms)
                count = kept.counts[k]
            else:
                found.append(self._filter(batch, task, verdicts[i], stats))
                continue
            stats.bytes_read += batch.size_in_bytes
            stats.messages_read += batch.record_count
            if out is not None:
                stats.messages_written += count
                stats.bytes_written += len(out)
            found.append(out)
        return found

    def filter_batch(self, batch: RecordBatch, task: CleanTask, seam: TransactionSeam,
                     stats: CleanerStats) -> bytes | memoryview | None:
        """What of `batch` goes into the cleaned segment: its bytes, a rebuilt batch, an empty one, or None. The
        record-by-record path (a `KeyedRecord` per record)."""
        return self._filter(batch, task, verdict_of(batch, seam, task.now_ms), stats)

    def _filter(self, batch: RecordBatch, task: CleanTask, verdict: Verdict,
                stats: CleanerStats) -> bytes | memoryview | None:
        now, omap = task.now_ms, self.offset_map
        horizon, can_discard, discard_records = verdict.horizon, verdict.can_discard, verdict.discard_records
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
    def _chunks(self, task: CleanTask, host: CleanerHost, source: SourceSegment, position: int,
                stats: CleanerStats, *, mapping: bool) -> Iterator[tuple[memoryview, list[Item], int]]:
        """The whole batches of a segment from `position`, a chunk of the I/O buffer at a time (the chunk, each
        batch's position in it, and the chunk's in the file), each chunk throttled and checked for an abort. The
        rewrite neither reads nor yields the runs of batches the map's read found dropped whole
        (cleaner_skips.py): they count as processed."""
        end = source.facts.size
        dropped = None if mapping else self._dropped
        segment = source.facts.base_offset
        try:
            fd = os.open(source.path, os.O_RDONLY)
        except FileNotFoundError:
            raise CleaningAborted() from None
        try:
            window = self._window()
            chunk_size = window
            while position < end:
                host.check_aborted(task.key)
                limit = end
                if dropped is not None:
                    after, skipped, records = dropped.skip(segment, position)
                    if after > position:
                        stats.bytes_read += skipped
                        stats.messages_read += records
                        position = after
                        continue
                    limit = min(end, dropped.next_run(segment, position) or end)
                chunk = self._read(fd, min(chunk_size, limit - position), position)
                if len(chunk) < _PREFIX_SIZE + PAD_BYTES:
                    raise CleaningAborted()  # the file shrank under us: a truncation is on its way
                items: list[Item] = []
                whole = cost = 0
                for batch in iter_batches(chunk[:-PAD_BYTES], verify_crc=False, allow_truncated_tail=True):
                    cost += batch.size_in_bytes + _ROW_BYTES * batch.record_count
                    if items and cost > window:
                        break  # the rest is read again with the next window
                    items.append((whole, batch))
                    whole += batch.size_in_bytes
                if whole == 0:  # one batch larger than the buffer: read it whole (Kafka grows its buffers)
                    chunk_size = _PREFIX_SIZE + int.from_bytes(chunk[8:12], "big")
                    continue
                chunk_size = window
                yield chunk, items, position
                position += whole
                if mapping:
                    stats.map_bytes_read += whole
                self._throttle(whole)
        finally:
            os.close(fd)

    def _read(self, fd: int, size: int, position: int) -> memoryview:
        """Up to `size` bytes at `position` (short at the end of the file), then `PAD_BYTES` zeros (the scan reads
        whole words past a key): a view of the cleaner's read buffer, reused from window to window (a fresh buffer
        of megabytes costs its page faults at each read). The views of one window are done with before the
        next read."""
        if len(self._buffer) < size + PAD_BYTES:
            self._buffer = bytearray(size + PAD_BYTES)
        view = memoryview(self._buffer)
        done = 0
        while done < size:
            got = os.preadv(fd, [view[done:size]], position + done)
            if got == 0:
                break
            done += got
        view[done:done + PAD_BYTES] = bytes(PAD_BYTES)
        return view[:done + PAD_BYTES]

    def _window(self) -> int:
        """The bytes read and decoded at once: the I/O buffer, or more on the fast path (each numpy step then
        covers more records) where the dedupe buffer has room the pass's map table may not use (a pass over N
        offsets grows its table to 4N slots at most, offset_map.py). A window's batches are cut so that their
        bytes and their record columns (`_ROW_BYTES` a record) stay within it: with the map and the rows kept
        (cleaner_mapped.py), a pass keeps within the dedupe buffer. A throttled pass reads no more than the rate
        allows in one check interval of the throttle, so that it is paced read by read as Kafka's reads of
        I/O-buffer chunks are (one window of megabytes would pass unthrottled in a short pass)."""
        paced = self.throttler.rate_per_s * Throttler.CHECK_INTERVAL_NS / 1e9  # inf when unthrottled
        return max(self.io_buffer_size, int(min(_MAX_WINDOW, self._room() // 4, paced)))

    def _room(self) -> int:
        """The bytes of the dedupe buffer this pass's map table leaves (0 off the fast path)."""
        omap = self.offset_map
        return omap.memory_bytes - omap.table_bytes if self.fast and isinstance(omap, OffsetMap) else 0

    def _throttle(self, amount: int) -> None:
        if amount <= 0:
            return
        pause = self.throttler.observe(amount, self._clock_ns())
        if pause > 0:
            self._sleep(pause)
