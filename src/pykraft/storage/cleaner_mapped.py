"""The keyed records the offset map took in a pass, kept from the map's read for the rewrite, so that a batch whose
records all stay, or all go, is decided without reading its records again (the cleaner's fast path).

Kafka's cleaner reads the dirty section twice: once to build the map, once to rewrite it, decoding every record
both times. Here the map's read keeps, for each keyed record it mapped, its offset, the base offset of its batch,
its key's hash and whether its value is null (`add`, from cleaner_chunks.map_chunk); once the map is complete,
one lookup says which of them are their key's latest (`seal`). In the rewrite, a data batch all of whose records
are among them (`decide`) gets Kafka's decision from those rows: kept whole (its bytes), emptied (an empty batch
or nothing, compaction_rules.batch_retention), or, when it keeps some, left to the scan of its records, which
rebuilds it. The decision per record is `compaction_rules.retain_record`'s, as in `cleaner_chunks.kept_records`:
the same map, the same offsets, the same tombstone rule; tests/storage/test_cleaner_fast_path*.py clean the same
logs this way and record by record.

Memory: 33 bytes a row while mapping, 17 after `seal`, at most `limit` rows (half the part of the dedupe buffer the
pass's map table leaves): rows beyond it are not kept and their batches are read again, as without this.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from pykraft.records.rebuild import empty_batch

from .cleaner_txns import Item, Verdict
from .compaction_rules import BatchRetention, ProducerLast, batch_retention, needs_delete_horizon
from .offset_map import OffsetMap

ROW_BYTES = 40  # a row while mapping (33 bytes) and the concatenation's temporaries, about


class MappedRecords:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.rows = 0
        self._parts: list[tuple[np.ndarray, ...]] = []
        self.offsets = np.zeros(0, dtype=np.int64)
        self.bases = np.zeros(0, dtype=np.int64)
        self._live = np.zeros(1, dtype=np.int64)  # cumulative counts of the rows that stay, value not null
        self._null = np.zeros(1, dtype=np.int64)  # ... and value null (a tombstone, until its horizon)
        self.sealed = False

    def add(self, offsets: np.ndarray, bases: np.ndarray, high: np.ndarray, low: np.ndarray,
            null: np.ndarray) -> None:
        """Keep a window's mapped records (log order); past `limit`, none more is kept."""
        if self.rows + len(offsets) > self.limit:
            self.limit = self.rows  # a later, smaller window must not leave a hole
            return
        self._parts.append((offsets, bases, high, low, null))
        self.rows += len(offsets)

    def seal(self, omap: OffsetMap) -> None:
        """The map is complete: which rows are their key's latest. Rows whose offsets do not increase (a malformed
        batch) make the whole set unusable: every batch is then read again."""
        if not self._parts:
            return
        offsets, bases, high, low, null = (np.concatenate(column) for column in zip(*self._parts))
        self._parts = []
        if not len(offsets) or not (np.diff(offsets) > 0).all():
            return
        stays = offsets >= omap.lookup(high, low)
        self.offsets, self.bases = offsets, bases
        self._live = np.concatenate(([0], np.cumsum(stays & ~null, dtype=np.int64)))
        self._null = np.concatenate(([0], np.cumsum(stays & null, dtype=np.int64)))
        self.sealed = True

    def decide(self, items: Sequence[Item], data: Sequence[int], verdicts: Sequence[Verdict], *,
               producers: Mapping[int, ProducerLast], upper_bound: int,
               now_ms: int) -> dict[int, tuple[bytes | memoryview | None, int]]:
        """For the batches `items[i]`, i in `data` (data batches whose records the seam keeps), that keep all of
        their records or none: i -> (what goes into the cleaned segment, how many records stay). The others
        are not answered (their records are read)."""
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
        live = (self._live[hi] - self._live[lo]).tolist()
        null = (self._null[hi] - self._null[lo]).tolist()
        found: dict[int, tuple[bytes | memoryview | None, int]] = {}
        for k in np.flatnonzero(covered).tolist():
            i, batch, verdict = data[k], batches[k], verdicts[data[k]]
            horizon = verdict.horizon
            nulls = 0 if horizon is not None and now_ms >= horizon else null[k]
            kept = live[k] + nulls
            if kept == batch.record_count and not needs_delete_horizon(horizon is not None, nulls > 0, False):
                found[i] = (batch.buffer, kept)
            elif kept == 0:
                retention = batch_retention(producer_id=batch.producer_id, producer_epoch=batch.producer_epoch,
                                            is_control=False, last_offset=batch.last_offset,
                                            next_offset=batch.next_offset, producers=producers,
                                            upper_bound=upper_bound, discard_records=False)
                found[i] = (empty_batch(batch) if retention is BatchRetention.RETAIN_EMPTY else None, 0)
        return found
