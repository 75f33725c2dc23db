"""ProducerIdBlocks (node/apis/producer_id_api.py): one AllocateProducerIds at a time, shared by concurrent callers."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from pykraft.node.apis.producer_id_api import ProducerIdBlocks
from pykraft.protocol.errors import ErrorCode


def _controller(release: asyncio.Event, calls: list[int]):
    async def ask(_request):
        calls.append(1)
        await release.wait()
        return SimpleNamespace(error_code=0, producer_id_start=1000 * len(calls), producer_id_len=2)
    return ask


def test_a_cancelled_first_caller_does_not_strand_the_next_ones() -> None:
    """Regression: the allocation ran inside the first caller's task; a client that dropped its connection
    (librdkafka closes its bootstrap connection) cancelled it and left every later InitProducerId waiting forever
    (confluent-kafka's producer stalled for its 60 s request timeout in benchmarks/produce.py)."""
    async def scenario() -> None:
        release, calls = asyncio.Event(), []
        blocks = ProducerIdBlocks(1, lambda: 5, _controller(release, calls))
        first = asyncio.create_task(blocks.next_id())
        await asyncio.sleep(0)
        first.cancel()
        second = asyncio.create_task(blocks.next_id())
        third = asyncio.create_task(blocks.next_id())
        await asyncio.sleep(0)
        release.set()
        results = await asyncio.wait_for(asyncio.gather(second, third), 5)
        assert sorted(results) == [(ErrorCode.NONE, 1000), (ErrorCode.NONE, 1001)]
        assert len(calls) == 1  # one allocation shared by every caller
        assert await asyncio.wait_for(blocks.next_id(), 5) == (ErrorCode.NONE, 2000)  # the block ran out

    asyncio.run(scenario())


def test_a_failed_allocation_answers_every_waiter_and_the_next_call_asks_again() -> None:
    async def scenario() -> None:
        answers = [None, SimpleNamespace(error_code=0, producer_id_start=7, producer_id_len=1)]

        async def ask(_request):
            await asyncio.sleep(0)
            return answers.pop(0)

        blocks = ProducerIdBlocks(1, lambda: 5, ask)
        assert await asyncio.gather(blocks.next_id(), blocks.next_id()) == [(ErrorCode.NOT_CONTROLLER, -1)] * 2
        assert await blocks.next_id() == (ErrorCode.NONE, 7)

    asyncio.run(scenario())
