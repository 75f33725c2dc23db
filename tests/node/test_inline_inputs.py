"""An input submitted while the core task is parked with nothing queued runs at once, in the caller (core_task.py
`_run_inline`); inputs it submits are queued, in order, for the task; a failure still fails the node."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest

from pykraft.node.runtime.runtime import NodeRuntime

from .helpers import free_ports, leader_of, make_config, wait_for


@contextlib.asynccontextmanager
async def _idle_leader(tmp_path) -> AsyncIterator[NodeRuntime]:
    runtime = NodeRuntime(make_config(tmp_path, 1, {1: free_ports(1)[0]}))
    await runtime.start()
    try:
        await wait_for(lambda: leader_of([runtime]) is not None)
        await wait_for(lambda: runtime.task.parked_until_ms is not None)  # the core task waits for input
        yield runtime
    finally:
        await runtime.stop()


@pytest.mark.asyncio
async def test_an_input_to_a_parked_core_runs_before_submit_returns(tmp_path):
    async with _idle_leader(tmp_path) as runtime:
        ran: list[str] = []

        def first(now: int) -> None:
            ran.append("first")
            runtime.submit(lambda now: ran.append("nested"))  # the core is busy: queued, not re-entered
            ran.append("first done")

        runtime.submit(first)
        assert ran == ["first", "first done"]
        await wait_for(lambda: "nested" in ran)
        assert ran == ["first", "first done", "nested"]


@pytest.mark.asyncio
async def test_an_input_queued_behind_others_keeps_its_place(tmp_path):
    async with _idle_leader(tmp_path) as runtime:
        ran: list[int] = []
        runtime.task.inputs.append(lambda now: ran.append(1))  # queued, the task not yet run
        runtime.submit(lambda now: ran.append(2))
        assert ran == []  # not run ahead of the queued one
        await wait_for(lambda: ran == [1, 2])


@pytest.mark.asyncio
async def test_an_inline_input_that_raises_fails_the_core_task(tmp_path):
    async with _idle_leader(tmp_path) as runtime:
        def broken(now: int) -> None:
            raise RuntimeError("a bug in an uncontained input")

        runtime.submit(broken)  # the caller is not the one to fail
        await wait_for(lambda: runtime.failure is not None)
        assert isinstance(runtime.failure, RuntimeError)
        await asyncio.wait_for(runtime.shutdown.stopped.wait(), 30)
