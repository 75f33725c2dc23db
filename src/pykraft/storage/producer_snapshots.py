"""The producer-state snapshot files of a partition directory: `<20-digit offset>.snapshot` (Kafka's names).

The bytes are Kafka's `ProducerSnapshot` (encoded and decoded by broker/producer_snapshot.py; this module only
moves bytes). Kafka's rules for the files, which `FileLog` applies through this class:
- written when a segment rolls (at the new segment's base offset) and on clean shutdown (at the log end), without
  an fsync on the event loop: the descriptor is kept until the log's next flush ticket (flush.py) syncs it in a
  worker thread, as Kafka 3.5+ flushes roll snapshots asynchronously. A crash before that sync can leave a torn
  file; its CRC then fails and the reader deletes it and rebuilds the state from the log;
- deleted with the segments retention removes (every snapshot below the new log start), above a truncation
  point, and all of them when the log is emptied (`truncateFullyAndStartAt`).
Names created or deleted become durable with the log's next flush, which then syncs the directory too.
"""

from __future__ import annotations

import bisect
import os
import re

from .files import sync_data, sync_dir, write_all

PRODUCER_SNAPSHOT_SUFFIX = ".snapshot"
_NAME_RE = re.compile(r"^(\d{20})\.snapshot$")


def producer_snapshot_name(offset: int) -> str:
    return f"{offset:020d}{PRODUCER_SNAPSHOT_SUFFIX}"


def parse_producer_snapshot_name(name: str) -> int | None:
    match = _NAME_RE.match(name)
    return int(match.group(1)) if match else None


class ProducerSnapshotFiles:
    """The `.snapshot` files of one partition directory. Single threaded (the event loop), like `FileLog`; only
    the descriptors handed out by `take_unsynced` are synced (and closed) elsewhere."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        found = (parse_producer_snapshot_name(n) for n in os.listdir(directory)) if os.path.isdir(directory) else ()
        self.offsets: list[int] = sorted(o for o in found if o is not None)
        self._unsynced: dict[int, int] = {}  # offset -> open descriptor of a file written but not yet synced
        self._names_changed = False  # a file created or deleted since the last flush took them

    def path(self, offset: int) -> str:
        return os.path.join(self.directory, producer_snapshot_name(offset))

    def write(self, offset: int, data: bytes) -> None:
        """Write (or replace) the snapshot at `offset`; durable after the log's next flush."""
        self._forget_fd(offset)
        fd = os.open(self.path(offset), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            write_all(fd, data)
        except BaseException:
            os.close(fd)
            raise
        self._unsynced[offset] = fd
        self._names_changed = True
        if offset not in self.offsets:
            bisect.insort(self.offsets, offset)

    def read(self, offset: int) -> bytes:
        with open(self.path(offset), "rb") as f:
            return f.read()

    def latest_at_or_below(self, offset: int) -> int | None:
        i = bisect.bisect_right(self.offsets, offset)
        return self.offsets[i - 1] if i else None

    def delete(self, offset: int) -> None:
        self._forget_fd(offset)
        try:
            os.unlink(self.path(offset))
        except FileNotFoundError:
            pass
        if offset in self.offsets:
            self.offsets.remove(offset)
        self._names_changed = True

    def delete_below(self, offset: int) -> bool:
        """Retention moved the log start to `offset`: the snapshots of the deleted segments go."""
        doomed = [o for o in self.offsets if o < offset]
        for o in doomed:
            self.delete(o)
        return bool(doomed)

    def delete_above(self, offset: int) -> bool:
        """The log was truncated to end at `offset`: snapshots of the state past it are wrong now."""
        doomed = [o for o in self.offsets if o > offset]
        for o in doomed:
            self.delete(o)
        return bool(doomed)

    def delete_all(self) -> bool:
        return self.delete_below(1 << 63)

    def has_unsynced(self) -> bool:
        """A file written or a name changed that no flush ticket has taken yet."""
        return bool(self._unsynced) or self._names_changed

    def take_unsynced(self) -> tuple[list[int], bool]:
        """For a flush ticket: the descriptors of the files written since the last call (the ticket syncs and
        closes them) and whether names changed (the ticket then syncs the directory)."""
        fds, changed = list(self._unsynced.values()), self._names_changed
        self._unsynced.clear()
        self._names_changed = False
        return fds, changed

    def sync_now(self) -> None:
        """Sync what was written, here and now (tests and tools; the broker syncs through flush tickets)."""
        fds, _ = self.take_unsynced()
        try:
            for fd in fds:
                sync_data(fd)
        finally:
            for fd in fds:
                os.close(fd)
        sync_dir(self.directory)

    def _forget_fd(self, offset: int) -> None:
        fd = self._unsynced.pop(offset, None)
        if fd is not None:
            os.close(fd)
