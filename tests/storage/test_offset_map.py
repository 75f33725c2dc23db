"""The cleaner's flat offset map (Kafka's SkimpyOffsetMap: 24 bytes a slot) and its key hash: the vectorised hash
gives each key the number the one-key hash gives it, a run put at once maps what a record-by-record put with
Kafka's full check maps (the same records, the same latest offset, the same stop when the map fills), and the map's
memory is the dedupe buffer."""

from __future__ import annotations

import random

import numpy as np
import pytest

from pykraft.storage.key_hash import PAD_BYTES, VECTOR_KEY_BYTES, KeyHasher
from pykraft.storage.offset_map import ENTRY_BYTES, OffsetMap


def _packed(keys: list[bytes]) -> tuple[bytes, np.ndarray, np.ndarray]:
    raw = b"".join(keys) + bytes(PAD_BYTES)
    lengths = np.array([len(k) for k in keys], dtype=np.int64)
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64)
    return raw, starts, lengths


def test_the_vectorised_hash_is_the_one_key_hash() -> None:
    rng = random.Random(3)
    keys = [rng.randbytes(rng.choice((0, 1, 3, 4, 5, 12, 36, 255, 256, 257, 1000))) for _ in range(400)]
    keys += [b"a", b"a\x00", b"a\x00\x00\x00\x00", b"\x00" * 4, b"\x00" * 8]
    hasher = KeyHasher(b"seed")
    for run in (keys, [rng.randbytes(5) for _ in range(50)], [rng.randbytes(12) for _ in range(50)],
                [rng.randbytes(300) for _ in range(5)]):  # keys of one length take a shorter way
        raw, starts, lengths = _packed(run)
        high, low = hasher.hash_keys(raw, starts, lengths)
        assert [(int(h), int(lo)) for h, lo in zip(high, low)] == [hasher.hash_key(k) for k in run]
    distinct = {bytes(k) for k in keys}
    assert len({hasher.hash_key(k) for k in distinct}) == len(distinct)  # zero-padded keys stay apart too
    assert hasher.hash_key(b"x" * (VECTOR_KEY_BYTES + 1)) != hasher.hash_key(b"x" * (VECTOR_KEY_BYTES + 2))


def test_two_maps_hash_with_their_own_coefficients() -> None:
    assert KeyHasher().hash_key(b"key") != KeyHasher().hash_key(b"key")  # random per map: no aimed collisions
    assert KeyHasher(b"s").hash_key(b"key") == KeyHasher(b"s").hash_key(b"key")


class _Reference:
    """Kafka's buildOffsetMapForSegment loop: before each keyed record, stop if the map holds max_entries keys."""

    def __init__(self, max_entries: int) -> None:
        self.max_entries, self.offsets, self.latest = max_entries, {}, -1

    def put_run(self, keys: list[bytes], offsets: list[int]) -> int:
        for i, (key, offset) in enumerate(zip(keys, offsets)):
            if len(self.offsets) >= self.max_entries:
                return i
            self.offsets[key] = offset
            self.latest = max(self.latest, offset)
        return len(keys)


@pytest.mark.parametrize("seed", range(6))
def test_a_run_put_at_once_maps_what_kafkas_record_by_record_loop_maps(seed: int) -> None:
    rng = random.Random(seed)
    omap = OffsetMap(rng.choice((50, 120, 400)) * ENTRY_BYTES, seed=b"s")
    omap.clear(rng.choice((None, 30, 5000)))
    reference = _Reference(omap.max_entries)
    offset = 0
    for _ in range(30):
        keys = [b"k%d" % rng.randrange(rng.choice((20, 200))) for _ in range(rng.randrange(1, 40))]
        offsets = list(range(offset, offset + len(keys)))
        offset += len(keys) + rng.randrange(3)
        raw, starts, lengths = _packed(keys)
        high, low = omap.hasher.hash_keys(raw, starts, lengths)
        mapped = omap.put_run(high, low, np.array(offsets, dtype=np.int64))
        assert mapped == reference.put_run(keys, offsets)
        assert omap.size == len(reference.offsets) and omap.latest_offset == reference.latest
        if mapped < len(keys):
            break
    for key, value in reference.offsets.items():
        assert omap.get(key) == value
    assert omap.get(b"never") == -1


def test_a_map_given_fewer_keys_than_it_gets_grows_within_the_buffer() -> None:
    omap = OffsetMap(10_000 * ENTRY_BYTES)
    omap.clear(expected_keys=10)  # a small table: the pass said at most 10 keys
    for i in range(3000):
        omap.put(b"key-%d" % i, i)
    assert omap.size == 3000 and all(omap.get(b"key-%d" % i) == i for i in range(0, 3000, 7))
    assert omap._buffer.nbytes == omap.slots * ENTRY_BYTES == 10_000 * ENTRY_BYTES


def test_the_map_is_the_dedupe_buffer_and_a_clear_forgets_everything() -> None:
    omap = OffsetMap(1 << 20, load_factor=0.9)
    assert omap.slots == (1 << 20) // 24 and omap.max_entries == int(omap.slots * 0.9)
    omap.put(b"a", 5)
    assert omap._buffer.nbytes <= 1 << 20
    omap.clear()
    assert omap.get(b"a") == -1 and omap.size == 0 and omap.latest_offset == -1
