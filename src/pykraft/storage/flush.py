"""Group commit: many appends, one fsync, optionally off the event loop.

    ticket = log.prepare_flush()      # event-loop thread: cheap, captures what must be synced
    await loop.run_in_executor(None, ticket.sync)   # any thread: only fsyncs private fds
    log.complete_flush(ticket)        # event-loop thread: advances flushed_end_offset

Thread-safety contract: every `FileLog` method runs on one thread (the event loop). The only thing that may run
on another thread is `FlushTicket.sync()`, which touches nothing but file descriptors it owns (duplicates made by
`prepare_flush`), so the loop can keep appending and reading while it runs. Appends made after `prepare_flush`
are not covered by that ticket; a truncation made while a ticket is out lowers what the ticket may report.
`FileLog.flush()` is the synchronous shorthand for the three steps.
"""

from __future__ import annotations

import os

from .files import sync_data, sync_dir


class FlushTicket:
    """What one flush must sync, and the end offset that becomes durable when it has."""

    __slots__ = ("end_offset", "_fds", "_dirs", "synced", "__weakref__")

    def __init__(self, end_offset: int, fds: list[int], dirs: list[str]) -> None:
        self.end_offset = end_offset
        self._fds = fds
        self._dirs = dirs
        self.synced = False

    def sync(self) -> None:
        """fsync the captured files, then the directory (so new names are durable after their data). Safe to
        call from a worker thread; call it once."""
        try:
            for fd in self._fds:
                sync_data(fd)
            for directory in self._dirs:
                sync_dir(directory)
            self.synced = True
        finally:
            for fd in self._fds:
                os.close(fd)
            self._fds = []

    def clamp(self, offset: int) -> None:
        """A truncation to `offset` happened after this ticket was prepared."""
        self.end_offset = min(self.end_offset, offset)
