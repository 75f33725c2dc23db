"""Moving a partition log's start offset forward without deleting files: DeleteRecords (KIP-107).

Kafka's `UnifiedLog.maybeIncrementLogStartOffset`: a client's DeleteRecords on the leader, or a follower learning
the leader's log start from a Fetch answer, moves the log start to any offset up to the high watermark, also in
the middle of a segment or a batch. Nothing is deleted here: reads below the start are refused by the callers
(OFFSET_OUT_OF_RANGE), and retention's deletion path (`retention.delete_expired_segments`) drops the segments that
lie wholly below it at its next round.

The new start reaches `log-start-offset-checkpoint` with the directory's other checkpoint files
(`PartitionLogs.checkpoint`), not at once: as in Kafka, an increment may be lost only if every replica stops
uncleanly before that, and a lost increment only brings deleted records back, never loses others.

The leader epoch cache is cut at the new start the way retention cuts it (`truncate_epochs_from_start`, Kafka's
`LeaderEpochFileCache.truncateFromStart`): the epoch covering the new start stays, moved up to it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .file_log import FileLog


class LogStartBeyondHighWatermarkError(ValueError):
    """Kafka's OffsetOutOfRangeException from maybeIncrementLogStartOffset: the offset is above the HWM."""


def truncate_epochs_from_start(epochs: list[tuple[int, int]], new_start: int) -> list[tuple[int, int]]:
    """The (epoch, start offset) entries once the log starts at `new_start`: entries wholly below it go, and the
    last of them, the epoch that covers `new_start`, is kept with its start moved up to it."""
    kept = [(e, s) for e, s in epochs if s >= new_start]
    covering = [(e, s) for e, s in epochs if s < new_start]
    if covering and (not kept or kept[0][1] > new_start):
        kept.insert(0, (covering[-1][0], new_start))
    return kept


def increment_log_start(log: FileLog, new_start: int) -> bool:
    """Move the log start up to `new_start` (a no-op at or below the current one). Returns whether it moved.
    `LogStartBeyondHighWatermarkError` when `new_start` is above the high watermark (nothing changes)."""
    if new_start > log.high_watermark():
        raise LogStartBeyondHighWatermarkError(
            f"cannot move the log start of {log.key[0]}-{log.key[1]} to {new_start}: the high watermark is "
            f"{log.high_watermark()}")
    if new_start <= log._start_offset:
        return False
    log._start_offset = new_start
    epochs = truncate_epochs_from_start(log._epochs, new_start)
    if epochs != log._epochs:
        log._epochs = epochs
        log._dirty_epochs = True
    return True
