"""Faults planted in copies of a real cluster's directories (each copy under a cluster id of its own, so that one
`pykraft analyze` run tells them apart): a flipped byte and a divergent tail in a user partition's follower, a
duplicated idempotent batch on the leader, an acknowledged batch removed from every replica. Segments are edited
as bytes: batches are located with records/batch.py, CRCs recomputed where the fault must look well-formed."""

from __future__ import annotations

import dataclasses
import shutil
import struct
from dataclasses import dataclass
from pathlib import Path

from pykraft.records import iter_batches
from pykraft.records.crc import crc32c
from pykraft.storage import read_meta_properties, write_meta_properties
from pykraft.storage.meta_properties import META_PROPERTIES


@dataclass(frozen=True)
class Batch:
    position: int
    base_offset: int
    last_offset: int
    size: int
    producer_id: int


def batches(path: Path) -> list[Batch]:
    out, position = [], 0
    for b in iter_batches(path.read_bytes(), verify_crc=False):
        out.append(Batch(position, b.base_offset, b.last_offset, b.size_in_bytes, b.producer_id))
        position += b.size_in_bytes
    return out


def copy_cluster(source: Path, target: Path, cluster_id: str) -> Path:
    """A copy of every node directory (and the client history) under a new cluster id."""
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("out*", "*.lock", "server.log"))
    for meta in target.glob(f"node-*/data/{META_PROPERTIES}"):
        props = read_meta_properties(str(meta.parent))
        write_meta_properties(str(meta.parent), dataclasses.replace(props, cluster_id=cluster_id))
    return target


def segment(root: Path, node: int, topic: str, partition: int) -> Path:
    (path,) = sorted((root / f"node-{node}" / "data" / f"{topic}-{partition}").glob("*.log"))[:1]
    return path


def _fix_crc(raw: bytearray, at: int) -> None:
    struct.pack_into(">I", raw, at + 17, crc32c(memoryview(raw)[at + 21: at + _size(raw, at)]))


def _size(raw: bytearray, at: int) -> int:
    return struct.unpack_from(">i", raw, at + 8)[0] + 12


def flip_byte(path: Path, index: int) -> Batch:
    """Flip a byte of the last record's value in batch `index` (the CRC no longer holds)."""
    victim = batches(path)[index]
    raw = bytearray(path.read_bytes())
    raw[victim.position + victim.size - 2] ^= 0x01
    path.write_bytes(bytes(raw))
    return victim


def diverge_batches(path: Path, base_offsets: list[int]) -> Batch:
    """Change one value byte in each of the batches at `base_offsets`, CRCs recomputed: well-formed batches under
    the same offsets and epochs, holding other values. Returns the first changed batch."""
    found = [b for b in batches(path) if b.base_offset in base_offsets]
    raw = bytearray(path.read_bytes())
    for b in found:
        raw[b.position + b.size - 2] ^= 0x01
        _fix_crc(raw, b.position)
    path.write_bytes(bytes(raw))
    return found[0]


def duplicate_last_idempotent(path: Path) -> tuple[int, int]:
    """Append a copy of the last idempotent batch at the log end (same producer, epoch and sequences): what a
    broker that failed to deduplicate a retried batch would write. Returns (the copy's offset, the original's)."""
    found = [b for b in batches(path) if b.producer_id >= 0]
    original, end = found[-1], batches(path)[-1].last_offset + 1
    raw = path.read_bytes()
    copy = bytearray(raw[original.position: original.position + original.size])
    struct.pack_into(">q", copy, 0, end)  # the base offset is outside the CRC
    path.write_bytes(raw + bytes(copy))
    return end, original.base_offset


def remove_batch_everywhere(root: Path, nodes: list[int], topic: str, partition: int, base_offset: int) -> int:
    """Cut the batch at `base_offset` out of every replica holding it; returns how many replicas held it."""
    held = 0
    for node in nodes:
        path = segment(root, node, topic, partition)
        for b in batches(path):
            if b.base_offset == base_offset:
                raw = path.read_bytes()
                path.write_bytes(raw[:b.position] + raw[b.position + b.size:])
                held += 1
    return held
