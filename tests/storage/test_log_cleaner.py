"""Cleaner passes over real partition logs: what a reader sees afterwards, tombstone timing, a full offset map,
idempotent producers' batches, grouping, the checkpoint, aborts, and a cleaned log reopened and replicated."""

from __future__ import annotations

import os

from pykraft.storage.cleaner import Cleaner, CleaningAborted
from pykraft.storage.cleaner_manager import CleanerManager, CompactionSettings
from pykraft.storage.compaction_rules import ProducerLast
from pykraft.storage.files import CLEANER_CHECKPOINT
from pykraft.storage.offset_checkpoints import read_offsets
from pykraft.storage.offset_map import ENTRY_BYTES, OffsetMap, Throttler

from .cleaner_helpers import (
    KEY, batches, latest_per_key, new_log, put, put_idempotent, records, reopen, run_pass,
)

EAGER = CompactionSettings(min_cleanable_ratio=0.0, segment_bytes=1200, delete_retention_ms=5000)


def _overwrites(log, rounds: int = 5, keys: int = 12, tombstones: tuple[str, ...] = ("k3", "k7")) -> None:
    for r in range(rounds):
        for k in range(keys):
            key = f"k{k}"
            put(log, key, None if (r == rounds - 1 and key in tombstones) else f"{key}-r{r}", 1000 + r)


def _seal(log) -> None:
    log.roll()
    log.update_high_watermark(log.end_offset())


def test_a_pass_keeps_the_latest_record_of_each_key_at_its_offset(tmp_path) -> None:
    log = new_log(str(tmp_path))
    _overwrites(log)
    _seal(log)
    before = records(log)
    size_before = log.size_in_bytes()
    manager = CleanerManager([str(tmp_path)])
    task, end, stats = run_pass(manager, log, 10_000, settings=EAGER)
    after = records(log)
    assert latest_per_key(after) == latest_per_key(before)
    assert len(after) == 12 and set(after) <= set(before)  # the same records at the same offsets
    assert [o for o, _, _ in after] == sorted(latest[0] for latest in latest_per_key(before).values())
    assert end == log.end_offset() == 60 and stats.messages_read == 60 and stats.messages_written == 12
    assert log.size_in_bytes() < size_before / 3
    assert read_offsets(os.path.join(str(tmp_path), CLEANER_CHECKPOINT)) == {KEY: 60}
    assert open(os.path.join(str(tmp_path), CLEANER_CHECKPOINT)).read() == "0\n1\ncompacted 0 60\n"
    assert not [n for n in os.listdir(log.directory) if n.endswith((".cleaned", ".swap", ".deleted"))]
    log.close()


def test_the_active_segment_and_what_is_above_the_high_watermark_stay_dirty(tmp_path) -> None:
    log = new_log(str(tmp_path))
    _overwrites(log, rounds=4)
    log.update_high_watermark(30)  # mid-log: only whole segments below it are cleanable
    bases = log.segment_base_offsets()
    limit = max(b for b in bases if b <= 30)
    before = records(log)
    task, end, _ = run_pass(CleanerManager([str(tmp_path)]), log, 10_000, settings=EAGER)
    assert task.first_uncleanable == limit and end <= limit
    after = records(log)
    assert [row for row in after if row[0] >= limit] == [row for row in before if row[0] >= limit]
    assert len([row for row in after if row[0] < limit]) < len([row for row in before if row[0] < limit])
    log.close()


def test_tombstones_go_once_delete_retention_ms_passed_since_their_first_cleaning(tmp_path) -> None:
    log = new_log(str(tmp_path))
    _overwrites(log)
    _seal(log)
    manager = CleanerManager([str(tmp_path)])
    run_pass(manager, log, 10_000, settings=EAGER)
    tombstones = [row for row in records(log) if row[2] is None]
    assert [key for _, key, _ in tombstones] == ["k3", "k7"]
    horizons = {b.base_timestamp for b in batches(log) if b.attributes & 0x40}
    assert horizons == {15_000}  # now + delete.retention.ms, in the base timestamp (KIP-534)

    put(log, "other", "x")
    _seal(log)
    run_pass(manager, log, 14_999, settings=EAGER)
    assert [row[1] for row in records(log) if row[2] is None] == ["k3", "k7"]
    put(log, "other", "y")
    _seal(log)
    run_pass(manager, log, 15_000, settings=EAGER)
    assert [row for row in records(log) if row[2] is None] == []
    assert latest_per_key(records(log))["k4"][1] == "k4-r4"
    log.close()


def test_a_full_offset_map_cleans_up_to_the_last_offset_it_mapped(tmp_path) -> None:
    log = new_log(str(tmp_path))
    for round_ in range(2):
        for k in range(30):
            put(log, f"k{k:02d}", f"r{round_}")
    _seal(log)
    before = records(log)
    manager = CleanerManager([str(tmp_path)])
    buffer = 12 * ENTRY_BYTES  # 12 slots, 10 keys at the 0.9 load factor
    task, end, stats = run_pass(manager, log, 10_000, settings=EAGER, buffer=buffer)
    assert end == 10 and stats.buffer_utilization == 10 / 12
    assert read_offsets(os.path.join(str(tmp_path), CLEANER_CHECKPOINT)) == {KEY: 10}
    assert [row for row in records(log) if row[0] >= 10] == [row for row in before if row[0] >= 10]
    passes = 1
    while run_pass(manager, log, 10_000, settings=EAGER, buffer=buffer) is not None:
        passes += 1
    assert passes == 6  # 60 offsets, 10 keys a pass
    assert records(log) == [(30 + k, f"k{k:02d}", "r1") for k in range(30)]
    log.close()


def test_an_active_producers_last_batch_stays_as_an_empty_batch(tmp_path) -> None:
    log = new_log(str(tmp_path))
    first = put_idempotent(log, 7, 0, [("a", "1"), ("b", "1")])
    put_idempotent(log, 9, 0, [("c", "1")])
    for key in ("a", "b", "c"):
        put(log, key, "2")
    _seal(log)
    producers = {7: ProducerLast(last_data_offset=first + 1, epoch=0)}  # 9 expired: no longer active
    run_pass(CleanerManager([str(tmp_path)]), log, 10_000, settings=EAGER, producers=producers)
    kept = batches(log)
    empty = [b for b in kept if b.record_count == 0]
    assert len(empty) == 1 and (empty[0].producer_id, empty[0].base_sequence) == (7, 0)
    assert (empty[0].base_offset, empty[0].last_offset) == (first, first + 1)
    assert not [b for b in kept if b.producer_id == 9]
    assert [(k, v) for _, k, v in records(log)] == [("a", "2"), ("b", "2"), ("c", "2")]
    log.close()


def test_small_cleaned_segments_are_grouped_into_one(tmp_path) -> None:
    log = new_log(str(tmp_path))
    _overwrites(log, rounds=6, tombstones=())
    _seal(log)
    manager = CleanerManager([str(tmp_path)])
    run_pass(manager, log, 10_000, settings=EAGER)
    segments_after_first = len(log.segment_base_offsets())
    for k in range(12):
        put(log, f"k{k}", "again")
    _seal(log)
    run_pass(manager, log, 10_000, settings=EAGER)
    assert len(log.segment_base_offsets()) < segments_after_first
    assert log.segment_base_offsets()[0] == 0  # a group keeps its first segment's base offset
    assert all(v == "again" for _, _, v in records(log))
    log.close()


def test_a_cleaned_log_reopens_as_it_was_and_a_follower_copies_it_across_the_gaps(tmp_path) -> None:
    root, follower_root = str(tmp_path / "leader"), str(tmp_path / "follower")
    log = new_log(root)
    _overwrites(log)
    _seal(log)
    run_pass(CleanerManager([root]), log, 10_000, settings=EAGER)
    cleaned = records(log)
    gap = next(o for o in range(log.end_offset()) if o not in {row[0] for row in cleaned})
    assert records(log, gap)[0][0] > gap  # a read from a removed offset gets the next record
    log.close()
    log, report = reopen(root)
    assert records(log) == cleaned and report.rebuilt_indexes == () and report.removed_files == ()
    follower = new_log(follower_root)
    offset = 0
    while offset < log.end_offset():
        follower.append_as_follower(log.read(offset, 200).records, 1)
        offset = follower.end_offset()
    assert records(follower) == cleaned and follower.end_offset() == log.end_offset()
    follower.close()
    follower, _ = reopen(follower_root)
    assert records(follower) == cleaned
    follower.close()
    log.close()


class _AbortingHost:
    """Swaps after the log was truncated or the partition paused: the pass must swap nothing."""

    def __init__(self, manager: CleanerManager, log, act) -> None:
        self.manager, self.log, self.act = manager, log, act

    def check_aborted(self, key) -> None:
        self.manager.check_aborted(key)

    def swap(self, task, cleaned, old_bases) -> bool:
        self.act(self.manager, self.log)
        return self.manager.swap(self.log, task, cleaned, old_bases)


def _pass_with(tmp_path, act) -> tuple[list, list]:
    log = new_log(str(tmp_path))
    _overwrites(log)
    _seal(log)
    before = records(log)
    manager = CleanerManager([str(tmp_path)])
    from pykraft.storage.cleaner_manager import CleanableLog

    task = manager.plan([CleanableLog(KEY, str(tmp_path), log, EAGER)], 10_000)
    cleaner = Cleaner(OffsetMap(1 << 20), 4096, Throttler(float("inf"), 0))
    aborted = False
    try:
        cleaner.clean(task, _AbortingHost(manager, log, act))
    except CleaningAborted:
        aborted = True
    finally:
        manager.done(task, None if aborted else 60)
    assert aborted
    assert not [n for n in os.listdir(log.directory) if n.endswith((".cleaned", ".swap", ".deleted"))]
    assert read_offsets(os.path.join(str(tmp_path), CLEANER_CHECKPOINT)) == {}
    after = records(log)
    log.close()
    return before, after


def test_a_pause_during_a_pass_swaps_nothing(tmp_path) -> None:
    before, after = _pass_with(tmp_path, lambda manager, log: manager.abort_and_pause(KEY))
    assert after == before


def test_a_truncation_during_a_pass_swaps_nothing(tmp_path) -> None:
    before, after = _pass_with(tmp_path, lambda manager, log: log.truncate_to(40))
    assert after == [row for row in before if row[0] < 40]


def test_a_paused_partition_is_not_chosen_until_resumed_and_a_truncation_lowers_its_checkpoint(tmp_path) -> None:
    log = new_log(str(tmp_path))
    _overwrites(log)
    _seal(log)
    manager = CleanerManager([str(tmp_path)])
    manager.abort_and_pause(KEY)
    manager.abort_and_pause(KEY)
    assert run_pass(manager, log, 10_000, settings=EAGER) is None
    manager.resume(KEY)
    assert run_pass(manager, log, 10_000, settings=EAGER) is None
    manager.resume(KEY)
    assert run_pass(manager, log, 10_000, settings=EAGER) is not None
    manager.truncated(KEY, str(tmp_path), 25)
    assert read_offsets(os.path.join(str(tmp_path), CLEANER_CHECKPOINT)) == {KEY: 25}
    manager.forget(KEY, str(tmp_path))
    assert read_offsets(os.path.join(str(tmp_path), CLEANER_CHECKPOINT)) == {}
    log.close()


def test_a_log_below_its_dirty_ratio_is_left_alone(tmp_path) -> None:
    log = new_log(str(tmp_path))
    _overwrites(log)
    _seal(log)
    manager = CleanerManager([str(tmp_path)])
    run_pass(manager, log, 10_000, settings=EAGER)
    clean = log.size_in_bytes()
    put(log, "k1", "dirty")
    _seal(log)
    dirty = log.size_in_bytes() - clean
    assert run_pass(manager, log, 10_000, settings=CompactionSettings(segment_bytes=1200)) is None  # ratio 0.5
    assert manager.dirtiest_ratio == dirty / (clean + dirty) < 0.5
    assert run_pass(manager, log, 10_000, settings=EAGER) is not None
    log.close()


def test_the_producer_snapshots_of_segments_merged_away_are_deleted(tmp_path) -> None:
    log = new_log(str(tmp_path))
    _overwrites(log, rounds=6, tombstones=())
    _seal(log)
    manager = CleanerManager([str(tmp_path)])
    run_pass(manager, log, 10_000, settings=EAGER)  # small cleaned segments, merged by the next pass
    for k in range(12):
        put(log, f"k{k}", "again")
    _seal(log)
    before = log.segment_base_offsets()
    for base in before:
        log.producer_snapshots.write(base, b"state")  # what a roll writes, named by the new segment's base
    run_pass(manager, log, 10_000, settings=EAGER)
    assert len(log.segment_base_offsets()) < len(before)
    assert set(log.producer_snapshots.offsets) == set(log.segment_base_offsets())
    assert sorted(n for n in os.listdir(log.directory) if n.endswith(".snapshot")) == \
        [f"{b:020d}.snapshot" for b in log.segment_base_offsets()]
    log.close()


def test_retention_deletes_a_segment_the_cleaner_emptied_as_kafka_does(tmp_path) -> None:
    from pykraft.storage.retention import delete_expired_segments

    log = new_log(str(tmp_path))
    _overwrites(log, tombstones=())
    _seal(log)
    run_pass(CleanerManager([str(tmp_path)]), log, 10_000, settings=EAGER)
    assert log._segments[0].size == 0  # everything in the first segment was overwritten later
    kept = records(log)
    assert delete_expired_segments(log, 10_000, retention_ms=10**12, retention_bytes=-1) >= 1
    assert log.start_offset() > 0 and records(log) == kept
    log.close()


def test_a_log_moved_to_another_directory_takes_its_checkpoint_and_mark(tmp_path) -> None:
    first, second = str(tmp_path / "a"), str(tmp_path / "b")
    os.makedirs(first)
    os.makedirs(second)
    manager = CleanerManager([first, second])
    from pykraft.storage.offset_checkpoints import update_offsets

    update_offsets(os.path.join(first, CLEANER_CHECKPOINT), {KEY: 42, ("other", 1): 7})
    manager.mark_uncleanable(first, KEY)
    manager.abort_and_pause(KEY)
    manager.move_checkpoint(KEY, first, second)
    manager.resume(KEY)
    assert read_offsets(os.path.join(first, CLEANER_CHECKPOINT)) == {("other", 1): 7}
    assert read_offsets(os.path.join(second, CLEANER_CHECKPOINT)) == {KEY: 42}
    assert (manager.uncleanable_count(first), manager.uncleanable_count(second)) == (0, 1)
