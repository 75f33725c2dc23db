"""The log cleaner's pure parts: the offset map, the throttle, the choice of the dirty range and of the log, the
grouping of segments, and the keep/drop decisions per record and per batch (Kafka's LogCleaner rules)."""

from __future__ import annotations

import pytest

from pykraft.storage.compaction_rules import (
    LONG_MAX,
    BatchRetention,
    LogToClean,
    NoTransactions,
    OffsetsToClean,
    ProducerLast,
    SegmentFacts,
    batch_retention,
    choose_filthiest,
    cleanable_bytes,
    cleanable_offsets,
    group_segments_by_size,
    log_to_clean,
    max_compaction_delay,
    needs_delete_horizon,
    retain_record,
    segments_between,
)
from pykraft.storage.offset_map import ENTRY_BYTES, OffsetMap, Throttler
from pykraft.records.rebuild import KeyedRecord


# ---- the offset map ------------------------------------------------------------------------------------------


def test_offset_map_keeps_the_latest_offset_per_key_and_hashes_long_keys() -> None:
    omap = OffsetMap(100 * ENTRY_BYTES)
    long_key, longer = b"k" * 400, b"k" * 401  # above key_hash.VECTOR_KEY_BYTES: hashed through their digest
    omap.put(b"a", 3)
    omap.put(long_key, 4)
    omap.put(b"a", 7)
    omap.put(b"a\x00", 8)  # a zero byte more is another key (the length is hashed too)
    assert omap.get(b"a") == 7 and omap.get(long_key) == 4 and omap.get(b"zz") == -1 and omap.get(longer) == -1
    assert omap.get(b"a\x00") == 8 and omap.get(b"") == -1
    assert omap.size == 3 and omap.latest_offset == 8


def test_offset_map_capacity_is_the_buffer_over_the_entry_cost_times_the_load_factor() -> None:
    omap = OffsetMap(1000 * ENTRY_BYTES, load_factor=0.9)
    assert omap.slots == 1000 and omap.max_entries == 900
    records = [KeyedRecord(i, 0, f"key-{i}".encode(), False, 0, 0) for i in range(950)]
    assert omap.put_records(100, records, start=0) is True  # full before the last 50
    assert omap.size == 900 and omap.latest_offset == 100 + 899
    assert omap.utilization == pytest.approx(0.9)


def test_offset_map_put_records_skips_keyless_records_and_offsets_below_the_start() -> None:
    omap = OffsetMap(100 * ENTRY_BYTES)
    records = [KeyedRecord(0, 0, b"a", False, 0, 0), KeyedRecord(1, 0, None, False, 0, 0),
               KeyedRecord(2, 0, b"b", True, 0, 0)]
    assert omap.put_records(10, records, start=11) is False
    assert omap.get(b"a") == -1 and omap.get(b"b") == 12 and omap.size == 1


def test_a_buffer_too_small_for_one_entry_is_refused_with_kafkas_message() -> None:
    with pytest.raises(ValueError, match="log.cleaner.dedupe.buffer.size"):
        OffsetMap(ENTRY_BYTES, load_factor=0.5)


def test_throttler_sleeps_only_above_the_rate_and_only_after_a_check_interval() -> None:
    throttle = Throttler(1000.0, now_ns=0)  # 1000 bytes/s
    assert throttle.observe(5000, now_ns=100_000_000) == 0.0  # within the 300 ms check interval
    pause = throttle.observe(0, now_ns=500_000_000)  # 5000 bytes in 0.5 s: 4.5 s short
    assert pause == pytest.approx(4.5)
    assert throttle.observe(100, now_ns=5_000_000_000 + 400_000_000) == 0.0  # 100 bytes in 0.4 s: below the rate


# ---- the dirty range and the choice of log -------------------------------------------------------------------


def _segments(*bases_sizes: tuple[int, int], stamps: dict[int, int] | None = None) -> list[SegmentFacts]:
    stamps = stamps or {}
    return [SegmentFacts(b, s, stamps.get(b, -1), stamps.get(b, -1)) for b, s in bases_sizes]


def test_segments_between_takes_the_floor_segment_of_the_start() -> None:
    segs = _segments((0, 10), (100, 10), (200, 10), (300, 0))
    assert [s.base_offset for s in segments_between(segs, 150, 300)] == [100, 200]
    assert [s.base_offset for s in segments_between(segs, -1, 100)] == [0]
    assert segments_between(segs, 300, 300) == []


def test_the_dirty_range_stops_at_the_high_watermark_the_active_segment_and_the_compaction_lag() -> None:
    segs = _segments((0, 10), (100, 10), (200, 10), (300, 0), stamps={0: 1000, 100: 5000, 200: 9000})
    common = dict(log_start=0, log_end=300, checkpoint=None, min_compaction_lag_ms=0, now_ms=10_000)
    assert cleanable_offsets(segs, stable_offset=1000, **common) == OffsetsToClean(0, 300)  # the active segment
    assert cleanable_offsets(segs, stable_offset=150, **common) == OffsetsToClean(0, 150)  # the high watermark
    lagged = dict(common, min_compaction_lag_ms=4000)  # segment 200 holds a record newer than now - 4 s
    assert cleanable_offsets(segs, stable_offset=1000, **lagged) == OffsetsToClean(0, 200)
    longer = dict(common, min_compaction_lag_ms=6000)  # segment 100 (5000) too
    assert cleanable_offsets(segs, stable_offset=1000, **longer).first_uncleanable == 100


def test_a_checkpoint_out_of_the_log_resets_to_the_log_start_and_is_rewritten() -> None:
    segs = _segments((50, 10), (100, 10), (200, 0))
    common = dict(log_start=50, log_end=200, stable_offset=200, min_compaction_lag_ms=0, now_ms=0)
    assert cleanable_offsets(segs, checkpoint=120, **common) == OffsetsToClean(120, 200)
    assert cleanable_offsets(segs, checkpoint=10, **common) == OffsetsToClean(50, 200, True)
    assert cleanable_offsets(segs, checkpoint=900, **common) == OffsetsToClean(50, 200, True)
    assert cleanable_offsets(segs, checkpoint=190, **dict(common, stable_offset=60)) == OffsetsToClean(190, 190)


def test_cleanable_bytes_round_the_uncleanable_offset_down_to_its_segment() -> None:
    segs = _segments((0, 10), (100, 20), (200, 40), (300, 80))
    assert cleanable_bytes(segs, 0, 250) == (200, 30)
    assert cleanable_bytes(segs, 100, 300) == (300, 60)
    assert cleanable_bytes(segs, 0, 900) == (300, 70)  # past the active segment's base: up to it


def test_max_compaction_lag_makes_a_log_due_whatever_its_ratio() -> None:
    segs = _segments((0, 10), (100, 10), (200, 0), stamps={0: 1000, 100: 2000})
    assert max_compaction_delay(segs, 0, LONG_MAX, now_ms=10_000) == 0
    assert max_compaction_delay(segs, 0, 5_000, now_ms=10_000) == 4000  # the oldest dirty batch, 1000
    assert max_compaction_delay(segs, 100, 5_000, now_ms=10_000) == 3000
    offsets = OffsetsToClean(0, 200)
    due = log_to_clean("t", segs, offsets, delay_ms=4000, min_cleanable_ratio=0.99)
    chosen, _ = choose_filthiest([due])
    assert due.need_compaction_now and chosen is due


def test_the_dirtiest_log_above_its_ratio_is_chosen() -> None:
    def log(key: str, clean: int, dirty: int, ratio: float = 0.5) -> LogToClean:
        return LogToClean(key, 0, 0, clean, dirty, False, ratio)

    chosen, dirtiest = choose_filthiest([log("a", 60, 40), log("b", 10, 90), log("c", 30, 70), log("e", 0, 0)])
    assert chosen is not None and chosen.key == "b" and dirtiest == pytest.approx(0.9)
    none, dirtiest = choose_filthiest([log("a", 60, 40), log("b", 10, 90, ratio=0.95)])
    assert none is None and dirtiest == pytest.approx(0.9)
    assert log("a", 50, 50).cleanable_ratio == 0.5 and choose_filthiest([log("a", 50, 50)])[0] is None  # not above


def test_segments_are_grouped_by_log_size_index_size_and_offset_range() -> None:
    segs = [SegmentFacts(0, 40, offset_index_bytes=8, time_index_bytes=12), SegmentFacts(10, 40, -1, -1, 8, 12),
            SegmentFacts(20, 40, -1, -1, 8, 12), SegmentFacts(30, 0), SegmentFacts(40, 90)]
    grouped = group_segments_by_size(segs, max_size=100, max_index_size=1000, first_uncleanable=50)
    assert [[s.base_offset for s in g] for g in grouped] == [[0, 10], [20, 30], [40]]
    by_index = group_segments_by_size(segs, max_size=1000, max_index_size=24, first_uncleanable=50)
    assert [[s.base_offset for s in g] for g in by_index] == [[0, 10], [20, 30, 40]]
    far = [SegmentFacts(0, 1), SegmentFacts(2**31, 1), SegmentFacts(2**31 + 5, 1)]
    assert [[s.base_offset for s in g] for g in group_segments_by_size(far, 100, 100, 2**31 + 10)] == \
        [[0], [2**31, 2**31 + 5]]


# ---- records and batches -------------------------------------------------------------------------------------


def test_a_record_stays_only_as_the_latest_of_its_key() -> None:
    common = dict(latest_mapped=100, delete_horizon_ms=None, now_ms=0)
    assert retain_record(50, b"k", False, key_offset=60, **common) is False  # overwritten later
    assert retain_record(60, b"k", False, key_offset=60, **common) is True
    assert retain_record(50, b"k", False, key_offset=-1, **common) is True  # key not in the dirty section
    assert retain_record(50, None, False, key_offset=-1, **common) is False  # a keyless record goes
    assert retain_record(150, None, False, key_offset=-1, **common) is True  # past the map: untouched


def test_a_tombstone_stays_until_its_batchs_delete_horizon() -> None:
    common = dict(latest_mapped=100, key_offset=60)
    assert retain_record(60, b"k", True, delete_horizon_ms=None, now_ms=10**12, **common) is True
    assert retain_record(60, b"k", True, delete_horizon_ms=5000, now_ms=4999, **common) is True
    assert retain_record(60, b"k", True, delete_horizon_ms=5000, now_ms=5000, **common) is False
    assert retain_record(50, b"k", True, delete_horizon_ms=None, now_ms=0, **common) is False  # overwritten
    assert needs_delete_horizon(False, kept_tombstone=True, marker_for_empty_txn=False)
    assert not needs_delete_horizon(True, kept_tombstone=True, marker_for_empty_txn=False)  # set once only
    assert not needs_delete_horizon(False, kept_tombstone=False, marker_for_empty_txn=False)


def _retention(**overrides: object) -> BatchRetention:
    args: dict = dict(producer_id=-1, producer_epoch=-1, is_control=False, last_offset=10, next_offset=11,
                      producers={}, upper_bound=100, discard_records=False)
    args.update(overrides)
    return batch_retention(**args)


def test_an_active_producers_last_batch_is_kept_even_when_emptied() -> None:
    producers = {7: ProducerLast(last_data_offset=10, epoch=2)}
    assert _retention(producer_id=7, producers=producers) is BatchRetention.RETAIN_EMPTY
    assert _retention(producer_id=7, producers=producers, last_offset=5, next_offset=6) is BatchRetention.DELETE_EMPTY
    assert _retention(producer_id=8, producers=producers) is BatchRetention.DELETE_EMPTY  # expired producer
    assert _retention(producer_id=7, producers=producers, discard_records=True) is BatchRetention.RETAIN_EMPTY
    marker_last = {7: ProducerLast(last_data_offset=None, epoch=2)}
    assert _retention(producer_id=7, producer_epoch=2, is_control=True, producers=marker_last) is \
        BatchRetention.RETAIN_EMPTY
    assert _retention(producer_id=7, producer_epoch=1, is_control=True, producers=marker_last) is \
        BatchRetention.DELETE_EMPTY


def test_the_rounds_last_batch_stays_and_a_discardable_batch_goes() -> None:
    assert _retention(next_offset=100) is BatchRetention.RETAIN_EMPTY
    assert _retention(discard_records=True) is BatchRetention.DELETE
    assert _retention() is BatchRetention.DELETE_EMPTY


def test_transaction_markers_are_kept_until_the_transactions_issue_fills_the_seam() -> None:
    seam = NoTransactions()
    assert seam.on_control_batch_read(producer_id=3, last_offset=9, control_type=0) is False  # ABORT
    assert seam.on_control_batch_read(producer_id=3, last_offset=9, control_type=1) is False  # COMMIT
    assert seam.on_batch_read(producer_id=3, is_transactional=True, last_offset=8) is False
