"""Crash safety of the cleaner's swap, Kafka's `.cleaned` -> `.swap` -> replace protocol: a crash injected after
every step of every swap of a pass (and while the `.cleaned` files are written), then the log reopened. Whatever
the step, a reader sees every key's latest record at its offset, nothing the log did not hold, no temporary file
is left, and the indexes are right (a second open rebuilds nothing)."""

from __future__ import annotations

import os

import pytest

from pykraft.storage.cleaner import Cleaner, CleanedWriter
from pykraft.storage.cleaner_manager import CleanableLog, CleanerManager, CompactionSettings
from pykraft.storage.offset_map import OffsetMap, Throttler
from pykraft.storage import segment_swap
from pykraft.storage.segment_swap import no_fault

from .cleaner_helpers import KEY, latest_per_key, new_log, put, records, reopen

SETTINGS = CompactionSettings(min_cleanable_ratio=0.0, segment_bytes=2400)
TEMPORARY = (".cleaned", ".swap", ".deleted")


class Crash(Exception):
    pass


class _Host:
    def __init__(self, manager: CleanerManager, log, fault) -> None:
        self.manager, self.log, self.fault = manager, log, fault

    def check_aborted(self, key) -> None:
        self.manager.check_aborted(key)

    def swap(self, task, cleaned, old_bases) -> bool:
        return self.manager.swap(self.log, task, cleaned, old_bases, self.fault)


def _build(root: str):
    log = new_log(root)
    for r in range(6):
        for k in range(15):
            put(log, f"k{k}", None if (r == 5 and k % 5 == 0) else f"k{k}-r{r}", 1000 + r)
    log.roll()
    log.update_high_watermark(log.end_offset())
    return log


def _crash(log) -> None:
    """The process dies: descriptors go, nothing is flushed or renamed on the way out."""
    for segment in log._segments:
        segment.index.close()
        os.close(segment.fd)
    log._closed = True
    if log._lock is not None:
        log._lock.release()


def _run(root: str, fault) -> tuple[list, list]:
    log = _build(root)
    before = records(log)
    manager = CleanerManager([root])
    task = manager.plan([CleanableLog(KEY, root, log, SETTINGS)], 10_000)
    cleaner = Cleaner(OffsetMap(1 << 20), 4096, Throttler(float("inf"), 0))
    try:
        cleaner.clean(task, _Host(manager, log, fault))
    except Crash:
        _crash(log)
    else:
        log.close()
    return before, task


def _steps(tmp_path) -> list[str]:
    seen: list[str] = []
    _run(str(tmp_path / "dry"), seen.append)
    return seen


def _check_recovered(root: str, before: list) -> None:
    log, report = reopen(root)
    after = records(log)
    assert latest_per_key(after) == latest_per_key(before)
    assert set(after) <= set(before)
    assert [o for o, _, _ in after] == sorted({o for o, _, _ in after})
    assert not [n for n in os.listdir(log.directory) if n.endswith(TEMPORARY)]
    log.close()
    again, report = reopen(root)
    assert report.rebuilt_indexes == () and report.removed_files == ()
    assert records(again) == after
    again.close()


@pytest.mark.parametrize("killed", [False, True])
def test_every_step_of_every_swap_is_a_crash_point(tmp_path, monkeypatch, killed: bool) -> None:
    """`killed`: the process dies with its files as they are (the next group's `.cleaned` files, written before
    this swap: cleaned_swaps.py), instead of the pass discarding what it wrote on its way out."""
    if killed:
        def close_only(self) -> None:
            if self.fd >= 0:
                fd, self.fd = self.fd, -1
                self.index.close()
                os.close(fd)

        monkeypatch.setattr(segment_swap.CleanedSegment, "discard", close_only)
    steps = _steps(tmp_path)
    assert steps.count("swap.log") >= 2  # several groups, each a swap
    assert {"swap.index", "swap.timeindex", "swap-synced", "deleted-removed", "renamed.log", "renamed.index",
            "renamed.timeindex"} <= set(steps)
    assert sum(s.startswith("deleted-renamed:") for s in steps) > steps.count("swap.log")  # groups of segments
    left_cleaned = 0
    for k, step in enumerate(steps):
        root = str(tmp_path / f"crash-{k}")
        calls = iter(range(len(steps)))

        def fault(name: str, k: int = k) -> None:
            if next(calls) == k:
                raise Crash(name)

        before, _ = _run(root, fault)
        directory = os.path.join(root, f"{KEY[0]}-{KEY[1]}")
        names = os.listdir(directory)
        swapping = [n[:20] for n in names if n.endswith(".swap")]
        left_cleaned += bool(swapping) and any(n.endswith(".cleaned") and n[:20] > max(swapping) for n in names)
        _check_recovered(root, before)
    assert (left_cleaned > 0) == killed  # the next group's .cleaned files above a swap under way


def test_a_crash_while_writing_the_cleaned_segment_leaves_the_log_as_it_was(tmp_path) -> None:
    root = str(tmp_path)
    log = _build(root)
    before = records(log)
    writer = CleanedWriter(log.directory, 0, 100, 1 << 20)
    writer.append(log.read(0, 1 << 20).records[:200])  # a partial, unsynced cleaned segment
    writer._flush()
    os.close(writer.fd)
    writer.index.close()
    log.close()
    log, report = reopen(root)
    assert records(log) == before
    assert sorted(report.removed_files) == [f"{0:020d}{s}.cleaned" for s in (".index", ".log", ".timeindex")]
    log.close()


def _crash_at(tmp_path, step: str, occurrence: int = -1) -> tuple[str, list]:
    """Crash a pass at `step` of one of its swaps (default: the last, whose group keeps records)."""
    root = str(tmp_path / "crash")
    steps = _steps(tmp_path)
    at = [i for i, name in enumerate(steps) if name == step][occurrence]
    calls = iter(range(len(steps)))

    def fault(name: str) -> None:
        if next(calls) == at:
            raise Crash(name)

    before, _ = _run(root, fault)
    return os.path.join(root, f"{KEY[0]}-{KEY[1]}"), before


def test_a_swap_with_files_still_cleaned_is_abandoned_as_kafka_does(tmp_path) -> None:
    """The .log is .swap but an index is still .cleaned: Kafka deletes every .swap at or above the lowest .cleaned
    offset, so the old segments (untouched until every file is .swap) stay."""
    directory, before = _crash_at(tmp_path, "swap.index")
    assert {n[20:] for n in os.listdir(directory) if n.endswith(TEMPORARY)} == {".log.swap", ".index.swap",
                                                                              ".timeindex.cleaned"}
    log, report = reopen(os.path.dirname(directory))
    assert {n[20:] for n in report.removed_files} == {".log.swap", ".index.swap", ".timeindex.cleaned"}
    after = records(log)
    assert latest_per_key(after) == latest_per_key(before)
    assert [row for row in after if row[0] >= 60] == [row for row in before if row[0] >= 60]  # that group: old
    log.close()


def test_a_swap_whose_files_are_all_swap_is_completed_and_a_damaged_index_rebuilt(tmp_path) -> None:
    directory, before = _crash_at(tmp_path, "swap-synced")
    (index,) = [n for n in os.listdir(directory) if n.endswith(".index.swap")]
    with open(os.path.join(directory, index), "r+b") as f:
        f.truncate(3)  # an index is rebuildable: a damaged one is rewritten from the batches
    log, report = reopen(os.path.dirname(directory))
    assert report.rebuilt_indexes == (os.path.join(directory, index[: -len(".swap")]),)
    after = records(log)
    assert latest_per_key(after) == latest_per_key(before) and len(after) == 15  # the swap completed
    log.close()


def test_swap_files_at_or_above_the_lowest_cleaned_file_are_a_split_remnant_and_go(tmp_path) -> None:
    root = str(tmp_path)
    log = _build(root)
    before = records(log)
    bases = log.segment_base_offsets()
    log.close()
    directory = os.path.join(root, f"{KEY[0]}-{KEY[1]}")
    with open(os.path.join(directory, f"{bases[1]:020d}.log.cleaned"), "wb") as f:
        f.write(b"")
    with open(os.path.join(directory, f"{bases[2]:020d}.log.swap"), "wb") as f:
        f.write(b"garbage")
    log, report = reopen(root)
    assert records(log) == before
    assert set(report.removed_files) == {f"{bases[1]:020d}.log.cleaned", f"{bases[2]:020d}.log.swap"}
    log.close()


@pytest.mark.parametrize("stray", [".log.deleted", ".index.deleted"])
def test_deleted_files_left_by_a_crash_are_removed(tmp_path, stray: str) -> None:
    root = str(tmp_path)
    log = _build(root)
    before = records(log)
    log.close()
    directory = os.path.join(root, f"{KEY[0]}-{KEY[1]}")
    with open(os.path.join(directory, f"{12345:020d}{stray}"), "wb") as f:
        f.write(b"old bytes")
    log, report = reopen(root)
    assert records(log) == before and report.removed_files == (f"{12345:020d}{stray}",)
    log.close()


def test_a_pass_syncs_the_directory_once_a_swap_and_once_at_its_end(tmp_path, monkeypatch) -> None:
    """Step 1's sync of each swap comes before any old file goes (and covers the previous swap's final renames);
    the last swap's renames are synced when the pass is done, before the checkpoint moves: one sync a group and
    one a pass, where there were two a group."""
    from pykraft.storage import cleaner_manager, segment_swap

    events: list[str] = []
    for module in (segment_swap, cleaner_manager):
        monkeypatch.setattr(module, "sync_dir", lambda path: events.append("sync"))
    root = str(tmp_path)
    log = _build(root)
    manager = CleanerManager([root])
    task = manager.plan([CleanableLog(KEY, root, log, SETTINGS)], 10_000)
    cleaner = Cleaner(OffsetMap(1 << 20), 4096, Throttler(float("inf"), 0))
    end, _ = cleaner.clean(task, _Host(manager, log, events.append))
    assert events[-1] == "renamed.timeindex"  # the last swap's renames wait for the end of the pass
    manager.done(task, end)
    swaps = events.count("swap.log")
    assert swaps >= 2 and events.count("sync") == swaps + 1 and events[-1] == "sync"
    for k, step in enumerate(events):
        if step.startswith("deleted-renamed:"):
            assert events[events.index("swap.timeindex", max(i for i in range(k) if events[i] == "swap.log")):k
                          ].count("sync") == 1  # this swap's files were .swap on disk before an old one went
    log.close()


def test_renames_left_unsynced_by_a_pass_are_synced_before_the_next_pass_of_the_log(tmp_path, monkeypatch) -> None:
    from pykraft.storage import cleaner_manager

    synced: list[str] = []
    root = str(tmp_path)
    log = _build(root)
    manager = CleanerManager([root])
    task = manager.plan([CleanableLog(KEY, root, log, SETTINGS)], 10_000)
    Cleaner(OffsetMap(1 << 20), 4096, Throttler(float("inf"), 0)).clean(task, _Host(manager, log, no_fault))
    with manager._lock:  # the pass ends without `done` (its thread died): only the next plan can sync
        manager._states.clear()
    monkeypatch.setattr(cleaner_manager, "sync_dir", synced.append)
    for r in range(3):
        put(log, f"k{r}", f"new-{r}", 2000)
    log.roll()
    log.update_high_watermark(log.end_offset())
    assert manager.plan([CleanableLog(KEY, root, log, SETTINGS)], 10_000) is not None
    assert synced == [log.directory]
    log.close()


def test_a_failed_fsync_of_a_cleaned_segment_fails_the_pass_and_swaps_nothing_more(tmp_path, monkeypatch) -> None:
    """The fsync runs on the pass's sync thread (cleaned_swaps.py): its error reaches the pass before that segment's
    swap, the segment and the next one written meanwhile go, the swaps before it stay."""
    from pykraft.storage import cleaned_swaps

    calls: list[int] = []

    def failing(fd: int) -> None:
        calls.append(fd)
        if len(calls) == 2:
            raise OSError(5, "Input/output error")

    monkeypatch.setattr(cleaned_swaps, "sync_data", failing)
    root = str(tmp_path)
    log = _build(root)
    before = records(log)
    manager = CleanerManager([root])
    task = manager.plan([CleanableLog(KEY, root, log, SETTINGS)], 10_000)
    steps: list[str] = []
    with pytest.raises(OSError, match="Input/output error"):
        Cleaner(OffsetMap(1 << 20), 4096, Throttler(float("inf"), 0)).clean(task, _Host(manager, log, steps.append))
    assert steps.count("swap.log") == 1  # the first group only
    assert not [n for n in os.listdir(log.directory) if n.endswith(TEMPORARY)]
    after = records(log)
    assert latest_per_key(after) == latest_per_key(before) and set(after) <= set(before)
    log.close()
