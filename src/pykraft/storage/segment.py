"""One log segment: a `.log` file of whole record batches plus its sparse indexes.

Appends go to the page cache with one `os.write` per append call; `sync()` makes them durable. Reads use
`os.preadv` into one buffer and return memoryview slices of it, except reads of the last chunks appended with
`keep=True`, served from memory (tail_cache.py); a consumer's read (`read_region`) reads headers only and hands
back a region of the file for the server to send (net/file_send.py maps it for the one synchronous write and
checks its size first). The log files are deliberately not mmapped for reads:
truncating a file under a live mapping turns a later access into SIGBUS, and callers may hold a read's
memoryview across a truncation.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass

from pykraft.protocol.framing import FileRegion

from .files import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, pread_exact, segment_name, sync_data
from .index import SegmentIndex
from .tail_cache import TailCache

# base offset, length, partition leader epoch, magic, crc, attributes, last offset delta, base ts, max ts
HEADER = struct.Struct(">qiibIhiqq")
_NEXT = struct.Struct(">qi11si")  # base offset, length, 11 bytes skipped, last offset delta
LOG_OVERHEAD = 12


@dataclass(frozen=True, slots=True)
class BatchInfo:
    """Header fields of one batch, as the log needs them."""

    position: int  # byte offset in the buffer it was parsed from
    size: int
    base_offset: int
    last_offset: int
    epoch: int
    max_timestamp: int


def parse_header(buffer: memoryview | bytes | bytearray, position: int) -> BatchInfo:
    base, length, epoch, _magic, _crc, _attrs, delta, _base_ts, max_ts = HEADER.unpack_from(buffer, position)
    return BatchInfo(position, length + LOG_OVERHEAD, base, base + delta, epoch, max_ts)


class Segment:
    """A segment file, open for reading and appending. Single-threaded apart from `fd` used by flush tickets."""

    def __init__(self, directory: str, base_offset: int, index_interval: int, path: str | None = None) -> None:
        """`path`: the file to open instead of `<base>.log` (an open finishing an interrupted cleaner swap reads
        the `.log.swap` it is about to rename; segment_swap.py)."""
        self.base_offset = base_offset
        self.path = path or os.path.join(directory, segment_name(base_offset, LOG_SUFFIX))
        self.index = SegmentIndex(
            base_offset,
            os.path.join(directory, segment_name(base_offset, INDEX_SUFFIX)),
            os.path.join(directory, segment_name(base_offset, TIME_INDEX_SUFFIX)),
            index_interval,
        )
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        self.size = 0
        self.next_offset = base_offset
        self.first_timestamp = -1  # max timestamp of the first batch: the age used for time-based roll
        self.dirty = False
        self.tail = TailCache()

    # ---- writing ---------------------------------------------------------------------------------------------
    def append(self, data: memoryview, batches: list[BatchInfo], keep: bool = False) -> None:
        """Write whole batches (already validated) at the end of the file, and index them. `keep`: the caller
        never changes `data` again, so reads of it may be served from memory (tail_cache.py)."""
        offset_entries = bytearray()
        time_entries = bytearray()
        position = self.size
        for batch in batches:
            o, t = self.index.observe(position, batch.last_offset, batch.max_timestamp, batch.size)
            offset_entries += o
            time_entries += t
            position += batch.size
        # Positional write at our own idea of the end: after a truncation the file offset must not matter.
        written = 0
        while written < len(data):
            written += os.pwrite(self.fd, data[written:], self.size + written)
        self.index.write(offset_entries, time_entries)
        if keep:
            self.tail.add(self.size, data, batches)
        else:
            self.tail.clear()  # the cache holds the file's last bytes only
        if self.size == 0:
            self.first_timestamp = batches[0].max_timestamp
        self.size = position
        self.next_offset = batches[-1].last_offset + 1
        self.dirty = True

    def seal(self) -> None:
        """This segment stops being the active one: make it and its indexes durable before a newer one exists,
        so that a damaged batch in any segment but the last can never be a torn write."""
        self.tail.clear()
        self.index.write(b"", self.index.seal_entry())
        sync_data(self.fd)
        self.index.sync()
        self.dirty = False

    def truncate_to(self, position: int, next_offset: int) -> None:
        """Cut the file at `position` (a batch boundary) and repair the indexes."""
        os.ftruncate(self.fd, position)
        self.tail.truncate(position)
        self.size = position
        self.next_offset = next_offset
        self.index.truncate_to(position, next_offset)
        start = self.index.last_entry_position()
        for batch in self.iter_headers(start, position):
            self.index.replay(batch.last_offset, batch.max_timestamp, batch.size)
        if position == 0:
            self.first_timestamp = -1
        self.dirty = True

    # ---- reading ---------------------------------------------------------------------------------------------
    def iter_headers(self, start: int, end: int) -> Iterator[BatchInfo]:
        """Headers of the batches between byte positions `start` and `end` (both batch boundaries, validated)."""
        position = start
        while position < end:
            chunk = pread_exact(self.fd, min(end - position, 1 << 20), position)
            pos = 0
            while pos + HEADER.size <= len(chunk):
                info = parse_header(chunk, pos)
                yield BatchInfo(position + pos, info.size, info.base_offset, info.last_offset, info.epoch,
                                info.max_timestamp)
                pos += info.size  # may step past the chunk: only headers are needed
            assert pos > 0, f"no batch header at {self.path}:{position}"
            position += pos

    def locate(self, offset: int) -> tuple[int, BatchInfo | None]:
        """(position, header) of the first batch whose last offset is >= `offset`; (size, None) if none."""
        for batch in self.iter_headers(self.index.lookup(offset), self.size):
            if batch.last_offset >= offset:
                return batch.position, batch
        return self.size, None

    def read(self, offset: int, max_bytes: int) -> tuple[memoryview | bytes, int, bool] | None:
        """Whole batches from the one holding `offset` (or the first after it: a cleaned log has offset gaps), up
        to `max_bytes` (at least one batch); None when no batch of this segment ends at or after `offset`.

        Returns the bytes, the base offset of the first batch and whether the read reached the segment's end.
        The first batch is found from headers alone (`_batch_holding`), then one pread takes the data; or, for
        the chunks just appended with `keep`, no syscall at all (from that one chunk).
        """
        cached = self.tail.read(offset, max_bytes)
        if cached is not None:
            view, base, end_position = cached
            return view, base, end_position == self.size
        holding = self._batch_holding(offset)
        if holding is None:
            return None
        position, first = holding
        buffer = pread_exact(self.fd, min(self.size - position, max(max_bytes, first.size)), position)
        end = first.size
        while end + HEADER.size <= len(buffer):  # the buffer holds at most max_bytes past the first batch
            size = parse_header(buffer, end).size
            if end + size > len(buffer):
                break
            end += size
        return memoryview(buffer)[:end], first.base_offset, position + end == self.size

    def read_region(self, offset: int, max_bytes: int, upper: int) -> FileRegion | None:
        """Whole batches from the one holding `offset` that end below `upper`, up to `max_bytes` (at least one
        batch), as a region of this file to send without reading it (framing.FileRegion, which owns a duplicate
        of `fd`); an empty region when the first batch ends at or past `upper`; None when no batch of this segment
        ends at or after `offset`. Only headers are read: the first batch's as `read` finds it, then 27 bytes of
        each next one (its base offset, length and last offset delta), as Kafka slices a FileRecords."""
        holding = self._batch_holding(offset)
        if holding is None:
            return None
        position, first = holding
        if first.last_offset >= upper:
            return FileRegion(-1, position, 0)
        end = position + first.size
        while end + _NEXT.size <= self.size:
            base, length, _, delta = _NEXT.unpack(os.pread(self.fd, _NEXT.size, end))
            size = length + LOG_OVERHEAD
            if base + delta >= upper or end + size - position > max_bytes or end + size > self.size:
                break
            end += size
        return FileRegion(os.dup(self.fd), position, end - position)

    def _batch_holding(self, offset: int) -> tuple[int, BatchInfo] | None:
        """(position, header) of the first batch whose last offset is >= `offset`, by reading headers only; None
        past the last batch. The index names the batch that *ends* at or before `offset`, often the whole batch
        before the wanted one: reading data from there read (and copied) a large batch twice."""
        position = self.index.lookup(offset)
        while position < self.size:
            chunk = pread_exact(self.fd, min(self.size - position, self.index.interval + HEADER.size), position)
            assert len(chunk) >= HEADER.size, f"a cut batch header at {self.path}:{position}"
            pos = 0
            while pos + HEADER.size <= len(chunk):
                info = parse_header(chunk, pos)
                if info.last_offset >= offset:
                    return position + pos, info
                pos += info.size
            position += pos
        return None

    # ---- lifecycle -------------------------------------------------------------------------------------------
    def close(self) -> None:
        self.tail.clear()
        self.index.close()
        os.close(self.fd)

    def delete(self) -> None:
        self.tail.clear()
        self.index.delete_files()
        os.close(self.fd)
        os.unlink(self.path)
