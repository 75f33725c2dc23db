"""The replica fetcher's decisions (broker/replica_fetch.py), pure: the node's fetcher and the simulator's run them."""

from __future__ import annotations

from pykraft.broker.replica_fetch import (FetchAction, FetchPosition, adopted_log_start, batches_to_append, decide,
                                          follower_high_watermark, restart_for_straddling_batch)
from pykraft.protocol.errors import ErrorCode
from pykraft.records import SimpleRecord, encode_batch

SENT = FetchPosition(leader_epoch=4, fetch_offset=10, last_fetched_epoch=3)


def test_an_answer_to_a_position_we_left_is_skipped() -> None:
    assert decide(SENT, 5, 10, ErrorCode.NONE, 0, None).action is FetchAction.SKIP  # new leader epoch
    assert decide(SENT, 4, 12, ErrorCode.NONE, 0, None).action is FetchAction.SKIP  # the log end moved


def test_out_of_range_below_the_leaders_start_restarts_there_and_other_errors_back_off() -> None:
    restart = decide(SENT, 4, 10, ErrorCode.OFFSET_OUT_OF_RANGE, 25, None)
    assert (restart.action, restart.offset) == (FetchAction.RESTART, 25)
    # out of range with the leader's start below our end (our end above the leader's): wait for metadata
    assert decide(SENT, 4, 10, ErrorCode.OFFSET_OUT_OF_RANGE, 3, None).action is FetchAction.BACK_OFF
    fenced = decide(SENT, 4, 10, ErrorCode.FENCED_LEADER_EPOCH, 0, None)
    assert (fenced.action, fenced.error) == (FetchAction.BACK_OFF, ErrorCode.FENCED_LEADER_EPOCH)


def test_a_diverging_epoch_truncates_and_records_append() -> None:
    truncate = decide(SENT, 4, 10, ErrorCode.NONE, 0, (2, 7))
    assert (truncate.action, truncate.offset, truncate.epoch) == (FetchAction.TRUNCATE, 7, 2)
    assert decide(SENT, 4, 10, ErrorCode.NONE, 0, (-1, -1)).action is FetchAction.APPEND
    assert decide(SENT, 4, 10, ErrorCode.NONE, 0, None).action is FetchAction.APPEND


def _batch(base: int, count: int) -> bytes:
    return encode_batch([SimpleRecord(value=b"v")] * count, base_offset=base, partition_leader_epoch=1,
                        timestamp_ms=1)


def test_whole_batches_only_less_what_we_hold_and_gaps_kept() -> None:
    first, second = _batch(0, 5), _batch(5, 3)
    data = memoryview(first + second + second[:20])  # a cut third batch
    assert batches_to_append(data, 0) == (0, len(first) + len(second), 0)
    assert batches_to_append(data, 5) == (len(first), len(first) + len(second), 5)
    assert batches_to_append(data, 8) == (0, 0, -1)
    gap = memoryview(_batch(12, 2))  # compaction removed 8..11 on the leader
    assert batches_to_append(gap, 8) == (0, len(gap), 12)


def test_watermarks_follow_the_leader_within_our_log() -> None:
    assert follower_high_watermark(50, 30, 20) == 30
    assert follower_high_watermark(15, 30, 20) is None
    assert adopted_log_start(40, 30, 10) == 30  # never above our own high watermark
    assert adopted_log_start(5, 30, 10) is None


def test_an_empty_log_restarts_at_a_batch_that_straddles_its_start() -> None:
    # DeleteRecords left the leader's start at 99 inside the batch 98..100; the follower restarted its log at 99
    data = memoryview(_batch(98, 3))
    start, stop, first = batches_to_append(data, 99)
    assert (start, stop, first) == (0, len(data), 98)
    assert restart_for_straddling_batch(first, 99, 99) == 98
    assert restart_for_straddling_batch(first, 50, 99) is None  # a log with records must continue at its end
    assert restart_for_straddling_batch(99, 99, 99) is None
