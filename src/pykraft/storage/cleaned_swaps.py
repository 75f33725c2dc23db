"""A pass's cleaned segments made durable and swapped in, one group behind the rewrite: each segment's fsync runs
on a helper thread (one a pass) while the pass rewrites the next group (an fsync waits on the disk without holding the GIL),
and its swap (segment_swap.py, by the log's owner) waits for that fsync.

Kafka flushes each cleaned segment and replaces the old segments before it cleans the next group. Here the next
group's `.cleaned` files are written before the previous group is swapped in, which recovery already allows for:
a `.swap` below the lowest `.cleaned` file is completed, `.cleaned` files are deleted (segment_swap.py). The swaps
keep their order, a swap never happens before its segment's bytes are on disk, and a refused swap ends the pass
(CleaningAborted) with the segment still waiting deleted.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable

from .files import sync_data
from .segment_swap import CleanedSegment


class _Sync:
    """One cleaned segment's fsync, done by the pass's sync thread."""

    def __init__(self) -> None:
        self.error: BaseException | None = None
        self.done = threading.Event()

    def wait(self) -> None:
        self.done.wait()
        if self.error is not None:
            raise self.error


class _Syncer:
    """The pass's sync thread, started with its first segment (a thread start waits for a core: one a pass, not one
    a group), fed in order, ended by `close`."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[int, _Sync] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def submit(self, fd: int) -> _Sync:
        job = _Sync()
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="cleaned-fsync", daemon=True)
            self._thread.start()
        self._jobs.put((fd, job))
        return job

    def close(self) -> None:
        if self._thread is not None:
            self._jobs.put(None)
            self._thread = None

    def _run(self) -> None:
        while (item := self._jobs.get()) is not None:
            fd, job = item
            try:
                sync_data(fd)
            except BaseException as exc:  # handed to the pass by `wait`
                job.error = exc
            finally:
                job.done.set()


class CleanedSwaps:
    """`add` each cleaned segment as the pass finishes it, `finish` after the last; `discard` on any failure."""

    def __init__(self, swap: Callable[[CleanedSegment, list[int]], bool], aborted: type[BaseException]) -> None:
        self._swap = swap
        self._aborted = aborted
        self._pending: tuple[CleanedSegment, list[int], _Sync] | None = None
        self._syncer = _Syncer()

    def add(self, cleaned: CleanedSegment, old_bases: list[int]) -> None:
        """Start making `cleaned` durable, and swap in the previous segment (once its fsync is done)."""
        sync = self._syncer.submit(cleaned.fd)
        try:
            self._swap_pending()
        except BaseException:
            _discard(cleaned, sync)
            raise
        self._pending = (cleaned, old_bases, sync)

    def finish(self) -> None:
        try:
            self._swap_pending()
        finally:
            self._syncer.close()

    def discard(self) -> None:
        """The pass failed: the segment still waiting goes."""
        pending, self._pending = self._pending, None
        if pending is not None:
            _discard(pending[0], pending[2])
        self._syncer.close()

    def _swap_pending(self) -> None:
        pending, self._pending = self._pending, None
        if pending is None:
            return
        cleaned, old_bases, sync = pending
        try:
            sync.wait()
        except BaseException:
            cleaned.discard()
            raise
        if not self._swap(cleaned, old_bases):  # the owner discarded it
            raise self._aborted()


def _discard(cleaned: CleanedSegment, sync: _Sync) -> None:
    try:
        sync.wait()  # its descriptor is closed only once the fsync is over
    except OSError:  # the segment goes anyway; the pass reports its own failure
        pass
    cleaned.discard()
