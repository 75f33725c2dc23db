"""Writing one cleaned segment (the cleaner's output, storage/cleaner.py) under `.cleaned` names, with Kafka's index
entries (index.py), in few large writes: batches are gathered in a buffer of the I/O buffer's size and written
when it fills; the log's bytes are made durable before any swap (segment_swap.py)."""

from __future__ import annotations

import os

from .files import sync_data
from .index import SegmentIndex
from .segment_swap import CLEANED_SUFFIX, CleanedSegment

_PREFIX_SIZE = 12


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
        self._offset_entries = bytearray()  # index entries wait with their batches: one write per file a flush
        self._time_entries = bytearray()
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
        self._offset_entries += offset_entry
        self._time_entries += time_entry
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
        self.index.write(self._offset_entries, self._time_entries)  # the entries of the batches just written
        self._offset_entries.clear()
        self._time_entries.clear()

    def finish(self, sync: bool = True) -> CleanedSegment:
        """Make the segment's records durable before any swap (Kafka's `cleaned.flush()`; `sync=False`: the
        caller does, cleaned_swaps.py). Its indexes are not synced: an open checks every index against the
        batches and rewrites a torn one (log_open.py), and the fsyncs of two small files per group were a third of
        a pass's time on large records."""
        self._flush()
        self.index.write(b"", self.index.seal_entry())
        if sync:
            sync_data(self.fd)
        return CleanedSegment(self.directory, self.base_offset, self.fd, self.index, self.size, self.next_offset,
                              self.first_timestamp)

    def discard(self) -> None:
        CleanedSegment(self.directory, self.base_offset, self.fd, self.index, self.size, self.next_offset,
                       self.first_timestamp).discard()
