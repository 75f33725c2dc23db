"""ThresholdPurgatory (raft/purgatory.py): the one purgatory behind acks=all, DeleteRecords, the controller's
writes in the node and in the simulator."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pykraft.broker.partition_state import LeaderState
from pykraft.raft.purgatory import ThresholdPurgatory
from pykraft.protocol.errors import ErrorCode


def test_completes_in_insertion_order_once_the_watermark_reaches_the_threshold() -> None:
    p: ThresholdPurgatory[str] = ThresholdPurgatory()
    p.add(5, "a")
    p.add(3, "b")
    p.add(9, "c")
    assert p.complete(2) == []
    assert p.complete(5) == ["a", "b"]  # the order they came in, not the threshold order
    assert len(p) == 1 and p.thresholds() == [9]
    assert p.complete(100) == ["c"] and len(p) == 0


def test_an_epoch_change_fails_the_older_epochs_before_anything_completes() -> None:
    p: ThresholdPurgatory[str] = ThresholdPurgatory()
    p.add(1, "old", epoch=4)
    p.add(1, "new", epoch=5)
    failed, completed = p.check(10, 5)
    assert failed == ["old"] and completed == ["new"]
    p.add(1, "orphan", epoch=5)
    assert p.check(10, None) == (["orphan"], [])  # leading nothing: everything fails


def test_forget_drops_what_nobody_waits_for() -> None:
    p: ThresholdPurgatory[list[int]] = ThresholdPurgatory()
    gone, alive = [1], []
    p.add(3, gone)
    p.add(3, alive)
    p.forget(lambda token: bool(token))
    assert list(p) == [alive]


@given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 3)), max_size=30), st.lists(st.integers(0, 60)))
def test_every_token_leaves_exactly_once(entries, watermarks) -> None:
    p: ThresholdPurgatory[int] = ThresholdPurgatory()
    for index, (threshold, epoch) in enumerate(entries):
        p.add(threshold, index, epoch)
    seen: list[int] = []
    for mark in watermarks:
        failed, completed = p.check(mark, 2)
        assert all(entries[t][1] != 2 for t in failed)
        assert all(entries[t][0] <= mark for t in completed)
        seen += failed + completed
    seen += p.drain()
    assert sorted(seen) == list(range(len(entries)))


def test_leader_state_answers_acks_all_through_the_purgatory() -> None:
    state: LeaderState[str] = LeaderState(3, 0, (1, 2), 1)
    state.add_waiter(5, "w")
    assert state.release(4, 2, 2) == []
    assert state.release(5, 1, 2) == [("w", ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND)]
    state.add_waiter(6, "x")
    state.add_deletion_waiter(2, "d")
    assert state.abandon() == ["x"] and state.abandon_deletions() == ["d"]
