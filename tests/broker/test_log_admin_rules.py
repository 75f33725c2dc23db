"""The pure rules behind DeleteRecords (offset checks, low watermark, waiters) and DescribeTopicPartitions
(paging with cursors, ELR, offline replicas)."""

from __future__ import annotations

import uuid

from pykraft.broker.delete_records import cleanup_allows_delete, deletion_target, refuse_topic
from pykraft.broker.metadata_cache import MetadataCache
from pykraft.broker.partition_state import LeaderState
from pykraft.broker.topic_partitions import describe
from pykraft.protocol.errors import ErrorCode

from .records import partition, register, topic

OTHER_ID = uuid.UUID("6a1d2d7e-41f4-4d67-9c2a-5c1d08e1f0aa")


# ---- DeleteRecords -------------------------------------------------------------------------------------------------
def test_offsets_are_checked_against_the_high_watermark() -> None:
    assert deletion_target(5, high_watermark=10) == deletion_target(5, 10)
    assert deletion_target(5, 10).offset == 5 and deletion_target(5, 10).error is ErrorCode.NONE
    assert deletion_target(10, 10).offset == 10  # up to the HWM itself
    assert deletion_target(-1, 10).offset == 10  # -1: the high watermark
    assert deletion_target(11, 10).error is ErrorCode.OFFSET_OUT_OF_RANGE
    assert deletion_target(-2, 10).error is ErrorCode.OFFSET_OUT_OF_RANGE
    assert deletion_target(3, 10, deletion_allowed=False).error is ErrorCode.POLICY_VIOLATION


def test_internal_topics_and_compacted_ones_are_refused() -> None:
    assert refuse_topic("__consumer_offsets").error is ErrorCode.INVALID_TOPIC_EXCEPTION
    assert refuse_topic("orders") is None
    assert cleanup_allows_delete(None) and cleanup_allows_delete("delete") and cleanup_allows_delete("compact,delete")
    assert not cleanup_allows_delete("compact")


def test_low_watermark_is_the_smallest_start_of_alive_replicas() -> None:
    state: LeaderState[str] = LeaderState(leader_epoch=3, epoch_start_offset=0, replicas=(1, 2, 3), leader_id=1)
    alive = {2, 3}
    assert state.low_watermark(40, alive.__contains__) == -1  # followers not heard from in this leadership
    state.on_follower_fetch(2, 50, 7, 50, 1000, log_start_offset=40)
    state.on_follower_fetch(3, 50, 7, 50, 1000, log_start_offset=10)
    assert state.low_watermark(40, alive.__contains__) == 10
    alive.discard(3)  # a fenced broker no longer holds the deletion back
    assert state.low_watermark(40, alive.__contains__) == 40
    state.on_follower_fetch(9, 50, 7, 50, 1000, log_start_offset=0)  # not a replica: ignored
    assert state.low_watermark(40, alive.__contains__) == 40


def test_deletion_waiters_complete_in_order_of_their_offsets_and_abandon_on_leader_change() -> None:
    state: LeaderState[str] = LeaderState(leader_epoch=3, epoch_start_offset=0, replicas=(1, 2), leader_id=1)
    state.add_deletion_waiter(20, "a")
    state.add_deletion_waiter(30, "b")
    assert state.release_deletions(19) == []
    assert state.release_deletions(25) == ["a"]
    assert state.release_deletions(25) == []
    state.add_deletion_waiter(40, "c")
    state.forget_deletions(lambda token: token == "c")  # its request timed out
    assert state.abandon_deletions() == ["b"] and state.release_deletions(100) == []


# ---- DescribeTopicPartitions ---------------------------------------------------------------------------------------
def _cache() -> MetadataCache:
    cache = MetadataCache()
    records = [register(1, 10), register(2, 11), register(3, 12, fenced=True), topic("a"),
               partition(0, [1, 2], [1, 2], 1), partition(1, [2, 1], [2], 2), partition(2, [1, 3], [1], 1),
               topic("b", OTHER_ID)]
    cache.replay_all(enumerate(records))
    cache.replay(partition(0, [2, 1], [2, 1], 2, topic_id=OTHER_ID), len(records))
    return cache


def test_one_page_holds_at_most_the_limit_and_says_where_the_next_starts() -> None:
    cache = _cache()
    page = describe(cache, [], None, 2)
    assert [(t.name, [p.index for p in t.partitions]) for t in page.topics] == [("a", [0, 1])]
    assert page.next_cursor == ("a", 2)
    page = describe(cache, [], page.next_cursor, 2)
    assert [(t.name, [p.index for p in t.partitions]) for t in page.topics] == [("a", [2]), ("b", [0])]
    assert page.next_cursor is None
    page = describe(cache, [], None, 3)  # "a" fits exactly: the next topic is where the next page begins
    assert page.next_cursor == ("b", 0) and [t.name for t in page.topics] == ["a"]


def test_offline_replicas_unknown_topics_and_bad_cursors() -> None:
    cache = _cache()
    page = describe(cache, ["a", "missing", "bad/name"], None, 100)
    by_name = {t.name: t for t in page.topics}
    assert by_name["missing"].error is ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert by_name["bad/name"].error is ErrorCode.INVALID_TOPIC_EXCEPTION
    third = by_name["a"].partitions[2]
    assert third.offline == (3,) and third.elr == () and third.last_known_elr == ()
    assert describe(cache, ["a"], ("b", 0), 10).error is ErrorCode.INVALID_REQUEST  # cursor topic not listed
    assert describe(cache, [], ("a", -1), 10).error is ErrorCode.INVALID_REQUEST
    assert describe(cache, [], None, 0).topics[0].partitions[0].index == 0  # a limit below 1 counts as 1
