"""The records of a run of batches as columns (numpy arrays), for the log cleaner's hot loops: where each record
starts and ends, its offset delta, where its key lies (or that it has none) and whether its value is null, and its
timestamp delta on demand. No Python object per record (DESIGN.md §6).

Where each record starts depends on the previous one's length, so the framing is found in one of two ways:
- a batch whose records section splits into `count` records of one size (fixed-size keys and values: the usual
  case of a producer's batch) is framed at once: every record's length is decoded at its guessed place and must
  say exactly that size (so the guess is proven, not trusted);
- the other batches (records of varied sizes) are stepped through together, a numpy step per record index
  (`_step_all`: each record's size from the two bytes at its head, every step checked at once afterwards);
- a batch the steps refuse (a length of three bytes or more, or framing that does not hold) is walked in Python,
  reading the record lengths only, which also decides whether it is malformed.
Every other field is decoded with numpy at all records' positions at once (as pipeline/columnar.py does).

The fields read are those of `rebuild.record_keys`, and a run is accepted only where `record_keys` accepts it with
the same values: anything else (an impossible length, a varint longer than this path reads, a key running out of
its record, a null key not in its one-byte form, records not ending where their batch does) makes `scan_records`
answer None, and the caller takes the record-by-record path, which gives its exact error, or its answer.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .varint import read_varint

_MIN_RECORD_LENGTH = 6
_INT_VARINT_BYTES = 5
_LONG_VARINT_BYTES = 9  # 63 bits: the values record_keys reads from longer ones may not fit an int64
_ROUNDS = 4  # framing rounds before the remaining records of a batch are walked
_FEW = 8  # a round that frames fewer records of a batch than this leaves the rest of it to the walk
_PAD = bytes(8)  # scan_records' callers leave room after the last record (a key hash reads whole words)


@dataclass(frozen=True, slots=True)
class RecordColumns:
    """One row per record of the run (the batches' records in order; `first[i]` is batch i's first row)."""

    buf: np.ndarray  # the bytes the positions are in (uint8)
    first: np.ndarray  # int64, one more than the batches: first[-1] is the number of records
    start: np.ndarray  # after the record's length: its attributes byte
    offset_delta: np.ndarray
    tail: np.ndarray  # where the key's length starts: key, value and headers follow, up to `end`
    end: np.ndarray
    key_start: np.ndarray
    key_length: np.ndarray  # -1: no key
    null_value: np.ndarray  # bool

    def timestamp_deltas(self, rows: np.ndarray) -> np.ndarray:
        """The timestamp deltas of some rows (checked well-formed by the scan)."""
        values, _ = varints(self.buf, self.start[rows] + 1, _LONG_VARINT_BYTES)
        assert values is not None
        return values


def scan_records(raw: bytes | memoryview, bodies: Sequence[tuple[int, int, int]]) -> RecordColumns | None:
    """The records of the batches whose records sections are raw[start:end], `count` records each ((start, end,
    count) per batch, uncompressed sections), or None (see the module docstring). `raw` may go on after the last
    section (the key hash reads whole words)."""
    buf = np.frombuffer(raw, dtype=np.uint8)
    counts = [count for _, _, count in bodies]
    if any(count < 0 for count in counts):
        return None
    first = np.zeros(len(bodies) + 1, dtype=np.int64)
    np.cumsum(counts, out=first[1:])
    framed = _frame(raw, buf, bodies, first)
    if framed is None:
        return None
    return _fields(buf, first, *framed)


def every_record_keyed(section: bytes | memoryview, count: int) -> bool | None:
    """Whether every record of a records section (uncompressed) has a key, or None where the scan refuses the
    section (`record_keys` then judges it): a compacted topic's produce check, without a Python step per record."""
    raw = b"".join((section, _PAD))
    columns = scan_records(raw, [(0, len(section), count)])
    return None if columns is None else bool((columns.key_length >= 0).all())


def _frame(raw: bytes | memoryview, buf: np.ndarray, bodies: Sequence[tuple[int, int, int]],
           first: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(start after the length, end) of every record. In rounds, over all batches at once: from each batch's first
    record not framed yet, guess where the following ones begin, check every guess (the length found at a guessed
    place must reach the next guessed place), and keep the records up to the first wrong guess. The guess is that
    they have that record's size, but for their offset delta: a producer numbers a batch's records 0, 1, 2... and
    the delta's varint takes a byte more from 64 on, two from 8192. A batch whose first records do not look
    alike (`_same_sizes`), or still not framed after `_ROUNDS`, or whose rounds frame few records, is stepped
    through (`_step_all`), and walked where the steps fail."""
    total = int(first[-1])
    starts = np.empty(total, dtype=np.int64)
    ends = np.empty(total, dtype=np.int64)
    row = first[:-1].copy()  # each batch's first record not framed yet
    position = np.array([start for start, _, _ in bodies], dtype=np.int64)  # where that record begins
    stop = np.array([end for _, end, _ in bodies], dtype=np.int64)
    active = np.flatnonzero(row < first[1:])
    if len(active):  # batches of records of varied sizes go straight to the steps
        active = active[_same_sizes(buf, len(raw), position[active], (first[1:] - row)[active])]
    for _ in range(_ROUNDS):
        if not len(active):
            break
        at, base = row[active], first[:-1][active]
        left = first[1:][active] - at
        owner = np.repeat(np.arange(len(active)), left)
        index = np.arange(len(owner), dtype=np.int64) - (np.cumsum(left) - left)[owner]
        size, _ = _lengths(buf, position[active], len(raw))
        cursor = (at - base)[owner]  # the guess's first record, by its place in its batch
        heads = position[active][owner] + index * size[owner] + _delta_bytes(cursor + index) - \
            _delta_bytes(cursor) - index * _delta_extra(cursor)
        found, length_size = _lengths(buf, heads, len(raw))
        follows = np.empty_like(heads)  # where the next record is guessed to begin (or the batch to end)
        follows[:-1] = heads[1:]
        last = np.cumsum(left) - 1
        follows[last] = stop[active]
        good = (heads + found == follows) & (found - length_size >= _MIN_RECORD_LENGTH)
        wrong = np.where(good, left[owner], index)
        framed = np.minimum.reduceat(wrong, np.cumsum(left) - left)  # per batch: how many guesses held
        keep = index < framed[owner]
        rows = (at[owner] + index)[keep]
        starts[rows] = heads[keep] + length_size[keep]
        ends[rows] = heads[keep] + found[keep]
        done = framed == left
        row[active] += framed
        moved = np.minimum(framed, left - 1)  # the first record not framed begins where it was guessed
        position[active] = np.where(done, stop[active], heads[np.cumsum(left) - left + moved])
        going = ~done & (framed >= _FEW)
        active = active[going]
    rest = np.flatnonzero(row < first[1:])
    if len(rest):
        rest = _step_all(buf, rest, row, position, stop, first, starts, ends)
    for b in rest.tolist():
        walked = _walk(raw, int(position[b]), int(stop[b]), int(first[b + 1] - row[b]))
        if walked is None:
            return None
        starts[row[b]:first[b + 1]], ends[row[b]:first[b + 1]] = walked
    return starts, ends


def _same_sizes(buf: np.ndarray, limit: int, position: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Per batch (from its first record): whether its first records look as `_frame`'s guess has them (each of
    the first record's size, but for the offset delta's bytes). Only a hint: the rounds check every guess."""
    n = np.minimum(counts, _FEW)
    starts = np.cumsum(n) - n
    owner = np.repeat(np.arange(len(n)), n)
    index = np.arange(len(owner), dtype=np.int64) - starts[owner]
    size, _ = _lengths(buf, position, limit)
    found, _ = _lengths(buf, position[owner] + index * size[owner] + _delta_bytes(index), limit)
    good = found == size[owner] + _delta_extra(index)
    same: np.ndarray = np.minimum.reduceat(good, starts).astype(bool)
    return same


def _length_tables() -> tuple[np.ndarray, np.ndarray]:
    """By the two bytes at a record's head (little-endian uint16): the record's whole size (0: not a one- or
    two-byte varint of a possible length) and its length varint's size."""
    word = np.arange(1 << 16, dtype=np.int64)
    low, high = word & 0xFF, word >> 8
    one = low < 0x80
    zigzag = np.where(one, low, (low & 0x7F) | (high << 7))
    size = 2 - one
    good = ((zigzag & 1) == 0) & (zigzag >= 2 * _MIN_RECORD_LENGTH) & (one | (high < 0x80))
    return np.where(good, size + (zigzag >> 1), 0), size


_WHOLE, _LENGTH_SIZE = _length_tables()


def _step_all(buf: np.ndarray, batches: np.ndarray, row: np.ndarray, position: np.ndarray, stop: np.ndarray,
              first: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Frame the records of `batches` (records of varied sizes) one record of every batch per numpy step (a
    step per record index, not a Python step per record): each record's size from the two bytes at its head
    (`_WHOLE`), unchecked while stepping, then every step checked at once. Returns the batches where a check
    failed (a length longer than two bytes, impossible, or past the batch, or records not ending with it), left
    to `_walk`, which reads them again from their first record not framed (and refuses them, or frames them)."""
    limit = len(buf) - 2
    words = np.ndarray((limit + 1,), dtype="<u2", buffer=buf, strides=(1,))  # words[p]: bytes p and p + 1
    at, last = row[batches], first[1:][batches]
    counts = last - at
    order = np.argsort(-counts, kind="stable")  # the batches still stepping are a prefix of this order
    by_count = counts[order]
    pos, base = position[batches][order].copy(), at[order]
    stepping = (len(by_count) - np.searchsorted(by_count[::-1], np.arange(int(by_count[0])), side="right")).tolist()
    for step, k in enumerate(stepping):
        head = pos[:k]
        np.minimum(head + _WHOLE[words[head]], limit, out=head)
        ends[base[:k] + step] = head
    owner = np.repeat(np.arange(len(batches)), counts)
    firsts = np.cumsum(counts) - counts
    rows = at[owner] + np.arange(len(owner)) - firsts[owner]
    heads = np.empty(len(rows), dtype=np.int64)
    heads[1:] = ends[rows[:-1]]
    heads[firsts] = position[batches]
    heads = np.minimum(heads, limit)
    word = words[heads]
    whole = _WHOLE[word]
    stops = stop[batches]
    bad = (whole == 0) | (heads + whole != ends[rows]) | (ends[rows] > stops[owner])
    bad_batches = np.unique(owner[bad])
    finished = np.ones(len(batches), dtype=bool)
    finished[bad_batches] = False
    finished &= ends[last - 1] == stops
    starts[rows] = heads + _LENGTH_SIZE[word]
    row[batches[finished]] = last[finished]
    return batches[~finished]


def _delta_bytes(n: np.ndarray) -> np.ndarray:
    """The bytes beyond one each that the offset deltas 0..n-1 take as varints."""
    extra: np.ndarray = np.maximum(n - 64, 0) + np.maximum(n - 8192, 0) + np.maximum(n - 1048576, 0)
    return extra


def _delta_extra(n: np.ndarray) -> np.ndarray:
    """The bytes beyond one that offset delta n takes."""
    return (n >= 64).astype(np.int64) + (n >= 8192) + (n >= 1048576)


def _lengths(buf: np.ndarray, heads: np.ndarray, limit: int) -> tuple[np.ndarray, np.ndarray]:
    """At each guessed record head: (the record's whole size, length varint included, or 0 when the bytes there
    are no one- or two-byte non-negative length; the varint's size)."""
    heads = np.minimum(heads, limit - 2)
    low = buf[heads].astype(np.int64)
    high = buf[heads + 1].astype(np.int64)
    one = low < 0x80
    zigzag = np.where(one, low, (low & 0x7F) | (high << 7))
    size = 2 - one
    whole = (zigzag >> 1) + size
    whole[(zigzag & 1).astype(bool) | (~one & (high >= 0x80))] = 0
    return whole, size


def _walk(raw: bytes | memoryview, start: int, end: int, count: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(start after the length, end) of each of a batch's records, walking their lengths; None as record_keys
    would refuse the framing (a length below 6, past the section, or records not ending with it)."""
    starts, ends = array("q"), array("q")
    add_start, add_end = starts.append, ends.append
    pos = start
    try:
        for _ in range(count):
            b = raw[pos]
            if b < 0x80:
                if b & 1 or b < 2 * _MIN_RECORD_LENGTH:
                    return None
                pos += 1
                add_start(pos)
                pos += b >> 1
            elif raw[pos + 1] < 0x80:
                zigzag = (b & 0x7F) | (raw[pos + 1] << 7)
                if zigzag & 1 or zigzag < 2 * _MIN_RECORD_LENGTH:
                    return None
                pos += 2
                add_start(pos)
                pos += zigzag >> 1
            else:
                length, after = read_varint(raw, pos)
                if length < _MIN_RECORD_LENGTH or after - pos > _INT_VARINT_BYTES:
                    return None
                add_start(after)
                pos = after + length
            add_end(pos)
    except (IndexError, ValueError):  # MalformedBatchError is a ValueError: record_keys reports it
        return None
    if pos != end:
        return None
    return np.frombuffer(starts, dtype=np.int64), np.frombuffer(ends, dtype=np.int64)


def _fields(buf: np.ndarray, first: np.ndarray, start: np.ndarray, end: np.ndarray) -> RecordColumns | None:
    timestamp_size = varint_sizes(buf, start + 1, _LONG_VARINT_BYTES)  # + 1: the attributes byte
    if timestamp_size is None:
        return None
    offset_position = start + 1 + timestamp_size
    offset_delta, size = varints(buf, offset_position, _INT_VARINT_BYTES)
    if offset_delta is None:
        return None
    tail = offset_position + size
    key_length, size = varints(buf, tail, _INT_VARINT_BYTES)
    if key_length is None:
        return None
    key_start = tail + size
    key_end = key_start + np.maximum(key_length, 0)
    if (key_length < -1).any() or ((key_length == -1) & (size != 1)).any() or (key_end >= end).any():
        return None
    return RecordColumns(buf, first, start, offset_delta, tail, end, key_start, key_length, buf[key_end] == 1)


def varint_sizes(buf: np.ndarray, pos: np.ndarray, max_bytes: int) -> np.ndarray | int | None:
    """The sizes of the varints at `pos` (1 when all are one byte long), or None as in `varints`."""
    try:
        if (buf[pos] < 0x80).all():
            return 1
    except IndexError:
        return None
    _, sizes = varints(buf, pos, max_bytes)
    return None if _ is None else sizes


def varints(buf: np.ndarray, pos: np.ndarray, max_bytes: int) -> tuple[np.ndarray | None, np.ndarray]:
    """Zig-zag varints at every position at once: (values as int64, their sizes), or (None, _) when one runs past
    `max_bytes` or past the buffer. One- and two-byte varints (the usual deltas, lengths and key sizes) are decoded
    in a few steps; longer ones a byte at a time for the rows still open."""
    try:
        low = buf[pos]
        one = low < 0x80
        if one.all():
            zigzag = low.astype(np.int64)
            return (zigzag >> 1) ^ -(zigzag & 1), np.ones(len(pos), dtype=np.int64)
        high = buf[pos + 1]
        if (one | (high < 0x80)).all():
            zigzag = (low & 0x7F).astype(np.int64)
            zigzag |= np.where(one, 0, high.astype(np.int64) << 7)
            return (zigzag >> 1) ^ -(zigzag & 1), 2 - one
        return _long_varints(buf, pos, max_bytes)
    except IndexError:
        return None, pos


def _long_varints(buf: np.ndarray, pos: np.ndarray, max_bytes: int) -> tuple[np.ndarray | None, np.ndarray]:
    byte = buf[pos]
    zigzag = (byte & 0x7F).astype(np.uint64)
    size = np.ones(len(pos), dtype=np.int64)
    open_rows = np.flatnonzero(byte >= 0x80)
    for k in range(1, max_bytes):
        byte = buf[pos[open_rows] + k]
        zigzag[open_rows] |= (byte & 0x7F).astype(np.uint64) << np.uint64(7 * k)
        size[open_rows] += 1
        open_rows = open_rows[byte >= 0x80]
        if not len(open_rows):
            return (zigzag >> np.uint64(1)).astype(np.int64) ^ -(zigzag & np.uint64(1)).astype(np.int64), size
    return None, pos
