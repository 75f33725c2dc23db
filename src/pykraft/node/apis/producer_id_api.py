"""InitProducerId (v0-v5) for idempotent producers, from producer-id blocks the controller hands out (KIP-730).

The broker keeps one block (start, length) got with AllocateProducerIds from the active controller and hands
out its ids one by one, epoch 0; a new block is asked for when it runs out (one request at a time; concurrent
callers wait for it). Every call gets a fresh id, as Kafka's broker does for a producer without a transactional
id (a KIP-360 epoch bump request included). Transactional ids need a transaction coordinator, which this broker
does not have: COORDINATOR_NOT_AVAILABLE. An unreachable controller gives NOT_CONTROLLER, a refused allocation
the controller's error code (clients retry InitProducerId on both).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from kio.schema.types import BrokerId
from kio.static.primitive import i64

from pykraft.protocol.lazy_schema import schema_module
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.throttle import ZERO_THROTTLE

from pykraft.node.apis.wire_build import make, response_namespace

apr = schema_module("kio.schema.allocate_producer_ids.v0.request")  # loaded at the first block asked for


class ProducerIdBlocks:
    def __init__(self, broker_id: int, broker_epoch: Callable[[], int],
                 ask_controller: Callable[[Any], Awaitable[Any | None]]) -> None:
        self.broker_id = broker_id
        self._broker_epoch = broker_epoch
        self._ask = ask_controller
        self._next = 0
        self._end = 0
        self._pending: asyncio.Task[ErrorCode] | None = None

    async def next_id(self) -> tuple[ErrorCode, int]:
        while self._next >= self._end:
            if self._pending is None or self._pending.done():
                # A task of its own, not the caller's: a caller whose client hung up (its handler cancelled)
                # must not take the allocation the other callers wait for down with it.
                self._pending = asyncio.get_running_loop().create_task(self._allocate())
                self._pending.add_done_callback(self._allocated)
            error = await asyncio.shield(self._pending)
            if error is not ErrorCode.NONE:
                return error, -1
        producer_id = self._next
        self._next += 1
        return ErrorCode.NONE, producer_id

    def _allocated(self, task: asyncio.Task[ErrorCode]) -> None:
        if self._pending is task:
            self._pending = None

    async def _allocate(self) -> ErrorCode:
        request = apr.AllocateProducerIdsRequest(broker_id=BrokerId(self.broker_id),
                                                 broker_epoch=i64(self._broker_epoch()))
        response = await self._ask(request)
        if response is None:
            return ErrorCode.NOT_CONTROLLER
        error = ErrorCode(int(response.error_code))
        if error is ErrorCode.NONE:
            self._next = int(response.producer_id_start)
            self._end = self._next + int(response.producer_id_len)
        return error


async def init_producer_id(blocks: ProducerIdBlocks, message: Any) -> Any:
    ns = response_namespace(ApiKey.INIT_PRODUCER_ID, int(message.__version__))
    if message.transactional_id is not None:
        error, producer_id = ErrorCode.COORDINATOR_NOT_AVAILABLE, -1
    else:
        error, producer_id = await blocks.next_id()
    return make(ns.InitProducerIdResponse, throttle_time=ZERO_THROTTLE, error_code=error,
                producer_id=producer_id, producer_epoch=0 if error is ErrorCode.NONE else -1)
