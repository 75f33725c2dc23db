"""Swapping cleaned segments into a log, crash-safe, and finishing an interrupted swap on open: Kafka's
`LocalLog.replaceSegments` and the first passes of its `LogLoader`.

A cleaner pass writes each group of segments it cleans into one new segment named `<base>.log.cleaned` (with
`.index.cleaned`, `.timeindex.cleaned`), fsynced, `<base>` the group's first base offset. `replace_segments` then:
1. renames the new files `.cleaned` -> `.swap`, the `.log` first, and fsyncs the directory (Kafka syncs only at
   the end; the early sync makes step 2 never reach the disk before step 1 whatever the file system);
2. renames each old segment's files to `.deleted` and removes them (Kafka removes them after file.delete.delay.ms:
   its readers map the files; ours read through open descriptors, which keep the old bytes until step 4);
3. renames the `.swap` files to the final names; the directory is fsynced by the next swap's step 1 or at the
   end of the pass (cleaner_manager.py: one sync a group and one a pass, not two a group; Kafka syncs once, here).
   Until then a crash may leave the `.swap` files, which recovery completes (a later `.cleaned` file of the same
   pass lies above them; the next pass's first one comes after the end-of-pass sync);
4. replaces the old segments by the new one in memory (until then readers keep reading the old files), and deletes
   the producer snapshots named by the old segments other than the first (Kafka's deleteProducerSnapshots).
A crash anywhere leaves, for `plan_swap_recovery` on the next open:
- `.cleaned` files: step 1 had not finished, they are deleted, and so is any `.swap` at or above the lowest
  `.cleaned` offset (Kafka's rule, also for its segment split): the old segments are untouched until step 2;
- a `<base>.log.swap` with no `.cleaned` file at or below its base: step 1 completed, so the swap is completed:
  the segment files whose base lies in [base, the swap's next offset) are the replaced ones and are deleted, and
  every `.swap` file is renamed to its final name (the open then checks every index and rebuilds a damaged one);
- `.deleted` files: deleted (snapshot `.checkpoint.deleted` files are the snapshot code's).
So a reader never sees a half-replaced log: either the old segments or the cleaned one.
"""

from __future__ import annotations

import os
import struct
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .files import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, pread_exact, sync_dir
from .index import SegmentIndex
from .segment import Segment
from .tail_cache import TailCache

if TYPE_CHECKING:
    from .file_log import FileLog

CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
DELETED_SUFFIX = ".deleted"
_SNAPSHOT_DELETED = ".checkpoint.deleted"
_SEGMENT_SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX)
_PREFIX = struct.Struct(">qi")
_DISCARD_LOCK = threading.Lock()


def no_fault(step: str) -> None:
    """The default of `replace_segments`' hook; tests pass one that raises at a chosen step (a crash)."""


@dataclass(slots=True)
class CleanedSegment:
    """A cleaned segment written under `.cleaned` names, its descriptor and index still open (cleaner.py)."""

    directory: str
    base_offset: int
    fd: int
    index: SegmentIndex
    size: int
    next_offset: int
    first_timestamp: int
    aborted: tuple = ()  # the aborted transactions its kept ABORT markers end (its .txnindex), set by the cleaner

    def path(self, suffix: str, extra: str = CLEANED_SUFFIX) -> str:
        return os.path.join(self.directory, f"{self.base_offset:020d}{suffix}{extra}")

    def discard(self) -> None:
        """A swap that will not happen: close and delete the `.cleaned` (or `.swap`) files. Idempotent: a cleaner
        thread stopping and the owner refusing the swap may both discard it."""
        with _DISCARD_LOCK:
            if self.fd < 0:
                return
            fd, self.fd = self.fd, -1
        self.index.close()
        os.close(fd)
        for suffix in _SEGMENT_SUFFIXES:
            for extra in (CLEANED_SUFFIX, SWAP_SUFFIX):
                try:
                    os.unlink(self.path(suffix, extra))
                except FileNotFoundError:
                    pass

    def detach(self) -> CleanedFiles:
        """The segment to hand to another process (the broker, from a cleaner child): its files closed, its index
        entries kept in memory. The log's bytes were made durable by the writer (cleaned_writer.CleanedWriter.finish)."""
        with _DISCARD_LOCK:
            fd, self.fd = self.fd, -1
        self.index.close()
        if fd >= 0:
            os.close(fd)
        return CleanedFiles(self.directory, self.base_offset, self.index, self.size, self.next_offset,
                            self.first_timestamp, self.aborted)


@dataclass(frozen=True, slots=True)
class CleanedFiles:
    """A cleaned segment written and closed by another process (picklable): `attach` opens it for the swap."""

    directory: str
    base_offset: int
    index: SegmentIndex  # its entries; no descriptor open
    size: int
    next_offset: int
    first_timestamp: int
    aborted: tuple = ()  # CleanedSegment.aborted: its .txnindex entries

    def attach(self) -> CleanedSegment:
        path = os.path.join(self.directory, f"{self.base_offset:020d}{LOG_SUFFIX}{CLEANED_SUFFIX}")
        fd = os.open(path, os.O_RDWR)
        try:
            self.index.open_files()  # checks the index files against the entries (they were written whole)
        except BaseException:
            os.close(fd)
            raise
        return CleanedSegment(self.directory, self.base_offset, fd, self.index, self.size, self.next_offset,
                              self.first_timestamp, self.aborted)

    def discard(self) -> None:
        remove_cleaned(self.directory, [self.base_offset])


def remove_cleaned(directory: str, bases: list[int]) -> None:
    """Delete the `.cleaned` files of the segments at `bases` (an aborted or killed pass's)."""
    for base in bases:
        for suffix in _SEGMENT_SUFFIXES:
            try:
                os.unlink(os.path.join(directory, f"{base:020d}{suffix}{CLEANED_SUFFIX}"))
            except FileNotFoundError:
                pass


def replace_segments(log: FileLog, cleaned: CleanedSegment, old: list[Segment],
                     fault: Callable[[str], None] = no_fault, *, sync_renames: bool = True) -> None:
    """Put `cleaned` in place of `old` (consecutive segments of `log`, the first with the same base offset), in
    the steps of the module docstring. `fault(step)` is called after each step (crash-point tests).
    `sync_renames=False`: the caller syncs the directory later (step 3)."""
    directory = log.directory
    for suffix in _SEGMENT_SUFFIXES:  # .log first: its .swap is what makes recovery complete the swap
        os.rename(cleaned.path(suffix), cleaned.path(suffix, SWAP_SUFFIX))
        fault(f"swap{suffix}")
    sync_dir(directory)
    fault("swap-synced")
    for segment in old:
        for path in _segment_paths(directory, segment.base_offset):
            if os.path.exists(path):
                os.rename(path, path + DELETED_SUFFIX)
        fault(f"deleted-renamed:{segment.base_offset}")
    for segment in old:
        for path in _segment_paths(directory, segment.base_offset):
            try:
                os.unlink(path + DELETED_SUFFIX)
            except FileNotFoundError:
                pass
    fault("deleted-removed")
    for suffix in _SEGMENT_SUFFIXES:
        os.rename(cleaned.path(suffix, SWAP_SUFFIX), cleaned.path(suffix, ""))
        fault(f"renamed{suffix}")
    if sync_renames:
        sync_dir(directory)
        fault("renamed-synced")
    _replace_in_memory(log, cleaned, old)


def _segment_paths(directory: str, base: int) -> list[str]:
    return [os.path.join(directory, f"{base:020d}{suffix}") for suffix in _SEGMENT_SUFFIXES]


def _replace_in_memory(log: FileLog, cleaned: CleanedSegment, old: list[Segment]) -> None:
    first = log._segments.index(old[0])
    assert log._segments[first:first + len(old)] == old, "the replaced segments are not consecutive"
    segment = Segment.__new__(Segment)
    segment.base_offset = cleaned.base_offset
    segment.path = cleaned.path(LOG_SUFFIX, "")
    index = cleaned.index
    index.index_path, index.time_index_path = cleaned.path(INDEX_SUFFIX, ""), cleaned.path(TIME_INDEX_SUFFIX, "")
    segment.index = index
    segment.fd = cleaned.fd
    segment.size = cleaned.size
    segment.next_offset = cleaned.next_offset
    segment.first_timestamp = cleaned.first_timestamp
    segment.dirty = False
    segment.tail = TailCache()
    log._segments[first:first + len(old)] = [segment]
    log._bases[first:first + len(old)] = [cleaned.base_offset]
    log.layout_version += 1
    for replaced in old:
        replaced.close()  # the files are gone: only the descriptors go now
        if replaced.base_offset != cleaned.base_offset:
            # Kafka's deleteProducerSnapshots of the segments deleted and not replaced: the snapshot named by a
            # segment's base offset (written when it rolled in) goes with it.
            log.producer_snapshots.delete(replaced.base_offset)


# ---- recovery on open --------------------------------------------------------------------------------------


@dataclass(slots=True)
class SwapRecovery:
    """What an open does about interrupted swaps (decided reading only, done with the other repairs)."""

    delete: list[str] = field(default_factory=list)  # file names
    renames: list[tuple[str, str]] = field(default_factory=list)  # (.swap name, final name)
    swap_logs: dict[int, str] = field(default_factory=dict)  # base offset -> the .log.swap name that becomes it

    def __bool__(self) -> bool:
        return bool(self.delete or self.renames)


def _base_of(name: str) -> int | None:
    head = name[:20]
    return int(head) if len(head) == 20 and head.isdigit() and name[20:21] == "." else None


def plan_swap_recovery(directory: str) -> SwapRecovery:
    """Kafka's LogLoader passes over leftovers of swaps (see the module docstring), as a plan."""
    plan = SwapRecovery()
    names = sorted(os.listdir(directory))
    cleaned = [n for n in names if n.endswith(CLEANED_SUFFIX) and _base_of(n) is not None]
    swaps = [n for n in names if n.endswith(SWAP_SUFFIX) and _base_of(n) is not None]
    plan.delete += [n for n in names if n.endswith(DELETED_SUFFIX) and not n.endswith(_SNAPSHOT_DELETED)]
    plan.delete += cleaned
    min_cleaned = min((base for n in cleaned if (base := _base_of(n)) is not None), default=None)
    valid = []
    for name in swaps:
        if min_cleaned is not None and _base_of(name) >= min_cleaned:  # type: ignore[operator]
            plan.delete.append(name)
        else:
            valid.append(name)
    low = high = None
    for name in valid:
        if name.endswith(LOG_SUFFIX + SWAP_SUFFIX):
            base = _base_of(name)
            assert base is not None
            end = _next_offset(os.path.join(directory, name), base)
            low = base if low is None else min(low, base)
            high = end if high is None else max(high, end)
            plan.swap_logs[base] = name
    if low is not None and high is not None:
        for name in names:
            base = _base_of(name)
            if base is not None and low <= base < high and name.endswith(_SEGMENT_SUFFIXES):
                plan.delete.append(name)
    plan.renames = [(name, name[: -len(SWAP_SUFFIX)]) for name in valid]
    return plan


def _next_offset(path: str, base: int) -> int:
    """The offset after the last whole batch of a segment file (Kafka's readNextOffset), from headers only."""
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        position, end = 0, base
        while position + _PREFIX.size <= size:
            head = pread_exact(fd, 27, position)
            if len(head) < 27:
                break
            first, length = _PREFIX.unpack_from(head)
            if position + 12 + length > size:
                break
            end = first + int.from_bytes(head[23:27], "big", signed=True) + 1
            position += 12 + length
        return end
    finally:
        os.close(fd)


def apply_swap_recovery(directory: str, plan: SwapRecovery) -> None:
    """Carry out a plan (the open then fsyncs the directory with its other repairs)."""
    for name in plan.delete:
        try:
            os.unlink(os.path.join(directory, name))
        except FileNotFoundError:
            pass
    for source, target in plan.renames:
        os.replace(os.path.join(directory, source), os.path.join(directory, target))
