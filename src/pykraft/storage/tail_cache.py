"""The last appended chunks of a segment, kept in memory: a fetch of what was just written needs no pread.

On a partition leader every follower fetches the batches appended a moment ago; reading them back cost two
`preadv` calls per fetch (the header walk and the data) into a freshly allocated buffer, its zero-fill and its
page faults, for bytes the leader still held. A chunk is kept only when its owner hands the buffer over
(`Segment.append(..., keep=True)`: it will never change those bytes again), as a read-only view, so what a reader
gets is exactly what was written.

The cached chunks are always the last bytes of the file, contiguous (an append that is not kept, a truncation, a
seal or a close empties the cache), so a read served from them returns exactly what a read of the file would:
whole batches from the one holding the offset, up to `max_bytes` (at least one), to the file's end at most. The
cache is bounded in bytes (the oldest chunks go first), and its owner releases what its readers have read.
"""

from __future__ import annotations

import bisect
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .segment import BatchInfo

# Per active segment. A leader releases what every follower has fetched (`release_below`), so this bounds only a
# partition whose follower lags or is gone: with 5 produce requests of ~1 MB in flight, followers fetch from up to
# ~5 MB back (a 2 MiB bound missed about one fetch in five in benchmarks/produce.py's pipelined mode).
TAIL_CACHE_BYTES = 8 << 20


@dataclass(frozen=True, slots=True)
class _Chunk:
    position: int  # file position of data[0]
    data: memoryview  # read-only
    batches: list[BatchInfo]  # positions relative to data
    last_offsets: list[int]


class TailCache:
    __slots__ = ("_bytes", "_chunks", "_limit")

    def __init__(self, limit: int = TAIL_CACHE_BYTES) -> None:
        self._limit = limit
        self._chunks: deque[_Chunk] = deque()
        self._bytes = 0

    def add(self, position: int, data: memoryview, batches: list[BatchInfo]) -> None:
        """Batches just written at file `position` (`data` must never change again)."""
        if len(data) > self._limit:
            self.clear()  # the chunks before it would no longer be contiguous with what the cache holds
            return
        self._chunks.append(_Chunk(position, data.toreadonly(), batches, [b.last_offset for b in batches]))
        self._bytes += len(data)
        while self._bytes > self._limit:
            self._bytes -= len(self._chunks.popleft().data)

    def read(self, offset: int, max_bytes: int) -> tuple[memoryview | bytes, int, int] | None:
        """(whole batches from the one holding `offset` up to `max_bytes`, at least one; its base offset; the file
        position after them), exactly what a read of the file returns; None when `offset` is not in the cache."""
        chunks = self._chunks
        k = next((k for k in range(len(chunks) - 1, -1, -1) if chunks[k].batches[0].base_offset <= offset), None)
        if k is None or offset > chunks[k].last_offsets[-1]:
            return None
        chunk = chunks[k]
        first = chunk.batches[bisect.bisect_left(chunk.last_offsets, offset)]
        start, budget = first.position, max(max_bytes, first.size)
        pieces: list[memoryview] = []
        taken = 0  # bytes taken from the chunks before `chunk`
        while True:
            end = start
            for batch in chunk.batches:
                if batch.position >= start and taken + batch.position + batch.size - start <= budget:
                    end = batch.position + batch.size
                elif batch.position >= start:
                    break
            if end > start:  # an empty piece (the next chunk's first batch over the budget) must not cause a join
                pieces.append(chunk.data[start:end])
            taken += end - start
            k += 1
            if end < len(chunk.data) or k == len(chunks):
                break
            chunk, start = chunks[k], 0
        position = chunk.position + end
        records = pieces[0] if len(pieces) == 1 else b"".join(pieces)  # several small appends: one copy
        return records, first.base_offset, position

    def release_below(self, offset: int) -> None:
        """Every reader this cache is for has read below `offset`: the chunks that end below it go."""
        while self._chunks and self._chunks[0].last_offsets[-1] < offset:
            self._bytes -= len(self._chunks.popleft().data)

    def truncate(self, position: int) -> None:
        """The file was cut at `position`: the cache must end where the file ends, so it is emptied."""
        self.clear()

    def clear(self) -> None:
        self._chunks.clear()
        self._bytes = 0
