"""The aborted-transaction index of a partition: Kafka's `<20-digit segment base>.txnindex` files.

Each file belongs to the segment of the same base offset and holds, in the order they were written, one 34-byte
entry per transaction aborted by a marker appended to that segment (Kafka's `AbortedTxn`, big-endian):

    int16 version = 0 | int64 producer_id | int64 first_offset | int64 last_offset | int64 last_stable_offset

A read_committed Fetch lists the aborted transactions that overlap the records it returns (`collect`), so the
consumer can drop their records. The entries of all files are kept in memory (aborts are rare). A file is written
when its segment gets its first aborted transaction, synced by the log's next flush ticket, dropped with its
segment (retention, reset) and cut by a truncation. A file whose size is not a whole number of entries, or with an
unknown version, is damaged: it is deleted and `damaged_from` names the lowest such segment, from which the owner
rebuilds the entries by replaying the log (node/hosts/producer_recovery.py), as Kafka rebuilds an index it
cannot trust.
"""

from __future__ import annotations

import bisect
import os
import re
import struct
from dataclasses import dataclass

from .files import atomic_write, write_all

TXN_INDEX_SUFFIX = ".txnindex"
_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size  # 34
_VERSION = 0
_NAME_RE = re.compile(r"^(\d{20})\.txnindex$")


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


def encode_entries(entries: list[AbortedTxn]) -> bytes:
    return b"".join(_ENTRY.pack(_VERSION, e.producer_id, e.first_offset, e.last_offset, e.last_stable_offset)
                    for e in entries)


def decode_entries(data: bytes) -> list[AbortedTxn] | None:
    """The entries of a file, or None when it is damaged."""
    if len(data) % ENTRY_SIZE:
        return None
    found = []
    for pos in range(0, len(data), ENTRY_SIZE):
        version, pid, first, last, lso = _ENTRY.unpack_from(data, pos)
        if version != _VERSION or last < first:
            return None
        found.append(AbortedTxn(pid, first, last, lso))
    return found


def txn_index_name(base_offset: int) -> str:
    return f"{base_offset:020d}{TXN_INDEX_SUFFIX}"


class TxnIndexFiles:
    """The `.txnindex` files of one partition directory (single threaded: the event loop)."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.entries: dict[int, list[AbortedTxn]] = {}  # segment base -> its entries
        self.damaged_from: int | None = None
        self._unsynced: set[int] = set()
        self._names_changed = False
        names = os.listdir(directory) if os.path.isdir(directory) else []
        for name in names:
            match = _NAME_RE.match(name)
            if match is not None:
                self._load(int(match.group(1)))

    def path(self, base: int) -> str:
        return os.path.join(self.directory, txn_index_name(base))

    def _load(self, base: int) -> None:
        with open(self.path(base), "rb") as f:
            found = decode_entries(f.read())
        if found is None:
            os.unlink(self.path(base))
            self._names_changed = True
            self.damaged_from = base if self.damaged_from is None else min(base, self.damaged_from)
        elif found:
            self.entries[base] = found

    # ---- writing -----------------------------------------------------------------------------------------------
    def append(self, segment_base: int, entry: AbortedTxn) -> None:
        """An aborted transaction whose marker went into the segment at `segment_base`."""
        fd = os.open(self.path(segment_base), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            write_all(fd, encode_entries([entry]))
        finally:
            os.close(fd)
        if segment_base not in self.entries:
            self._names_changed = True
        self.entries.setdefault(segment_base, []).append(entry)
        self._unsynced.add(segment_base)

    def truncate_to(self, offset: int) -> None:
        """The log now ends at `offset`: entries of transactions ending at or past it go."""
        for base in sorted(self.entries):
            kept = [e for e in self.entries[base] if e.last_offset < offset]
            if len(kept) != len(self.entries[base]):
                self._rewrite(base, kept)

    def retain_segments(self, bases: list[int]) -> None:
        """Only these segments exist now (retention, a reset, a cleaner swap): the files of the others go."""
        wanted = set(bases)
        for base in [b for b in self.entries if b not in wanted]:
            self._rewrite(base, [])
        for name in os.listdir(self.directory):
            match = _NAME_RE.match(name)
            if match is not None and int(match.group(1)) not in wanted:
                os.unlink(os.path.join(self.directory, name))
                self._names_changed = True

    def replace_segments(self, old_bases: list[int], new_base: int, entries: list[AbortedTxn]) -> None:
        """A cleaner swap: the segments at `old_bases` became one at `new_base`, whose aborted transactions are
        `entries` (those its kept ABORT markers end). The new file is written first."""
        if entries:
            atomic_write(self.path(new_base), encode_entries(entries))
            self._names_changed = True
        for base in old_bases:
            if base != new_base:
                self._rewrite(base, [])
        if entries:
            self.entries[new_base] = list(entries)
        elif new_base in self.entries:
            self._rewrite(new_base, [])

    def _rewrite(self, base: int, kept: list[AbortedTxn]) -> None:
        self._unsynced.discard(base)
        if kept:
            atomic_write(self.path(base), encode_entries(kept))
            self.entries[base] = kept
            return
        self.entries.pop(base, None)
        try:
            os.unlink(self.path(base))
        except FileNotFoundError:
            pass
        self._names_changed = True

    # ---- reading -----------------------------------------------------------------------------------------------
    def collect(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """Aborted transactions overlapping [fetch_offset, upper_bound): Kafka's collectAbortedTransactions, from
        the segment holding `fetch_offset` on (a transaction's entry sits in the segment of its marker)."""
        bases = sorted(self.entries)
        found = []
        for base in bases[max(bisect.bisect_right(bases, fetch_offset) - 1, 0):]:
            # No early stop at upper_bound: a transaction that began before it may end (and be filed) after it.
            found += [e for e in self.entries[base] if e.last_offset >= fetch_offset and e.first_offset < upper_bound]
        return found

    def all_entries(self) -> list[AbortedTxn]:
        return [e for base in sorted(self.entries) for e in self.entries[base]]

    # ---- durability --------------------------------------------------------------------------------------------
    def take_unsynced(self) -> tuple[list[int], bool]:
        """For a flush ticket: descriptors of the files appended to since the last call (the ticket syncs and
        closes them) and whether names changed (the ticket then syncs the directory)."""
        fds = []
        for base in sorted(self._unsynced):
            try:
                fds.append(os.open(self.path(base), os.O_RDONLY))
            except FileNotFoundError:
                pass
        changed = self._names_changed
        self._unsynced.clear()
        self._names_changed = False
        return fds, changed
