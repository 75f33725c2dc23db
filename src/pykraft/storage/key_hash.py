"""The 16-byte hash the cleaner's offset map keeps for a record key, for many keys at once (numpy) or one at a time.

Kafka's `SkimpyOffsetMap` keeps a key's MD5 and takes two keys with the same hash for the same key. Here the hash is
a keyed multilinear hash (Lemire and Kaser, "Strongly universal string hashing is fast", 2013), four independent
lanes of 32 bits: the key is read as little-endian 32-bit words w_1..w_m (the last one zero-padded), w_0 is its
length, and lane l is the top 32 bits of (c_l + sum a_{j,l} * w_j) mod 2^64 with random 64-bit coefficients drawn
per map. Two distinct keys of the same map collide in a lane with probability 2^-32 whatever the keys are (the
coefficients are secret: a producer cannot aim at a collision, which it could against MD5), so in all four with
2^-128. Unlike a cryptographic hash it is a few multiply-adds per word, so a whole chunk's keys are hashed in
one matrix product: no Python object per key (DESIGN.md §6).

Keys longer than `VECTOR_KEY_BYTES` (rare: Kafka keys are ids) are first reduced to their 32-byte BLAKE2b digest,
one at a time; their length word (above `VECTOR_KEY_BYTES`) keeps them apart from any short key.
The result is two uint64 per key (lanes 0-1, lanes 2-3): `hash_keys` for positions in a buffer, `hash_key` for one
key (the same numbers: tests/storage/test_key_hash.py checks it).
"""

from __future__ import annotations

import hashlib
import os

try:
    import numpy as np
except ImportError:  # a platform with no numpy wheel: `hash_key` only (offset_map.PlainOffsetMap)
    np = None  # type: ignore[assignment]

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
        if HAVE_NUMPY:
            self._constant = np.array(self._py_constant, dtype=np.uint64)
            self._coefficients = np.array(self._py_coefficients, dtype=np.uint64)
            self._low_bytes = np.array(_LOW_BYTES, dtype=np.uint64)

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
        matrix = np.empty((n, words + 1), dtype=np.uint64)
        matrix[:, 0] = length
        if words:
            # Every 4-byte window of the buffer as one little-endian uint32 (an unaligned view, no copy).
            windows = np.ndarray(shape=(len(raw) - 3,), dtype="<u4", buffer=raw, strides=(1,))
            steps = np.arange(words, dtype=np.int64) * 4
            values = windows[np.minimum(start[:, None] + steps, len(raw) - 4)]
            if longest == int(length.min()):  # one length (ids of one format): only the last word is partial
                matrix[:, 1:] = values
                if longest % 4:
                    matrix[:, words] &= self._low_bytes[longest % 4]
            else:
                left = np.clip(length[:, None] - steps, 0, 4)
                np.bitwise_and(values, self._low_bytes[left], out=matrix[:, 1:])
        lanes = matrix @ self._coefficients[:words + 1]  # wraps mod 2^64
        lanes += self._constant
        lanes >>= np.uint64(32)
        high = (lanes[:, 0] << np.uint64(32)) | lanes[:, 1]
        low = (lanes[:, 2] << np.uint64(32)) | lanes[:, 3]
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
