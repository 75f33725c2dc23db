"""What the FrameServer tests of answers made of pieces share: both event loops the node may use, the request
(correlation id, position, size; size 0 asks for a small answer), the client that sends them all at once and reads
the answers back, and the answer each request must get."""

from __future__ import annotations

import asyncio
import socket
import ssl
import struct
from collections.abc import Callable, Coroutine
from typing import Any

import uvloop

LOOPS = {"asyncio": asyncio.new_event_loop, "uvloop": uvloop.new_event_loop}
MIB = 1 << 20
REQUEST = struct.Struct(">iqi")  # correlation id, position, size (0: a small answer, no pieces)


def run_on(loop: str, scenario: Callable[[], Coroutine[Any, Any, None]]) -> None:
    with asyncio.Runner(loop_factory=LOOPS[loop]) as runner:
        runner.run(scenario())


def head_of(correlation: int) -> bytes:
    return struct.pack(">i", correlation) + b"head"


def expected(data: bytes, correlation: int, position: int, size: int) -> bytes:
    """The frame body a request must get: its header, then `size` bytes of `data` from `position` and a trailer."""
    return head_of(correlation) + (data[position:position + size] + b"tail" if size else b"")


async def exchange(port: int, requests: list[tuple[int, int]], context: ssl.SSLContext | None = None,
                   read_late: bool = False) -> list[bytes]:
    """Send every request at once, then read the answers (`read_late`: only after a pause, so the server's socket
    fills up and the rest of an answer must wait for the reader)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
    writer.transport.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
    writer.write(b"".join(struct.pack(">i", REQUEST.size) + REQUEST.pack(c, p, s)
                          for c, (p, s) in enumerate(requests)))
    if read_late:
        await asyncio.sleep(0.3)
    answers = []
    for _ in requests:
        size = struct.unpack(">i", await reader.readexactly(4))[0]
        answers.append(await reader.readexactly(size))
    writer.close()
    return answers
