"""Crash consistency and corruption handling of the file log on reopen."""

from __future__ import annotations

import os
import random

import pytest

from pykraft.records import iter_batches
from pykraft.storage import CorruptLogError, LogLayoutError, open_file_log

from .helpers import SMALL, batch, open_log, partition_dir, segment_files


def write_log(root, batches: int = 12, epoch_every: int = 4) -> list[bytes]:
    """A flushed log of `batches` 2-record batches; returns the batches as written."""
    log = open_log(root)
    written = []
    for i in range(batches):
        data = batch(log.end_offset(), 1 + i // epoch_every, 2, timestamp_ms=1000 + i, size=20)
        log.append_as_leader(data, 1 + i // epoch_every)
        written.append(data)
    log.flush()
    log.close()
    return written


def content(log) -> list[bytes]:
    if log.end_offset() == log.start_offset():
        return []
    return [bytes(b.buffer) for b in iter_batches(log.read(log.start_offset(), 10**9).records)]


def last_segment(root) -> str:
    return segment_files(root)[-1]


def test_cut_at_every_byte_of_the_last_batch(tmp_path) -> None:
    written = write_log(tmp_path / "src")
    path = last_segment(tmp_path / "src")
    data = open(path, "rb").read()
    last = len(written[-1])
    for cut in range(len(data) - last, len(data)):
        root = tmp_path / f"cut{cut}"
        os.makedirs(partition_dir(root))
        for name in os.listdir(partition_dir(tmp_path / "src")):
            src = os.path.join(partition_dir(tmp_path / "src"), name)
            with open(src, "rb") as f, open(os.path.join(partition_dir(root), name), "wb") as g:
                g.write(f.read())
        with open(os.path.join(partition_dir(root), os.path.basename(path)), "r+b") as f:
            f.truncate(cut)
        log, report = open_file_log(str(root), SMALL)
        assert content(log) == written[:-1]
        torn = report.torn_tail
        if cut > len(data) - last:
            assert torn is not None and torn.dropped_bytes == cut - (len(data) - last)
            assert torn.offset == log.end_offset()
        assert log.flushed_end_offset() == log.end_offset()
        log.close()


@pytest.mark.parametrize("seed", range(10))
def test_cut_at_a_random_position_keeps_every_whole_batch_before_it(tmp_path, seed: int) -> None:
    rng = random.Random(seed)
    written = write_log(tmp_path)
    path = last_segment(tmp_path)
    size = os.path.getsize(path)
    cut = rng.randrange(0, size)
    with open(path, "r+b") as f:
        f.truncate(cut)
    log = open_log(tmp_path)
    got = content(log)
    assert got == written[: len(got)]
    # Everything before the cut that was whole survives: the kept bytes of the last segment end at a batch
    # boundary at most one batch before the cut.
    assert os.path.getsize(path) <= cut and cut - os.path.getsize(path) < len(written[0]) + 1
    log.close()


def test_garbage_and_zeros_at_the_tail_are_torn_writes(tmp_path) -> None:
    written = write_log(tmp_path)
    path = last_segment(tmp_path)
    for tail in (b"\x00" * 300, b"\x00" * 5, bytes(range(7)), written[-1][:40]):
        with open(path, "ab") as f:
            f.write(tail)
        log, report = open_file_log(str(tmp_path), SMALL)
        assert report.torn_tail is not None and report.torn_tail.dropped_bytes == len(tail)
        assert content(log) == written
        log.close()


def flip(path: str, position: int, bit: int = 0) -> None:
    with open(path, "r+b") as f:
        f.seek(position)
        value = f.read(1)[0]
        f.seek(position)
        f.write(bytes([value ^ (1 << bit)]))


def test_crc_failure_of_the_very_last_batch_is_a_torn_write(tmp_path) -> None:
    written = write_log(tmp_path)
    path = last_segment(tmp_path)
    flip(path, os.path.getsize(path) - 3)
    log, report = open_file_log(str(tmp_path), SMALL)
    assert report.torn_tail is not None and "CRC" in report.torn_tail.reason
    assert content(log) == written[:-1]
    log.close()


@pytest.mark.parametrize("seed", range(20))
def test_bit_flip_before_the_tail_is_reported_not_truncated(tmp_path, seed: int) -> None:
    rng = random.Random(seed)
    written = write_log(tmp_path)
    files = segment_files(tmp_path)
    # Positions of every batch but the very last one, as (file, start, size, base offset).
    spots = []
    for path in files:
        data = open(path, "rb").read()
        pos = 0
        for b in iter_batches(data):
            spots.append((path, pos, b.size_in_bytes, b.base_offset))
            pos += b.size_in_bytes
    path, start, size, base = rng.choice(spots[:-1])
    # Any byte except the partition leader epoch (bytes 12-15, not covered by the CRC; see the report).
    offset_in_batch = rng.choice([i for i in range(size) if not 12 <= i < 16])
    flip(path, start + offset_in_batch, rng.randrange(8))
    sizes = {p: os.path.getsize(p) for p in files}
    with pytest.raises(CorruptLogError) as err:
        open_file_log(str(tmp_path), SMALL)
    message = str(err.value)
    assert os.path.basename(path) in message and f"byte position {start}" in message
    assert f"offset {base}" in message and "NEW directory id" in message
    assert {p: os.path.getsize(p) for p in files} == sizes, "nothing may be truncated"
    assert len(written) > 1


def test_bad_length_in_the_last_segment_followed_by_valid_batches_is_corruption(tmp_path) -> None:
    write_log(tmp_path)
    path = last_segment(tmp_path)
    data = open(path, "rb").read()
    assert len(list(iter_batches(data))) >= 2
    # Make the first batch of the last segment claim to run past the end of the file.
    with open(path, "r+b") as f:
        f.seek(8)
        f.write((10**6).to_bytes(4, "big"))
    with pytest.raises(CorruptLogError, match="valid batch with a later offset follows"):
        open_file_log(str(tmp_path), SMALL)
    assert open(path, "rb").read()[12:] == data[12:]


def test_damaged_or_missing_indexes_are_rebuilt(tmp_path) -> None:
    written = write_log(tmp_path, batches=40)
    indexes = segment_files(tmp_path, ".index")
    time_indexes = segment_files(tmp_path, ".timeindex")
    original = {p: open(p, "rb").read() for p in indexes + time_indexes}
    assert any(original[p] for p in indexes), "the test log must have index entries"
    os.unlink(indexes[0])
    with open(indexes[1], "r+b") as f:
        f.write(b"\xff" * 8)
    with open(time_indexes[0], "ab") as f:
        f.write(b"junk")
    log, report = open_file_log(str(tmp_path), SMALL)
    assert set(report.rebuilt_indexes) >= {indexes[0], indexes[1]}
    assert {p: open(p, "rb").read() for p in indexes + time_indexes} == original
    assert content(log) == written
    log.close()


def test_missing_middle_segment_refuses_to_start(tmp_path) -> None:
    write_log(tmp_path)
    files = segment_files(tmp_path)
    assert len(files) >= 3
    os.unlink(files[1])
    with pytest.raises(LogLayoutError, match="missing"):
        open_file_log(str(tmp_path), SMALL)


def test_reopen_keeps_epochs_initialized_without_batches(tmp_path) -> None:
    write_log(tmp_path, batches=4, epoch_every=2)
    log = open_log(tmp_path)
    log.initialize_leader_epoch(7)
    log.flush()
    log.close()
    log = open_log(tmp_path)
    assert log.epoch_entries() == [(1, 0), (2, 4), (7, 8)]
    log.close()


def test_half_written_snapshot_part_file_is_removed(tmp_path) -> None:
    write_log(tmp_path, batches=4)
    log = open_log(tmp_path)
    from pykraft.raft.log import OffsetAndEpoch

    writer = log.create_new_snapshot_unchecked(OffsetAndEpoch(100, 5))
    assert writer is not None
    writer.append(batch(0, 5, 3)[:50])
    # Crash: the writer is never frozen or closed.
    log.close()
    leftovers = [n for n in os.listdir(partition_dir(tmp_path)) if n.endswith(".part")]
    assert leftovers
    log, report = open_file_log(str(tmp_path), SMALL)
    assert log.latest_snapshot_id() is None and set(report.removed_files) == set(leftovers)
    log.close()
