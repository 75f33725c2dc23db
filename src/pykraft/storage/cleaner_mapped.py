"""The keyed records the offset map took in a pass, kept from the map's read for the rewrite, so that a data batch
is decided, and rebuilt where it keeps some of its records, without its records being scanned or their keys
hashed again (the cleaner's fast path).

Kafka's cleaner reads the dirty section twice: once to build the map, once to rewrite it, decoding every record
both times. Here the map's read keeps, for each keyed record it mapped, its offset, the base offset of its batch,
whether its value is null, and where in its segment file it lies (the start of its attributes,
of its key, and its end; -1 for a compressed batch's records, which lie in its decompressed section) (`add`, from
cleaner_chunks.map_chunk). Once the map is complete the records that are their key's latest are the ones at the
offsets the map holds (`seal`: no key is looked up again). In the rewrite, a data batch all of whose records are
among them (`decide`) gets Kafka's decision from those rows: kept whole (its bytes), emptied (an empty batch or
nothing, compaction_rules.batch_retention), or rebuilt around its kept records from their places in the chunk the
rewrite read (records/rebuild_many.py; a compressed batch is left to the scan). The decision per record
is `compaction_rules.retain_record`'s, as in `cleaner_chunks.kept_records`: the same map, the same offsets, the
same tombstone rule; tests/storage/test_cleaner_fast_path*.py and test_cleaner_mapped.py clean the same logs this
way and record by record.

Memory: 41 bytes a row while mapping (`ROW_BYTES` with the concatenation's temporaries), 16 after `seal` plus 33
a record that stays, at most `limit` rows (half the part of the dedupe buffer the pass's map table leaves): rows
beyond it are not kept and their batches are read again, as without this.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pykraft.records.rebuild import empty_batch
from pykraft.records.rebuild_many import rebuild_many
from pykraft.records.record_scan import varints

from .cleaner_txns import Item, Verdict
from .compaction_rules import BatchRetention, ProducerLast, batch_retention, needs_delete_horizon
from .key_hash import np  # loaded at first use (records/lazy_numpy.py); imported only where numpy exists
from .offset_map import OffsetMap

ROW_BYTES = 64  # a row while mapping (41 bytes) and the concatenation's temporaries, about
_LONG_VARINT_BYTES = 9
Decided = dict[int, tuple[bytes | memoryview | None, int]]


class MappedRecords:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.rows = 0
        self._parts: list[tuple[np.ndarray, ...]] = []  # per window: offsets, bases, null, start, tail, end
        self._increasing = True
        self.offsets = np.zeros(0, dtype=np.int64)
        self.bases = np.zeros(0, dtype=np.int64)
        self.stay_rows = np.zeros(0, dtype=np.int64)  # the rows that are their key's latest (increasing)
        self._nulls = np.zeros(1, dtype=np.int64)  # cumulative count of null values among them
        self._kept: tuple[np.ndarray, ...] = ()  # per row that stays: null, start, tail, end (file positions)
        self.sealed = False

    def add(self, offsets: np.ndarray, bases: np.ndarray, null: np.ndarray, start: np.ndarray | None = None,
            tail: np.ndarray | None = None, end: np.ndarray | None = None) -> None:
        """Keep a window's mapped records (log order), and where each lies in its segment file (None, or -1 for a
        row: unknown, its batch is not rebuilt from the rows); past `limit`, none more is kept. Offsets that do
        not increase (a malformed batch) make the whole set unusable: every batch is then read again."""
        if self.rows + len(offsets) > self.limit:
            self.limit = self.rows  # a later, smaller window must not leave a hole
            return
        if not len(offsets):
            return
        previous = int(self._parts[-1][0][-1]) if self._parts else -1
        self._increasing = self._increasing and int(offsets[0]) > previous and bool((offsets[1:] > offsets[:-1]).all())
        unknown = np.full(len(offsets), -1, dtype=np.int64)
        self._parts.append((offsets, bases, null, *(unknown if v is None else v for v in (start, tail, end))))
        self.rows += len(offsets)

    def reserve(self, rows: int) -> bool:
        """Count `rows` more of `ROW_BYTES` against the limit (cleaner_skips.py's batches): False past it."""
        if self.rows + rows > self.limit:
            self.limit = self.rows
            return False
        self.rows += rows
        return True

    def seal(self, omap: OffsetMap) -> None:
        """The map is complete: the rows that are their key's latest are those at the offsets it maps (a record's
        offset is its own, and the key at that offset is mapped to it): no key is looked up again. Only the
        offsets and base offsets of every row stay, and the places of the rows that stay."""
        parts, self._parts = self._parts, []
        if not parts or not self._increasing:
            return
        offsets = np.concatenate([part[0] for part in parts])
        latest = np.sort(omap.mapped_offsets())
        at = np.minimum(np.searchsorted(offsets, latest), len(offsets) - 1)
        rows = at[offsets[at] == latest]
        ends = np.cumsum([len(part[0]) for part in parts])
        cut = np.searchsorted(rows, ends).tolist()  # the rows that stay, by window: rows[cut[w-1]:cut[w]]
        kept = []
        for column in range(2, 6):  # a gather per window: no concatenation of whole columns
            kept.append(np.concatenate([part[column][rows[a:b] - (end - len(part[0]))]
                                        for part, a, b, end in zip(parts, [0] + cut[:-1], cut, ends.tolist())]))
        self.offsets = offsets
        self.bases = np.concatenate([part[1] for part in parts])
        self.stay_rows = rows
        self._nulls = np.concatenate(([0], np.cumsum(kept[0], dtype=np.int64)))
        self._kept = tuple(kept)
        self.sealed = True

    def decide(self, items: Sequence[Item], data: Sequence[int], verdicts: Sequence[Verdict], *,
               producers: Mapping[int, ProducerLast], upper_bound: int, now_ms: int,
               chunk: memoryview | None = None, chunk_position: int = 0, delete_retention_ms: int = 0) -> Decided:
        """For the batches `items[i]`, i in `data` (data batches whose records the seam keeps), all of whose
        records the map took: i -> (what goes into the cleaned segment, how many records stay). Those that keep
        some of their records are rebuilt from `chunk` (read at `chunk_position` of the segment file; None: not
        answered), unless compressed. The batches not answered are left to the scan."""
        if not self.sealed or not data:
            return {}
        batches = [items[i][1] for i in data]
        base = np.fromiter((b.base_offset for b in batches), dtype=np.int64, count=len(batches))
        last = np.fromiter((b.last_offset for b in batches), dtype=np.int64, count=len(batches))
        count = np.fromiter((b.record_count for b in batches), dtype=np.int64, count=len(batches))
        lo = np.searchsorted(self.offsets, base, side="left")
        hi = np.searchsorted(self.offsets, last, side="right")
        covered = (hi - lo == count) & (count > 0)
        top = len(self.offsets) - 1
        covered &= (self.bases[np.minimum(lo, top)] == base) & (self.bases[np.minimum(hi - 1, top)] == base)
        first, stop = np.searchsorted(self.stay_rows, lo), np.searchsorted(self.stay_rows, hi)
        nulls_in = self._nulls[stop] - self._nulls[first]
        live = (stop - first - nulls_in).tolist()
        null = nulls_in.tolist()
        found: Decided = {}
        partial: list[tuple[int, int, int | None, bool]] = []  # see _rebuild
        for k in np.flatnonzero(covered).tolist():
            i, batch, verdict = data[k], batches[k], verdicts[data[k]]
            horizon = verdict.horizon
            tombstones_go = horizon is not None and now_ms >= horizon
            nulls = 0 if tombstones_go else null[k]
            kept = live[k] + nulls
            set_horizon = needs_delete_horizon(horizon is not None, nulls > 0, False)
            if kept == batch.record_count and not set_horizon:
                found[i] = (batch.buffer, kept)
            elif kept == 0:
                retention = batch_retention(producer_id=batch.producer_id, producer_epoch=batch.producer_epoch,
                                            is_control=False, last_offset=batch.last_offset,
                                            next_offset=batch.next_offset, producers=producers,
                                            upper_bound=upper_bound, discard_records=False)
                found[i] = (empty_batch(batch) if retention is BatchRetention.RETAIN_EMPTY else None, 0)
            elif chunk is not None:
                partial.append((k, kept, now_ms + delete_retention_ms if set_horizon else horizon, tombstones_go))
        if partial:
            assert chunk is not None
            self._rebuild(found, partial, data, batches, first, stop, chunk, chunk_position)
        return found

    def _rebuild(self, found: Decided, partial: list[tuple[int, int, int | None, bool]], data: Sequence[int],
                 batches: list, first_kept: np.ndarray, stop_kept: np.ndarray, chunk: memoryview,
                 chunk_position: int) -> None:
        """Rebuild the batches of `partial` ((k, records kept, horizon written, whether its tombstones go)) from the
        places of their kept records in `chunk`, all the chunk's at once (records/rebuild_many.py). A batch with a
        row of unknown place (compressed) is left to the scan."""
        ks = np.array([p[0] for p in partial], dtype=np.int64)
        first = first_kept[ks]
        sizes = stop_kept[ks] - first
        owner = np.repeat(np.arange(len(ks)), sizes)
        rows = first[owner] + np.arange(len(owner), dtype=np.int64) - (np.cumsum(sizes) - sizes)[owner]
        null, start, tail, end = (column[rows] for column in self._kept)
        tombstones_go = np.array([p[3] for p in partial], dtype=bool)
        keep = ~(null & tombstones_go[owner])
        unknown = np.zeros(len(ks), dtype=bool)
        unknown[owner[start < 0]] = True
        keep &= ~unknown[owner]
        known = np.flatnonzero(~unknown)
        if not len(known):
            return
        renumber = np.cumsum(~unknown) - 1  # batch j -> its place among the batches rebuilt here
        rows, owner = rows[keep], renumber[owner[keep]]
        stamps, _ = varints(np.frombuffer(chunk, dtype=np.uint8), start[keep] - chunk_position + 1,
                            _LONG_VARINT_BYTES)
        assert stamps is not None  # the scan that mapped these records read them
        at = self.stay_rows[rows]
        chosen = [partial[j] for j in known.tolist()]
        rebuilt = rebuild_many([batches[k] for k, _, _, _ in chosen], [horizon for _, _, horizon, _ in chosen], chunk,
                               owner, self.offsets[at] - self.bases[at], stamps, tail[keep] - chunk_position,
                               end[keep] - chunk_position)
        for (k, kept, _, _), out in zip(chosen, rebuilt):
            found[data[k]] = (out, kept)
