"""FrameServer: ordered pipelined responses, backpressure, and bad peers closing only their own connection."""

from __future__ import annotations

import asyncio
import socket
import struct

import pytest

from pykraft.net.client import Connection
from pykraft.net.errors import ConnectionClosedError
from pykraft.net.server import FrameServer

from .conftest import (
    OP_BIG,
    OP_NOT_BYTES,
    OP_CLOSE,
    OP_ECHO,
    OP_FAIL,
    OP_SILENT,
    OP_WAIT,
    EchoApp,
    Running,
    correlation_of,
    request_bytes,
    until,
)

pytestmark = pytest.mark.asyncio


async def _raw(echo: Running) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_connection(echo.host, echo.port)


_REQUEST_SIZE = struct.calcsize(">iBB")


def _frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


async def _read_frame(reader: asyncio.StreamReader) -> bytes:
    size = struct.unpack(">i", await reader.readexactly(4))[0]
    return await reader.readexactly(size)


async def test_responses_are_written_in_request_order_although_handlers_finish_out_of_order(echo: Running) -> None:
    conn = await Connection.open(echo.host, echo.port)
    # Request i waits on gate i; the gates open in reverse order, so handler 2 finishes first.
    requests = [asyncio.ensure_future(conn.request(request_bytes(OP_WAIT, i), timeout_ms=5000)) for i in range(3)]
    await until(lambda: len(echo.app.started) == 3, "all three handlers started (pipelining)")
    order: list[int] = []
    for task in requests:
        task.add_done_callback(lambda t: order.append(correlation_of(t.result())))
    echo.app.gate(2).set()
    echo.app.gate(1).set()
    await asyncio.sleep(0)
    assert not any(task.done() for task in requests), "responses 1 and 2 must wait for response 0"
    echo.app.gate(0).set()
    results = await asyncio.gather(*requests)
    assert [correlation_of(r) for r in results] == [0, 1, 2]
    assert order == [0, 1, 2]
    await conn.close()


async def test_raw_byte_stream_carries_responses_in_request_order(echo: Running) -> None:
    reader, writer = await _raw(echo)
    writer.write(b"".join(_frame(struct.pack(">iBB", cid, OP_WAIT, 10 + cid)) for cid in range(4)))
    await until(lambda: len(echo.app.started) == 4)
    for gate in (13, 11, 12, 10):
        echo.app.gate(gate).set()
    assert [correlation_of(await _read_frame(reader)) for _ in range(4)] == [0, 1, 2, 3]
    writer.close()


async def test_large_answers_between_small_ones_arrive_whole_and_in_order(echo: Running) -> None:
    """Small answers are joined into one write, a large one is written after its prefix without that join:
    the byte stream must still be the same frames in the same order."""
    reader, writer = await _raw(echo)
    ops = [(OP_ECHO, 0), (OP_BIG, 1), (OP_ECHO, 0), (OP_ECHO, 0), (OP_BIG, 2), (OP_ECHO, 0)]
    writer.write(b"".join(_frame(struct.pack(">iBB", cid, op, arg)) for cid, (op, arg) in enumerate(ops)))
    for cid, (op, arg) in enumerate(ops):
        frame = await _read_frame(reader)
        assert correlation_of(frame) == cid
        assert len(frame) == _REQUEST_SIZE + (arg << 20 if op == OP_BIG else 0)
        assert frame[_REQUEST_SIZE:] == bytes(len(frame) - _REQUEST_SIZE)
    writer.close()


async def test_many_concurrent_requests_over_one_connection(echo: Running) -> None:
    conn = await Connection.open(echo.host, echo.port)
    results = await asyncio.gather(*[conn.request(request_bytes(OP_ECHO, i % 256), timeout_ms=10_000)
                                     for i in range(2000)])
    assert [correlation_of(r) for r in results] == list(range(2000))
    assert all(r[5] == i % 256 for i, r in enumerate(results))
    assert echo.server.stats.responses == 2000
    assert echo.server.connection_count == 1
    await conn.close()


async def test_none_keeps_its_place_in_the_order_without_a_response(echo: Running) -> None:
    reader, writer = await _raw(echo)
    writer.write(_frame(struct.pack(">iBB", 0, OP_WAIT, 1)) + _frame(struct.pack(">iBB", 1, OP_SILENT, 0))
                 + _frame(struct.pack(">iBB", 2, OP_ECHO, 0)))
    await until(lambda: len(echo.app.started) == 3)
    echo.app.gate(1).set()
    assert correlation_of(await _read_frame(reader)) == 0
    assert correlation_of(await _read_frame(reader)) == 2
    writer.close()


async def test_backpressure_limits_unanswered_requests_per_connection() -> None:
    app = EchoApp()
    server = FrameServer(app, max_in_flight=4)
    host, port = await server.start("127.0.0.1", 0)
    try:
        conn = await Connection.open(host, port)
        requests = [asyncio.ensure_future(conn.request(request_bytes(OP_WAIT, i), timeout_ms=10_000))
                    for i in range(10)]
        await until(lambda: len(app.started) == 4)
        for _ in range(50):
            await asyncio.sleep(0)
        assert app.started == [0, 1, 2, 3], "no handler beyond the limit may start"
        app.gate(0).set()
        await until(lambda: len(app.started) == 5, "one more handler once the first is answered")
        assert app.started[4] == 4
        for gate in range(1, 10):
            app.gate(gate).set()
        results = await asyncio.gather(*requests)
        assert [correlation_of(r) for r in results] == list(range(10))
        await conn.close()
    finally:
        await server.close()


@pytest.mark.parametrize("prefix", [struct.pack(">i", 1025), struct.pack(">i", -1)], ids=["oversize", "negative"])
async def test_bad_size_prefix_closes_only_that_connection(echo: Running, prefix: bytes) -> None:
    good = await Connection.open(echo.host, echo.port)
    reader, writer = await _raw(echo)
    writer.write(prefix + b"\x00" * 8)
    assert await reader.read() == b"", "the server closes the offending connection"
    writer.close()
    assert correlation_of(await good.request(request_bytes(OP_ECHO), timeout_ms=5000)) == 0
    await until(lambda: echo.server.connection_count == 1)
    assert echo.server.stats.invalid_frames == 1
    assert echo.app.started == [0], "nothing of the bad connection reached the handler"
    await good.close()


async def test_frame_at_the_limit_is_accepted(echo: Running) -> None:
    conn = await Connection.open(echo.host, echo.port)
    body = b"x" * (1024 - 6)
    response = await conn.request(request_bytes(OP_ECHO, 0, body), timeout_ms=5000)
    assert len(response) == 1024
    await conn.close()


async def test_handler_exception_closes_only_that_connection(echo: Running) -> None:
    good = await Connection.open(echo.host, echo.port)
    bad = await Connection.open(echo.host, echo.port)
    with pytest.raises(ConnectionClosedError):
        await bad.request(request_bytes(OP_FAIL), timeout_ms=5000)
    assert bad.closed
    assert correlation_of(await good.request(request_bytes(OP_ECHO), timeout_ms=5000)) == 0
    await until(lambda: echo.server.connection_count == 1)
    assert echo.server.stats.handler_errors == 1
    await good.close()


async def test_handler_returning_something_else_than_bytes_closes_the_connection(echo: Running) -> None:
    conn = await Connection.open(echo.host, echo.port)
    first = asyncio.ensure_future(conn.request(request_bytes(OP_ECHO), timeout_ms=5000))
    broken = asyncio.ensure_future(conn.request(request_bytes(OP_NOT_BYTES), timeout_ms=5000))
    assert correlation_of(await first) == 0
    with pytest.raises(ConnectionClosedError):
        await broken
    await until(lambda: echo.server.connection_count == 0)
    assert echo.server.stats.handler_errors == 1


async def test_a_peer_that_does_not_read_stops_being_read() -> None:
    app = EchoApp()
    server = FrameServer(app, max_in_flight=1000)
    host, port = await server.start("127.0.0.1", 0)
    try:
        reader, writer = await asyncio.open_connection(host, port)
        # 8 responses of 2 MiB: more than the loopback socket buffers hold, so the transport buffers the rest.
        writer.write(b"".join(_frame(struct.pack(">iBB", cid, OP_BIG, 2)) for cid in range(8)))
        await until(lambda: len(app.started) == 8)
        (proto,) = server._connections
        await until(lambda: proto._reading_paused, "reading paused while the write buffer is full")
        writer.write(_frame(struct.pack(">iBB", 8, OP_ECHO, 0)))
        for _ in range(100):
            await asyncio.sleep(0)
        assert len(app.started) == 8, "the request sent while paused is not read yet"
        for cid in range(8):
            response = await _read_frame(reader)
            assert correlation_of(response) == cid and len(response) == 6 + (2 << 20)
        assert correlation_of(await _read_frame(reader)) == 8, "reading resumed once the peer drained"
        writer.close()
    finally:
        await server.close()


async def test_close_connection_writes_earlier_responses_first(echo: Running) -> None:
    conn = await Connection.open(echo.host, echo.port)
    first = asyncio.ensure_future(conn.request(request_bytes(OP_WAIT, 7), timeout_ms=5000))
    closing = asyncio.ensure_future(conn.request(request_bytes(OP_CLOSE), timeout_ms=5000))
    await until(lambda: len(echo.app.started) == 2)
    echo.app.gate(7).set()
    assert correlation_of(await first) == 0
    with pytest.raises(ConnectionClosedError):
        await closing
    await until(lambda: echo.server.connection_count == 0)
    assert echo.server.stats.closed_by_handler == 1
    assert echo.server.stats.handler_errors == 0


async def test_client_reset_mid_frame_leaves_the_server_healthy(echo: Running) -> None:
    reader, writer = await _raw(echo)
    # One complete request whose handler is parked, then half of another frame, then a TCP reset.
    writer.write(_frame(struct.pack(">iBB", 0, OP_WAIT, 99)) + struct.pack(">i", 100) + b"abc")
    await until(lambda: echo.app.started == [0])
    assert echo.server.connection_count == 1
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close() sends RST
    writer.transport.abort()
    await until(lambda: echo.server.connection_count == 0, "the reset connection is forgotten")
    await until(lambda: echo.app.cancelled == 1, "its parked handler is cancelled")
    conn = await Connection.open(echo.host, echo.port)
    assert correlation_of(await conn.request(request_bytes(OP_ECHO), timeout_ms=5000)) == 0
    await conn.close()


async def test_half_closed_client_is_dropped(echo: Running) -> None:
    reader, writer = await _raw(echo)
    writer.write(_frame(struct.pack(">iBB", 0, OP_WAIT, 42)))
    await until(lambda: echo.app.started == [0])
    writer.write_eof()
    await until(lambda: echo.server.connection_count == 0)
    await until(lambda: echo.app.cancelled == 1)
    writer.close()


async def test_close_cancels_handlers_and_closes_connections() -> None:
    app = EchoApp()
    server = FrameServer(app)
    host, port = await server.start("127.0.0.1", 0)
    conn = await Connection.open(host, port)
    parked = asyncio.ensure_future(conn.request(request_bytes(OP_WAIT, 1), timeout_ms=5000))
    await until(lambda: app.started == [0])
    await server.close()
    assert app.cancelled == 1
    assert server.connection_count == 0
    with pytest.raises(ConnectionClosedError):
        await parked
    with pytest.raises(OSError):
        await asyncio.open_connection(host, port)


async def test_connection_info_names_the_peer(echo: Running) -> None:
    conn = await Connection.open(echo.host, echo.port)
    other = await Connection.open(echo.host, echo.port)
    await conn.request(request_bytes(OP_ECHO), timeout_ms=5000)
    await other.request(request_bytes(OP_ECHO), timeout_ms=5000)
    first, second = echo.app.infos
    assert first.peer_host == "127.0.0.1" and first.peer_port > 0
    assert first.connection_id != second.connection_id
    assert first.tls_peer_subject is None
    await conn.close()
    await other.close()


async def test_a_call_two_loop_turns_after_an_answer_is_released_runs_once_it_is_written(echo: Running) -> None:
    """The leader's fsync (node/runtime/flusher.py `on_loop_after_answers`) relies on this: a parked handler whose
    future is set now has its answer written within two loop turns, so the blocking call made after them does not
    hold the answer back."""
    from pykraft.node.runtime.flusher import on_loop_after_answers

    conn = await Connection.open(echo.host, echo.port)
    request = asyncio.ensure_future(conn.request(request_bytes(OP_WAIT, 0), timeout_ms=5000))
    await until(lambda: len(echo.app.started) == 1, "the handler is parked")
    written_before_the_call: list[int] = []
    echo.app.gate(0).set()  # the same step releases the answer and asks for the blocking call
    await on_loop_after_answers(lambda: written_before_the_call.append(echo.server.stats.responses))
    assert written_before_the_call == [1]
    assert correlation_of(await request) == 0
    await conn.close()


async def test_a_server_bound_without_serving_refuses_connections_until_it_serves() -> None:
    """What a broker's client listener does until the broker caught up: its port is held, connections refused."""
    seen: list[str | None] = []

    async def handler(info, payload):  # the server's handler
        seen.append(info.listener_name)
        return bytes(payload)

    server = FrameServer(handler, listener_name="EXTERNAL")
    host, port = await server.start("127.0.0.1", 0, serving=False)
    try:
        assert not server.serving
        with pytest.raises(ConnectionRefusedError):
            await asyncio.open_connection(host, port)
        await server.start_serving()
        await server.start_serving()  # a second call changes nothing
        assert server.serving
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(struct.pack(">i", 4) + b"ping")
        assert await reader.readexactly(8) == struct.pack(">i", 4) + b"ping"
        writer.close()
        assert seen == ["EXTERNAL"]  # each request knows the listener it came in on
    finally:
        await server.close()
