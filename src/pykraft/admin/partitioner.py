"""Kafka's default partitioning, so records a pykraft tool produces land where Kafka's producer would put them:
a keyed record goes to `toPositive(murmur2(key)) % partitions` (BuiltInPartitioner.partitionForKey), a record
without a key sticks to one partition until `batch_size` bytes went there, then to another (KIP-794's uniform
sticky partitioner, without its load weighting). Pure: the random choice comes from the `random.Random` given."""

from __future__ import annotations

import random

__all__ = ["StickyPartitioner", "murmur2", "partition_for_key"]

_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's Utils.murmur2 (32-bit, seed 0x9747b28c), as a signed int."""
    length = len(data)
    m, r = 0x5BD1E995, 24
    h = (0x9747B28C ^ length) & _MASK
    for i in range(length // 4):
        k = int.from_bytes(data[i * 4:i * 4 + 4], "little")
        k = (k * m) & _MASK
        k ^= k >> r
        k = (k * m) & _MASK
        h = (h * m) & _MASK
        h ^= k
    tail = length & ~3
    rest = length % 4
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * m) & _MASK
    h ^= h >> 13
    h = (h * m) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for_key(key: bytes, partitions: int) -> int:
    return (murmur2(key) & 0x7FFFFFFF) % partitions


class StickyPartitioner:
    """The partition of each key-less record: the same one until `batch_size` bytes went to it."""

    def __init__(self, batch_size: int, rng: random.Random) -> None:
        self._batch_size = max(batch_size, 1)
        self._rng = rng
        self._current: dict[str, tuple[int, int]] = {}  # topic -> (partition, bytes sent to it)

    def partition(self, topic: str, partitions: int, size: int) -> int:
        current = self._current.get(topic)
        if current is None or current[0] >= partitions or current[1] >= self._batch_size:
            choice = self._rng.randrange(partitions)
            if current is not None and partitions > 1 and choice == current[0]:
                choice = (choice + 1) % partitions  # move on, as Kafka's does once a batch is full
            current = (choice, 0)
        self._current[topic] = (current[0], current[1] + size)
        return current[0]
