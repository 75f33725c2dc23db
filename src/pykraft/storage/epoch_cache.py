"""The leader epoch cache and its `leader-epoch-checkpoint` file (Kafka's text format).

File format (Kafka's `LeaderEpochCheckpointFile`): a version line `0`, a count line, then one `<epoch> <start
offset>` line per entry. The cache is rebuilt from the batches on open; the file adds only what the batches cannot
tell: epochs initialized by a leader before it wrote anything, and epochs whose batches were deleted.
"""

from __future__ import annotations

from .files import atomic_write


def encode_epoch_checkpoint(entries: list[tuple[int, int]]) -> bytes:
    lines = ["0", str(len(entries))] + [f"{epoch} {start}" for epoch, start in entries]
    return ("\n".join(lines) + "\n").encode()


def decode_epoch_checkpoint(data: bytes) -> list[tuple[int, int]] | None:
    """Entries of a checkpoint file, or None if it is not one (the cache is then rebuilt from the log alone)."""
    try:
        lines = data.decode("ascii").splitlines()
        if len(lines) < 2 or lines[0].strip() != "0":
            return None
        count = int(lines[1])
        if count != len(lines) - 2:
            return None
        entries = []
        for line in lines[2:]:
            epoch, start = line.split()
            entries.append((int(epoch), int(start)))
        return entries
    except (UnicodeDecodeError, ValueError):
        return None


def merge_epochs(
    scanned: list[tuple[int, int]], from_file: list[tuple[int, int]], end_offset: int
) -> list[tuple[int, int]]:
    """The epoch cache after a restart: what the batches say, plus file entries that fit around them.

    An entry survives only if it keeps epochs increasing and start offsets non-decreasing and starts at or before the end offset
    (a checkpoint written before a crash may name epochs whose batches were lost).
    """
    by_epoch = dict(from_file)
    by_epoch.update(scanned)  # the batches win
    merged: list[tuple[int, int]] = []
    for epoch in sorted(by_epoch):
        start = by_epoch[epoch]
        if start > end_offset:
            continue
        if merged and start < merged[-1][1]:
            continue
        merged.append((epoch, start))
    return merged


def write_epoch_checkpoint(path: str, entries: list[tuple[int, int]]) -> None:
    atomic_write(path, encode_epoch_checkpoint(entries))
