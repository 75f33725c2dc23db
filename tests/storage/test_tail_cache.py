"""Reads of the batches just appended with `keep=True` come from memory (storage/tail_cache.py), and are exactly
what the file holds: after eviction, truncation, a roll and a restart the reads fall back to the file."""

from __future__ import annotations

import pytest

from pykraft.records import iter_batches
from pykraft.storage import LogConfig
from pykraft.storage.tail_cache import TAIL_CACHE_BYTES

from .helpers import batch, open_log


def _chunk(base: int, epoch: int, batches: int, count: int = 10, size: int = 100) -> bytearray:
    """One append of several batches (a follower's fetched chunk, or a leader's buffer)."""
    out = bytearray()
    for _ in range(batches):
        out += batch(base, epoch, count, size=size)
        base += count
    return out


def test_kept_appends_are_read_without_a_pread_and_match_the_file(tmp_path, preads) -> None:
    log = open_log(tmp_path / "kept", LogConfig())
    reference = open_log(tmp_path / "file", LogConfig())  # the same appends, read from its file
    for chunk in (_chunk(0, 1, 3), _chunk(30, 1, 2)):
        log.append_as_leader(chunk, 1, keep=True)
        reference.append_as_leader(bytes(chunk), 1)
    reads = {(offset, max_bytes): bytes(log.read(offset, max_bytes).records)
             for offset in (0, 5, 10, 29, 30, 45) for max_bytes in (1, 2000, 1 << 20)}
    assert preads == []
    for (offset, max_bytes), got in reads.items():
        first = next(iter_batches(got))
        assert first.base_offset <= offset <= first.last_offset
        assert bytes(reference.read(offset, max_bytes).records) == got  # exactly what the file read returns
    reference.close()
    assert [b.base_offset for b in iter_batches(log.read(10, 1 << 20).records)] == [10, 20, 30, 40]
    log.close()


def test_appends_not_kept_are_read_from_the_file_and_empty_the_cache(tmp_path, preads) -> None:
    log = open_log(tmp_path, LogConfig())
    log.append_as_leader(_chunk(0, 1, 2), 1, keep=True)
    log.append_as_follower(_chunk(20, 1, 2), 1)  # e.g. the leader became a follower
    log.append_as_leader(_chunk(40, 2, 1), 2, keep=True)  # and leader again
    assert [b.base_offset for b in iter_batches(log.read(0, 1 << 20).records)] == [0, 10, 20, 30, 40]
    assert preads
    preads.clear()
    assert [b.base_offset for b in iter_batches(log.read(40, 1 << 20).records)] == [40]
    assert preads == []
    log.close()


def test_evicted_truncated_and_rolled_chunks_are_read_from_the_file(tmp_path, preads) -> None:
    log = open_log(tmp_path, LogConfig())
    big = TAIL_CACHE_BYTES // 3
    for _ in range(4):  # the first one is evicted
        log.append_as_leader(batch(log.end_offset(), 1, 1, size=big), 1, keep=True)
    log.read(3, 1 << 20)
    assert preads == []
    assert bytes(log.read(0, 1 << 20).records)[:64] == bytes(batch(0, 1, 1, size=big))[:64]
    assert preads
    log.truncate_to(2)
    log.append_as_follower(batch(2, 2, 1, size=10), 2)  # a leader became follower: this append is not kept
    (only,) = list(iter_batches(log.read(2, 1 << 20).records))
    assert (only.base_offset, only.partition_leader_epoch) == (2, 2)
    log.append_as_leader(batch(3, 2, 1, size=10), 2, keep=True)
    preads.clear()
    (only,) = list(iter_batches(log.read(3, 1 << 20).records))
    assert (only.base_offset, only.partition_leader_epoch) == (3, 2)
    assert preads == []
    log.roll()
    assert len(list(iter_batches(log.read(1, 1 << 20).records))) >= 1
    assert preads  # the sealed segment dropped its cache
    log.close()


def test_a_chunk_larger_than_the_cache_is_not_kept(tmp_path, preads) -> None:
    log = open_log(tmp_path, LogConfig())
    log.append_as_leader(batch(0, 1, 1, size=TAIL_CACHE_BYTES + 1), 1, keep=True)
    log.read(0, 1 << 20)
    assert preads
    log.close()


@pytest.mark.parametrize("seed", range(5))
def test_random_appends_truncations_and_reads_match_a_log_read_from_its_file(tmp_path, seed) -> None:
    import random

    rng = random.Random(seed)
    config = LogConfig(segment_bytes=200_000)
    log, reference = open_log(tmp_path / "kept", config), open_log(tmp_path / "file", config)
    epoch = 1
    for _ in range(150):
        action = rng.random()
        end = log.end_offset()
        if action < 0.55:
            chunk = _chunk(end, epoch, rng.randint(1, 4), count=rng.randint(1, 5), size=rng.choice([10, 3000, 40_000]))
            keep = rng.random() < 0.8
            (log.append_as_leader if keep else log.append_as_follower)(chunk, epoch, **({"keep": True} if keep else {}))
            reference.append_as_follower(bytes(chunk), epoch)
        elif action < 0.62 and end > 0:
            cut = rng.randint(0, end - 1)
            log.truncate_to(cut)
            reference.truncate_to(cut)
            assert log.end_offset() == reference.end_offset()
            epoch += 1
        elif end > 0:
            offset, max_bytes = rng.randint(0, end - 1), rng.choice([1, 5000, 60_000, 1 << 20])
            assert bytes(log.read(offset, max_bytes).records) == bytes(reference.read(offset, max_bytes).records)
    log.close()
    reference.close()


def test_released_chunks_are_read_from_the_file_and_the_rest_from_memory(tmp_path, preads) -> None:
    log = open_log(tmp_path, LogConfig())
    for _ in range(3):
        log.append_as_leader(_chunk(log.end_offset(), 1, 1), 1, keep=True)
    log.release_cached_below(20)  # the followers fetched the first two chunks
    assert [b.base_offset for b in iter_batches(log.read(20, 1 << 20).records)] == [20]
    assert preads == []
    assert [b.base_offset for b in iter_batches(log.read(10, 1 << 20).records)] == [10, 20]
    assert preads
    log.close()


def test_a_read_ending_with_a_whole_chunk_is_a_view_of_it_not_a_copy(tmp_path) -> None:
    """A follower fetching one ~1 MB Produce batch while the next one is already appended: the read takes the
    whole first chunk and nothing of the next (over the budget), and must not be joined into a copy of it."""
    log = open_log(tmp_path, LogConfig())
    first = batch(0, 1, 1, size=5000)
    log.append_as_leader(first, 1, keep=True)
    log.append_as_leader(batch(1, 1, 1, size=5000), 1, keep=True)
    records = log.read(0, 4000).records
    assert bytes(records) == bytes(first) and records.obj is first  # the appended buffer itself
    log.close()


def test_keep_appends_is_the_default_of_keep(tmp_path, preads) -> None:
    """A node's metadata log (node/runtime/disk.py) keeps the raft core's appends without it passing `keep`."""
    log = open_log(tmp_path, LogConfig())
    log.keep_appends = True
    log.append_as_leader(bytes(_chunk(0, 1, 2)), 1)
    log.append_as_follower(bytes(_chunk(20, 1, 1)), 1)  # e.g. the leader became a follower
    assert [b.base_offset for b in iter_batches(log.read(10, 1 << 20).records)] == [10, 20]
    assert preads == []
    log.append_as_follower(bytes(_chunk(30, 1, 1)), 1, keep=False)  # an explicit keep still wins
    log.read(30, 1 << 20)
    assert preads
    log.close()
