"""The core task (node/runtime/core_task.py) and the stop sequence (node/runtime/closing.py) on their own, with a
stand-in core: a poll follows the wake-up time of the last Ready, every input and poll is carried out in order, a
failed durable write ends the task and stops the node, and a second stop() cuts the graceful hand-over short."""

from __future__ import annotations

import asyncio

import pytest

from pykraft.node.runtime.closing import NodeShutdown
from pykraft.node.runtime.core_task import CoreTask
from pykraft.raft.effects import Ready

from .helpers import wait_for


class _Clock:
    def __init__(self) -> None:
        self.now = 1_000

    def __call__(self) -> int:
        return self.now


class _Harness:
    """A CoreTask whose core answers each poll with a Ready waking it `poll_every` ms later."""

    def __init__(self, poll_every: int = 60_000) -> None:
        self.clock = _Clock()
        self.poll_every = poll_every
        self.polls: list[int] = []
        self.carried: list[tuple[Ready | None, int]] = []
        self.lane_failure: BaseException | None = None
        self.failed = 0
        self.task = CoreTask(self.clock, poll=self._poll, carry_out=lambda r, now: self.carried.append((r, now)),
                             lane_failure=lambda: self.lane_failure, on_failed=self._on_failed)

    def _poll(self, now: int) -> Ready:
        self.polls.append(now)
        return Ready((), now + self.poll_every)

    async def _on_failed(self) -> None:
        self.failed += 1


@pytest.mark.asyncio
async def test_the_core_is_polled_when_the_last_ready_says_and_not_before():
    h = _Harness()
    h.task.apply(Ready((), 5_000), h.clock())  # as the core's initialize answers
    h.task.start("core")
    try:
        await wait_for(lambda: h.task.parked_until_ms is not None)
        assert h.polls == []  # 1000 < 5000: nothing due
        h.clock.now = 5_000
        h.task.put(lambda now: None)  # any input: the task polls once its wake-up time has come
        await wait_for(lambda: h.polls == [5_000])
        assert h.task.wakeup_ms == 65_000 and h.task.stale_wakeups == 0
    finally:
        await h.task.stop()


@pytest.mark.asyncio
async def test_a_wakeup_left_in_the_past_is_counted_as_stale():
    h = _Harness(poll_every=-1)  # a core whose timer is never cleared: each poll asks to be polled in the past
    h.task.start("core")
    try:
        await wait_for(lambda: h.task.stale_wakeups >= 2)
        assert len(h.polls) >= 2
    finally:
        await h.task.stop()


@pytest.mark.asyncio
async def test_inputs_are_carried_out_in_order_with_the_ready_each_returned():
    h = _Harness()
    h.task.apply(Ready((), 60_000), h.clock())
    h.task.start("core")
    try:
        await wait_for(lambda: h.task.parked_until_ms is not None)
        first, second = Ready((), 50_000), Ready((), 40_000)
        h.task.inputs.append(lambda now: first)  # queued: the next put must wait behind it
        h.task.put(lambda now: second)
        await wait_for(lambda: len(h.carried) == 3)
        assert [ready for ready, _ in h.carried[1:]] == [first, second]
        assert h.task.wakeup_ms == 40_000  # the newest Ready's wake-up time
    finally:
        await h.task.stop()


@pytest.mark.asyncio
async def test_a_failed_durable_write_ends_the_task_and_stops_the_node():
    h = _Harness()
    h.task.start("core")
    await wait_for(lambda: h.task.parked_until_ms is not None)
    h.lane_failure = OSError("fsync failed")
    h.task.put(lambda now: None)  # not run inline: the lane failed
    await wait_for(lambda: h.failed == 1)
    assert isinstance(h.task.failure, OSError) and not h.task.running
    ran: list[int] = []
    h.task.put(lambda now: ran.append(now))
    await asyncio.sleep(0.01)
    assert ran == []  # nothing runs on a failed core task
    await h.task.stop()  # (collects the task's exception)


@pytest.mark.asyncio
async def test_a_second_stop_cuts_the_graceful_hand_over_short():
    h = _Harness()
    h.task.start("core")
    shutdown = NodeShutdown()
    closed: list[bool] = []

    async def close(graceful: bool) -> None:
        closed.append(graceful)
        shutdown.stopped.set()

    asked: list[int] = []

    class _Core:  # never hands leadership over: only the second stop() ends the wait
        def shutdown(self, now: int, timeout_ms: int) -> None:
            asked.append(timeout_ms)

    first = asyncio.ensure_future(shutdown.stop(True, 60_000, h.task, lambda: _Core(), close))
    await wait_for(lambda: asked == [60_000])
    assert not first.done() and shutdown.started
    await asyncio.wait_for(shutdown.stop(True, 60_000, h.task, lambda: _Core(), close), 5)
    await asyncio.wait_for(first, 5)
    assert closed == [True] and h.task.stopping and not h.task.running
