"""The replica fetcher's decisions, as pure functions over the leader's answer (Kafka's AbstractFetcherThread and
ReplicaFetcherThread.processPartitionData): the node's fetcher tasks (node/hosts/replica_fetcher.py) and the
simulated brokers' fetchers (sim/hosts/data_fetcher.py) ask these, then carry the decision out on their log.

One partition of one Fetch answer, sent at `sent` (our leader epoch, log end and last fetched epoch then):
- the partition moved on meanwhile (another leader epoch, or our log end moved): SKIP, the next round asks again;
- OFFSET_OUT_OF_RANGE with our log end below the leader's log start (retention or DeleteRecords removed what we
  miss): RESTART, empty the log and start again at the leader's log start (Kafka's truncateFullyAndStartAt);
- any other error (NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH, ...): BACK_OFF and wait for
  metadata;
- a DivergingEpoch: TRUNCATE to where the histories agree (raft's `truncation_offset`, KIP-101/KIP-279 by epochs);
- otherwise APPEND: the whole batches at the front of the records (`batches_to_append`), then the high watermark
  (`follower_high_watermark`) and the log start (`adopted_log_start`) follow the leader's.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from pykraft.protocol.errors import ErrorCode

BATCH_HEADER_SIZE = 61  # a record batch v2 header: what must be there to read its offsets
LOG_OVERHEAD = 12  # base offset (8) + length (4): the length counts the bytes after these


@dataclass(frozen=True, slots=True)
class FetchPosition:
    """What we asked for one partition: our leader epoch, our log end (the fetch offset), our last epoch."""

    leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int


class FetchAction(enum.Enum):
    APPEND = "append"
    TRUNCATE = "truncate"
    RESTART = "restart"
    BACK_OFF = "back-off"
    SKIP = "skip"


@dataclass(frozen=True, slots=True)
class FetchDecision:
    action: FetchAction
    offset: int = -1  # TRUNCATE: the leader's end offset of `epoch`; RESTART: the leader's log start
    epoch: int = -1  # TRUNCATE: the diverging epoch
    error: ErrorCode = ErrorCode.NONE


def decide(sent: FetchPosition, leader_epoch_now: int, log_end_now: int, error: ErrorCode, leader_log_start: int,
           diverging: tuple[int, int] | None) -> FetchDecision:
    """What to do with one partition's answer; `diverging` is the answer's (epoch, end offset), or None."""
    if leader_epoch_now != sent.leader_epoch or log_end_now != sent.fetch_offset:
        return FetchDecision(FetchAction.SKIP)
    if error is ErrorCode.OFFSET_OUT_OF_RANGE and leader_log_start > log_end_now:
        return FetchDecision(FetchAction.RESTART, offset=leader_log_start)
    if error is not ErrorCode.NONE:
        return FetchDecision(FetchAction.BACK_OFF, error=error)
    if diverging is not None and diverging[0] >= 0 and diverging[1] >= 0:
        return FetchDecision(FetchAction.TRUNCATE, offset=diverging[1], epoch=diverging[0])
    return FetchDecision(FetchAction.APPEND)


def batches_to_append(view: memoryview, log_end: int) -> tuple[int, int, int]:
    """(start, stop, first offset) of the bytes to append: the whole batches at the front of a fetched buffer (a
    leader may cut its last batch), less those wholly below our log end (a leader answers from the batch that holds
    the fetch offset). The first offset may be above our log end: compaction removed the offsets between, and a
    follower keeps that gap as the leader has it. (0, 0, -1): nothing to append."""
    pos = start = 0
    first = -1
    while pos + BATCH_HEADER_SIZE <= len(view):
        length = int.from_bytes(view[pos + 8:pos + 12], "big")
        if pos + LOG_OVERHEAD + length > len(view):
            break
        base = int.from_bytes(view[pos:pos + 8], "big", signed=True)
        last = base + int.from_bytes(view[pos + 23:pos + 27], "big", signed=True)
        if last < log_end and first < 0:
            start = pos + LOG_OVERHEAD + length  # already ours
        elif first < 0:
            first = base
        pos += LOG_OVERHEAD + length
    if first < 0:
        return 0, 0, -1
    return start, pos, first


def restart_for_straddling_batch(first_offset: int, log_start: int, log_end: int) -> int | None:
    """Where an empty follower log restarts when the leader's first batch begins below its start (Kafka's
    Partition.appendRecordsToFollowerOrFutureReplica on UnexpectedAppendOffsetException: DeleteRecords put the
    leader's log start inside a batch, the follower restarted there, and the leader answers with the whole batch):
    at the batch's base offset. None: append as it is (a non-empty log must continue exactly at its end)."""
    if 0 <= first_offset < log_end and log_end == log_start:
        return first_offset
    return None


def follower_high_watermark(leader_high_watermark: int, log_end: int, current: int) -> int | None:
    """The follower's new high watermark (the leader's, never past our own log end), or None when it stays."""
    hwm = min(leader_high_watermark, log_end)
    return hwm if hwm > current else None


def adopted_log_start(leader_log_start: int, high_watermark: int, log_start: int) -> int | None:
    """Our new log start after DeleteRecords or retention on the leader (Kafka's follower moves its log start to
    the leader's, up to its own high watermark), or None when it stays."""
    new_start = min(leader_log_start, high_watermark)
    return new_start if new_start > log_start else None
