"""The 16-byte hash the cleaner's offset map keeps for a record key, for many keys at once (numpy) or one at a time.

Kafka's `SkimpyOffsetMap` keeps a key's MD5 and takes two keys with the same hash for the same key. Here the hash is
a keyed multilinear hash (Lemire and Kaser, "Strongly universal string hashing is fast", 2013), four independent
lanes of 32 bits: the key is read as little-endian 32-bit words w_1..w_m (the last one zero-padded), w_0 is its
length, and lane l is the top 32 bits of (c_l + sum a_{j,l} * w_j) mod 2^64 with random 64-bit coefficients drawn
per map. Two distinct keys of the same map collide in a lane with probability 2^-32 whatever the keys are (the
coefficients are secret: a producer cannot aim at a collision, which it could against MD5), so in all four with
2^-128. Unlike a cryptographic hash it is a few multiply-adds per word, so a whole chunk's keys are hashed a word
and a lane at a time over all of them: no Python object per key (DESIGN.md §6).

Keys longer than `VECTOR_KEY_BYTES` (rare: Kafka keys are ids) are first reduced to their 32-byte BLAKE2b digest,
one at a time; their length word (above `VECTOR_KEY_BYTES`) keeps them apart from any short key.
The result is two uint64 per key (lanes 0-1, lanes 2-3): `hash_keys` for positions in a buffer, `hash_key` for one
key (the same numbers: tests/storage/test_key_hash.py checks it).
"""

from __future__ import annotations

import hashlib
import os
from functools import cached_property
from typing import TYPE_CHECKING

from pykraft.records.lazy_numpy import numpy_on_first_use

if TYPE_CHECKING:
    import numpy as np
else:  # loaded at first use (records/lazy_numpy.py); None where numpy has no wheel: `hash_key` only
    np = numpy_on_first_use()

HAVE_NUMPY = np is not None
VECTOR_KEY_BYTES = 256
_WORDS = VECTOR_KEY_BYTES // 4
_DIGEST_BYTES = 32
_MASK64 = (1 << 64) - 1
_LOW_BYTES = [0, 0xFF, 0xFFFF, 0xFFFFFF, 0xFFFFFFFF]  # by bytes left in a word
PAD_BYTES = 8  # the buffer given to `hash_keys` holds this many bytes after its last key (words are read whole)


class KeyHasher:
    """One map's hash function (its coefficients): `seed` for tests, else random."""

    def __init__(self, seed: bytes | None = None) -> None:
        raw = seed if seed is not None else os.urandom(8 * 4 * (_WORDS + 2))
        if len(raw) < 8 * 4 * (_WORDS + 2):
            raw = hashlib.shake_256(raw).digest(8 * 4 * (_WORDS + 2))
        words = [int.from_bytes(raw[i:i + 8], "little") for i in range(0, 8 * 4 * (_WORDS + 2), 8)]
        self._py_constant = words[:4]  # c_l
        # a_{j,l}: row 0 multiplies the length word, row j the j-th word
        self._py_coefficients = [words[4 * j:4 * j + 4] for j in range(1, _WORDS + 2)]

    # The arrays of the many-keys path, made at its first use: a broker builds a map at start (Kafka's check of
    # the cleaner's settings) and may never clean, and building them would load numpy (records/lazy_numpy.py).
    @cached_property
    def _constant(self) -> np.ndarray:
        return np.array(self._py_constant, dtype=np.uint64)

    @cached_property
    def _coefficients(self) -> np.ndarray:
        return np.array(self._py_coefficients, dtype=np.uint64)

    @cached_property
    def _low_bytes(self) -> np.ndarray:
        return np.array(_LOW_BYTES, dtype=np.uint64)

    # ---- many keys -------------------------------------------------------------------------------------------
    def hash_keys(self, raw: bytes | bytearray | memoryview, start: np.ndarray, length: np.ndarray) -> tuple[np.ndarray,
                                                                                             np.ndarray]:
        """The hashes of the keys raw[start:start+length] (`raw` holds `PAD_BYTES` after its last key; `length`
        >= 0): (lanes 0-1, lanes 2-3) as two uint64 arrays."""
        n = len(start)
        if n == 0:
            empty = np.zeros(0, dtype=np.uint64)
            return empty, empty
        longest = int(length.max())
        words = (min(longest, VECTOR_KEY_BYTES) + 3) // 4
        coefficients = self._coefficients
        # A lane at a time over contiguous rows (a row of every key's j-th word): a few times faster than the
        # matrix product of uint64, which numpy does without BLAS.
        size = length.astype(np.uint64)
        lanes = [size * coefficients[0, lane] + self._constant[lane] for lane in range(4)]
        if words:
            # Every 4-byte window of the buffer as one little-endian uint32 (an unaligned view, no copy).
            windows = np.ndarray(shape=(len(raw) - 3,), dtype="<u4", buffer=raw, strides=(1,))
            one_length = longest == int(length.min())  # ids of one format: only the last word is partial
            steps = np.arange(words, dtype=np.int64) * 4
            # One gather of every word (fancy indexing: `take` on this unaligned view is many times slower), then
            # a contiguous row per word.
            rows = windows[np.minimum(start[:, None] + steps, len(raw) - 4)].T.astype(np.uint64)
            product = np.empty(n, dtype=np.uint64)
            for j in range(words):
                word = rows[j]
                if not one_length:
                    word &= self._low_bytes[np.clip(length - 4 * j, 0, 4)]
                elif j == words - 1 and longest % 4:
                    word &= self._low_bytes[longest % 4]
                for lane in range(4):
                    np.multiply(word, coefficients[j + 1, lane], out=product)
                    lanes[lane] += product  # wraps mod 2^64
        top = np.uint64(0xFFFFFFFF00000000)
        high = (lanes[0] & top) | (lanes[1] >> np.uint64(32))
        low = (lanes[2] & top) | (lanes[3] >> np.uint64(32))
        if longest > VECTOR_KEY_BYTES:
            for row in np.flatnonzero(length > VECTOR_KEY_BYTES).tolist():
                s = int(start[row])
                high[row], low[row] = self.hash_key(raw[s:s + int(length[row])])
        return high, low

    # ---- one key ---------------------------------------------------------------------------------------------
    def hash_key(self, key: bytes | bytearray | memoryview) -> tuple[int, int]:
        """The hash of one key, as `hash_keys` computes it."""
        size = len(key)
        data = bytes(key) if size <= VECTOR_KEY_BYTES else hashlib.blake2b(bytes(key), digest_size=_DIGEST_BYTES
                                                                            ).digest()
        words = [size] + [int.from_bytes(data[i:i + 4], "little") for i in range(0, len(data), 4)]
        coefficients = self._py_coefficients
        lanes = []
        for lane in range(4):
            total = self._py_constant[lane]
            for j, word in enumerate(words):
                total += coefficients[j][lane] * word
            lanes.append((total & _MASK64) >> 32)
        return (lanes[0] << 32) | lanes[1], (lanes[2] << 32) | lanes[3]
