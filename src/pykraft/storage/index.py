"""The sparse `.index` and `.timeindex` of a segment, in Kafka's byte format (reference §3.2).

- `.index`: 8-byte entries `relative offset int32 | position int32`. The offset is the *last* offset of the batch
  that starts at `position`, so a lookup for offset T takes the last entry with offset <= T and scans forward.
- `.timeindex`: 12-byte entries `timestamp int64 | relative offset int32`: the largest timestamp seen so far and the
  last offset of the batch that carries it; appended only when the timestamp grows.

Entries are added with Kafka's rule: before a batch is written, if more than `interval` bytes were written since
the last entry, that batch gets an entry. The rule is deterministic, so the expected entries can be recomputed
from the log alone: recovery compares them with the files and rewrites a missing or damaged index.

Index files are rebuildable, so they are not fsynced on every flush; segment roll and close sync them.
"""

from __future__ import annotations

import bisect
import os
import struct
from array import array

from .files import write_all

OFFSET_ENTRY = struct.Struct(">ii")
TIME_ENTRY = struct.Struct(">qi")


class SegmentIndex:
    """Both sparse indexes of one segment, in memory (for lookups) and in their files (for Kafka tools)."""

    def __init__(self, base_offset: int, index_path: str, time_index_path: str, interval: int) -> None:
        self.base_offset = base_offset
        self.index_path = index_path
        self.time_index_path = time_index_path
        self.interval = interval
        self._offsets = array("q")  # absolute last offsets, ascending
        self._positions = array("q")
        self._times = array("q")
        self._time_offsets = array("q")
        self.bytes_since_entry = 0
        self.max_timestamp = -1
        self.offset_of_max_timestamp = -1
        self._index_fd = -1
        self._time_fd = -1

    # ---- building --------------------------------------------------------------------------------------------
    def observe(self, position: int, last_offset: int, max_timestamp: int, size: int) -> tuple[bytes, bytes]:
        """Account for a batch about to be written at `position`. Returns the index bytes to append (maybe empty)."""
        if max_timestamp > self.max_timestamp:
            self.max_timestamp = max_timestamp
            self.offset_of_max_timestamp = last_offset
        offset_entry = time_entry = b""
        if self.bytes_since_entry > self.interval:
            self._offsets.append(last_offset)
            self._positions.append(position)
            offset_entry = OFFSET_ENTRY.pack(last_offset - self.base_offset, position)
            time_entry = self._maybe_time_entry()
            self.bytes_since_entry = 0
        self.bytes_since_entry += size
        return offset_entry, time_entry

    def _maybe_time_entry(self) -> bytes:
        if self._times and self.max_timestamp <= self._times[-1]:
            return b""
        self._times.append(self.max_timestamp)
        self._time_offsets.append(self.offset_of_max_timestamp)
        return TIME_ENTRY.pack(self.max_timestamp, self.offset_of_max_timestamp - self.base_offset)

    def seal_entry(self) -> bytes:
        """The last time-index entry Kafka adds when a segment stops being the active one."""
        return self._maybe_time_entry() if self.max_timestamp >= 0 else b""

    def expected_bytes(self) -> tuple[bytes, bytes]:
        """The exact content the two index files must have."""
        index = b"".join(OFFSET_ENTRY.pack(o - self.base_offset, p) for o, p in zip(self._offsets, self._positions))
        times = b"".join(TIME_ENTRY.pack(t, o - self.base_offset) for t, o in zip(self._times, self._time_offsets))
        return index, times

    # ---- files -----------------------------------------------------------------------------------------------
    def open_files(self) -> bool:
        """Open the files for appending; rewrite them if they differ from the entries. Returns whether rewritten."""
        index, times = self.expected_bytes()
        rewritten = False
        for path, want in ((self.index_path, index), (self.time_index_path, times)):
            try:
                with open(path, "rb") as f:
                    have = f.read()
            except FileNotFoundError:
                have = None
            if have != want:
                with open(path, "wb") as f:
                    f.write(want)
                rewritten = rewritten or have is not None or bool(want)  # a new empty index is no repair
        self._index_fd = os.open(self.index_path, os.O_WRONLY | os.O_APPEND)
        self._time_fd = os.open(self.time_index_path, os.O_WRONLY | os.O_APPEND)
        return rewritten

    def write(self, offset_entries: bytes | bytearray, time_entries: bytes | bytearray) -> None:
        if offset_entries:
            write_all(self._index_fd, offset_entries)
        if time_entries:
            write_all(self._time_fd, time_entries)

    def sync(self) -> None:
        os.fsync(self._index_fd)
        os.fsync(self._time_fd)

    def close(self) -> None:
        for fd in (self._index_fd, self._time_fd):
            if fd >= 0:
                os.close(fd)
        self._index_fd = self._time_fd = -1

    def delete_files(self) -> None:
        self.close()
        for path in (self.index_path, self.time_index_path):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass

    # ---- lookups and truncation ------------------------------------------------------------------------------
    def lookup(self, offset: int) -> int:
        """A byte position at or before the batch containing `offset`."""
        i = bisect.bisect_right(self._offsets, offset) - 1
        return self._positions[i] if i >= 0 else 0

    def last_entry_position(self) -> int:
        return self._positions[-1] if self._positions else 0

    def truncate_to(self, position: int, end_offset: int) -> None:
        """Drop entries for batches at or after `position` (offsets >= `end_offset`), in memory and on disk."""
        keep = bisect.bisect_left(self._positions, position)
        del self._offsets[keep:]
        del self._positions[keep:]
        keep_t = bisect.bisect_left(self._time_offsets, end_offset)
        del self._times[keep_t:]
        del self._time_offsets[keep_t:]
        os.ftruncate(self._index_fd, keep * OFFSET_ENTRY.size)
        os.ftruncate(self._time_fd, keep_t * TIME_ENTRY.size)
        # The running maximum restarts from what the kept time-index entries know; the caller replays the
        # batches after the last offset-index entry to restore it exactly.
        self.max_timestamp = self._times[-1] if self._times else -1
        self.offset_of_max_timestamp = self._time_offsets[-1] if self._time_offsets else -1
        self.bytes_since_entry = 0

    def replay(self, last_offset: int, max_timestamp: int, size: int) -> None:
        """Re-account a kept batch after truncation, without adding entries."""
        if max_timestamp > self.max_timestamp:
            self.max_timestamp = max_timestamp
            self.offset_of_max_timestamp = last_offset
        self.bytes_since_entry += size
