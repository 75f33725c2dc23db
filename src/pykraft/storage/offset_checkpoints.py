"""Kafka's offset checkpoint files: one per log directory, one line per partition.

`log-start-offset-checkpoint`, `recovery-point-offset-checkpoint` and `replication-offset-checkpoint` share
Kafka's `OffsetCheckpointFile` format: a version line `0`, a count line, then `<topic> <partition> <offset>`
lines. The metadata log and the partition logs of a broker can live in the same directory (metadata.log.dir
defaults to the first of log.dirs), so every writer updates its own entries and keeps the others': a
read-merge-write through `atomic_write` (all writers run on the node's event-loop thread).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable, Mapping

from .files import atomic_write

_log = logging.getLogger("pykraft.storage")

PartitionKey = tuple[str, int]


def encode_offsets(entries: Mapping[PartitionKey, int]) -> bytes:
    lines = ["0", str(len(entries))]
    lines += [f"{topic} {partition} {offset}" for (topic, partition), offset in sorted(entries.items())]
    return ("\n".join(lines) + "\n").encode()


def decode_offsets(data: bytes) -> dict[PartitionKey, int] | None:
    """The entries of a checkpoint file, or None if the content is not one."""
    try:
        lines = data.decode("utf-8").splitlines()
        if len(lines) < 2 or lines[0].strip() != "0" or int(lines[1]) != len(lines) - 2:
            return None
        entries: dict[PartitionKey, int] = {}
        for line in lines[2:]:
            topic, partition, offset = line.split()
            entries[(topic, int(partition))] = int(offset)
        return entries
    except (UnicodeDecodeError, ValueError):
        return None


def read_offsets(path: str) -> dict[PartitionKey, int]:
    """Entries of the checkpoint at `path`; {} when it is missing or unreadable (the offsets it would give are
    then recomputed: a log start falls back to the first segment, a high watermark to the log start)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return {}
    entries = decode_offsets(data)
    if entries is None:
        _log.warning("%s is not an offset checkpoint file; ignoring it", path)
        return {}
    return entries


def update_offsets(path: str, changed: Mapping[PartitionKey, int], removed: Iterable[PartitionKey] = ()) -> None:
    """Set `changed` and drop `removed` in the checkpoint at `path`, keeping every other entry. No write when
    nothing would change (these run on every flush)."""
    old = read_offsets(path) if os.path.exists(path) else {}
    new = dict(old)
    new.update(changed)
    for key in removed:
        new.pop(key, None)
    if new != old or not os.path.exists(path):
        atomic_write(path, encode_offsets(new))
