"""The cleaner's hot loops, one chunk (one read of the I/O buffer) at a time: the offset map's records and the
filter of a rewrite, with numpy over the chunk's records instead of a Python step per record (DESIGN.md §6).

A chunk's data batches are scanned into columns (records/record_scan.py; a compressed batch's records section is
decompressed first, and only then); the keys are hashed all at once (key_hash.py) and put into or looked up in the
offset map as runs (offset_map.py). Per batch, in log order, the transaction seam is asked and Kafka's decisions are
taken (compaction_rules.py): a batch that keeps every record and needs no delete horizon is copied as its bytes
(Kafka's `MemoryRecords.filterTo` does the same), one that keeps none goes (or stays empty), and only a batch that
keeps some is rebuilt, from its kept rows (records/rebuild.py). What the record-by-record path does per record,
this does per chunk, with the same outcome byte for byte (tests/storage/test_cleaner_fast_path.py cleans the same
logs both ways): control batches, batches whose records the seam discards and chunks the scan refuses are handed
to the record-by-record path (`Cleaner.filter_batch`), which also gives a malformed batch its exact error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pykraft.records import RecordBatch
from pykraft.records.batch import ATTR_COMPRESSION_MASK, BATCH_HEADER_SIZE
from pykraft.records.compression import decompress
from pykraft.records.rebuild import empty_batch, rebuild_records
from pykraft.records.record_scan import RecordColumns, scan_records

from .cleaner_txns import Item, Verdict
from .key_hash import np  # loaded at first use (records/lazy_numpy.py); imported only where numpy exists
from .compaction_rules import BatchRetention, ProducerLast, batch_retention, needs_delete_horizon
from .cleaner_mapped import MappedRecords
from .key_hash import PAD_BYTES
from .offset_map import OffsetMap

_PAD = bytes(PAD_BYTES)

@dataclass(frozen=True, slots=True)
class Scanned:
    raw: bytes | memoryview  # the chunk, then the decompressed records sections, then padding
    chunk_bytes: int  # the chunk's part of `raw`: positions beyond it are in decompressed sections
    columns: RecordColumns
    offsets: np.ndarray  # each record's offset
    batch_of: np.ndarray  # each record's index among the scanned batches


def scan_chunk(chunk: bytes | bytearray | memoryview, items: Sequence[Item], wanted: Sequence[int], *,
               padded: bool = False) -> Scanned | None:
    """The records of `items[i]` for each i in `wanted` (data batches), or None: the record-by-record path
    decides (and reports a malformed batch or a bad compressed section with its own error). `padded`: the chunk
    ends with `PAD_BYTES` past its batches (the cleaner's reads), used in place when no batch is compressed."""
    bodies: list[tuple[int, int, int]] = []
    extra: list[bytes] = []
    end = len(chunk)
    for i in wanted:
        position, batch = items[i]
        codec = batch.attributes & ATTR_COMPRESSION_MASK
        if not codec:
            bodies.append((position + BATCH_HEADER_SIZE, position + batch.size_in_bytes, batch.record_count))
            continue
        try:
            section = decompress(codec, batch.buffer[BATCH_HEADER_SIZE:])
        except Exception:  # records_section raises it again, as the full decode would
            return None
        bodies.append((end, end + len(section), batch.record_count))
        extra.append(section)
        end += len(section)
    raw = chunk if padded and not extra and isinstance(chunk, memoryview) else b"".join([chunk, *extra, _PAD])
    columns = scan_records(raw, bodies)
    if columns is None:
        return None
    counts = np.diff(columns.first)
    batch_of = np.repeat(np.arange(len(bodies)), counts)
    bases = np.array([items[i][1].base_offset for i in wanted], dtype=np.int64)
    return Scanned(raw, len(chunk), columns, bases[batch_of] + columns.offset_delta, batch_of)


def map_chunk(omap: OffsetMap, scanned: Scanned, start: int, kept: MappedRecords | None = None,
              chunk_position: int = 0) -> int | None:
    """Put the keyed records at offsets >= `start` into the map (and into `kept`, for the rewrite, with their
    places in the segment file, the chunk having been read at `chunk_position`). Returns None when all went in,
    else the index (among the scanned batches) of the batch where the map was full."""
    columns = scanned.columns
    rows = np.flatnonzero((columns.key_length >= 0) & (scanned.offsets >= start))
    high, low = omap.hasher.hash_keys(scanned.raw, columns.key_start[rows], columns.key_length[rows])
    mapped = omap.put_run(high, low, scanned.offsets[rows])
    if kept is not None:
        done = rows[:mapped]
        offsets = scanned.offsets[done]
        in_file = columns.tail[done] < scanned.chunk_bytes  # else in a decompressed section: -1, no place
        places = [np.where(in_file, column[done] + chunk_position, -1)
                  for column in (columns.start, columns.tail, columns.end)]
        kept.add(offsets, offsets - columns.offset_delta[done], columns.null_value[done], *places)
    return None if mapped == len(rows) else int(scanned.batch_of[rows[mapped]])


@dataclass(frozen=True, slots=True)
class Kept:
    """Per scanned batch: how many records stay, whether one of them has a null value, how many keyless records
    below the map's reach went (Kafka counts them as invalid); and the mask of the records that stay."""

    counts: list[int]
    null_values: list[int]
    invalid: list[int]
    mask: np.ndarray


def kept_records(omap: OffsetMap, scanned: Scanned, tombstones_go: np.ndarray) -> Kept:
    """Kafka's `shouldRetainRecord` for every scanned record (compaction_rules.retain_record, at once).
    `tombstones_go`: per scanned batch, whether its delete horizon has passed."""
    columns, offsets = scanned.columns, scanned.offsets
    below = offsets <= omap.latest_offset
    keyed = columns.key_length >= 0
    rows = np.flatnonzero(below & keyed)
    high, low = omap.hasher.hash_keys(scanned.raw, columns.key_start[rows], columns.key_length[rows])
    latest = omap.lookup(high, low)
    keep = ~below
    keep[rows] = (offsets[rows] >= latest) & ~(columns.null_value[rows] & tombstones_go[scanned.batch_of[rows]])

    def per_batch(mask: np.ndarray) -> list[int]:
        total = np.concatenate(([0], np.cumsum(mask, dtype=np.int64)))
        return (total[columns.first[1:]] - total[columns.first[:-1]]).tolist()

    return Kept(per_batch(keep), per_batch(keep & columns.null_value), per_batch(below & ~keyed), keep)


@dataclass(frozen=True, slots=True)
class Rebuilt:
    """The kept records of the scanned batches that are rebuilt, as lists (one `tolist` per chunk, not per batch):
    batch k's are [at[k], at[k] + its kept count)."""

    at: list[int]
    offset_delta: list[int]
    timestamp_delta: list[int]
    tail: list[int]
    end: list[int]


def rebuilt_columns(scanned: Scanned, kept: Kept, rebuild: list[bool]) -> Rebuilt:
    """The columns `rebuild_records` needs for the kept records of the batches flagged in `rebuild`."""
    columns = scanned.columns
    flags = np.array(rebuild, dtype=bool)
    rows = np.flatnonzero(kept.mask & flags[scanned.batch_of])
    at, total = [], 0
    for k, flagged in enumerate(rebuild):
        at.append(total)
        total += kept.counts[k] if flagged else 0
    return Rebuilt(at, columns.offset_delta[rows].tolist(), columns.timestamp_deltas(rows).tolist(),
                   columns.tail[rows].tolist(), columns.end[rows].tolist())


def needs_rebuild(batch: RecordBatch, kept_count: int, kept_null_values: int, verdict: Verdict) -> bool:
    """A batch that keeps some of its records, or all of them but needs a delete horizon, is rebuilt."""
    if not kept_count:
        return False
    return kept_count < batch.record_count or needs_delete_horizon(verdict.horizon is not None,
                                                                   kept_null_values > 0, False)


def filter_scanned(batch: RecordBatch, k: int, scanned: Scanned, kept: Kept, rebuilt: Rebuilt, verdict: Verdict, *,
                   producers: dict[int, ProducerLast] | object, upper_bound: int, now_ms: int,
                   delete_retention_ms: int) -> bytes | memoryview | None:
    """What of scanned batch `k` goes into the cleaned segment (Cleaner.filter_batch's decisions for a data batch
    whose records the seam keeps): its bytes, a rebuilt batch, an empty one, or None."""
    count = kept.counts[k]
    if count:
        set_horizon = needs_delete_horizon(verdict.horizon is not None, kept.null_values[k] > 0, False)
        if count == batch.record_count and not set_horizon:
            return batch.buffer
        horizon = now_ms + delete_retention_ms if set_horizon else verdict.horizon
        a, b = rebuilt.at[k], rebuilt.at[k] + count
        return rebuild_records(batch, scanned.raw, rebuilt.offset_delta[a:b], rebuilt.timestamp_delta[a:b],
                               rebuilt.tail[a:b], rebuilt.end[a:b], horizon)
    retention = batch_retention(producer_id=batch.producer_id, producer_epoch=batch.producer_epoch,
                                is_control=False, last_offset=batch.last_offset, next_offset=batch.next_offset,
                                producers=producers, upper_bound=upper_bound, discard_records=False)  # type: ignore[arg-type]
    return empty_batch(batch) if retention is BatchRetention.RETAIN_EMPTY else None

