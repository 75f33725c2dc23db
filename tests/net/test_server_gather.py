"""FrameServer writing large answers made of pieces (a follower's Fetch answer: header, the record batches as a view of
the leader's buffer, the trailing tags): on uvloop the pieces go out by one gathered write, on asyncio's loop as
before; either way the byte stream is the frames in request order, also when the socket fills and the rest waits
for the reader."""

from __future__ import annotations

import asyncio
import os
from typing import Any

import pytest

from pykraft.net import server as server_module
from pykraft.net.server import ConnectionInfo, FrameServer
from pykraft.protocol.framing import FrameBody

from .frame_exchange import LOOPS, MIB, REQUEST, exchange, expected, head_of, run_on

DATA = os.urandom(4 * MIB)


async def _answer(info: ConnectionInfo, payload: memoryview) -> Any:
    correlation, position, size = REQUEST.unpack_from(payload)
    head = head_of(correlation)
    if size == 0:
        return head
    return FrameBody((head, memoryview(DATA)[position:position + size], b"tail"), len(head) + size + 4)


REQUESTS = [(0, 0), (100, 2 * MIB), (0, 0), (5, 70_000), (MIB + 7, MIB - 7), (0, 0), (3, 100)]


@pytest.mark.parametrize("loop", sorted(LOOPS))
@pytest.mark.parametrize("read_late", [False, True], ids=["reader-keeps-up", "socket-fills"])
def test_large_answers_in_pieces_arrive_byte_exact_and_in_request_order(loop: str, read_late: bool) -> None:
    async def scenario() -> None:
        server = FrameServer(_answer, name="pieces")
        _, port = await server.start("127.0.0.1", 0)
        answers = await exchange(port, REQUESTS, read_late=read_late)
        await server.close()
        assert answers == [expected(DATA, c, p, s) for c, (p, s) in enumerate(REQUESTS)]

    run_on(loop, scenario)


@pytest.mark.parametrize(("loop", "gathers"), [("asyncio", False), ("uvloop", True)])
def test_only_uvloops_writelines_is_taken_as_one_gathered_write(loop: str, gathers: bool) -> None:
    """asyncio's writelines (Python 3.11) joins its buffers into one copy first: there the pieces are written as
    before, the header joined with the start of the batches and the rest written as it is."""
    async def scenario() -> None:
        seen: list[bool] = []

        async def note(info: ConnectionInfo, payload: memoryview) -> Any:
            return b"x"

        server = FrameServer(note, name="gather")
        _, port = await server.start("127.0.0.1", 0)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        seen.append(server_module._gathers(writer.transport))
        writer.close()
        await server.close()
        assert seen == [gathers]

    run_on(loop, scenario)
