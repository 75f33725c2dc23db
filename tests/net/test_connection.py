"""Connection: correlation ids, timeouts, peers that close, misbehave or answer too much."""

from __future__ import annotations

import asyncio
import struct

import pytest

from pykraft.net.client import Connection
from pykraft.net.errors import (
    ConnectError,
    ConnectionClosedError,
    FrameTooLargeError,
    NetError,
    RequestTimeoutError,
)

from pykraft.net.server import FrameServer

from .conftest import OP_BAD_ID, OP_ECHO, OP_HANG, OP_WAIT, EchoApp, Running, correlation_of, request_bytes, until

pytestmark = pytest.mark.asyncio


async def test_correlation_ids_count_up_and_the_whole_response_is_returned(echo: Running) -> None:
    conn = await Connection.open(echo.host, echo.port)
    seen: list[int] = []

    def build(correlation_id: int) -> bytes:
        seen.append(correlation_id)
        return struct.pack(">iBB", correlation_id, OP_ECHO, 5) + b"tail"

    first = await conn.request(build, timeout_ms=5000)
    second = await conn.request(build, timeout_ms=5000)
    assert seen == [0, 1]
    assert first == struct.pack(">iBB", 0, OP_ECHO, 5) + b"tail"
    assert correlation_of(second) == 1
    await conn.close()


async def test_correlation_id_wraps_to_zero_after_int32_max(echo: Running) -> None:
    conn = await Connection.open(echo.host, echo.port)
    conn._next_id = 2**31 - 1  # white-box: reaching the wrap by counting would take billions of requests
    assert correlation_of(await conn.request(request_bytes(OP_ECHO), timeout_ms=5000)) == 2**31 - 1
    assert correlation_of(await conn.request(request_bytes(OP_ECHO), timeout_ms=5000)) == 0
    await conn.close()


async def test_timeout_closes_the_connection_and_fails_the_other_pending_requests(echo: Running) -> None:
    conn = await Connection.open(echo.host, echo.port)
    hanging = asyncio.ensure_future(conn.request(request_bytes(OP_HANG), timeout_ms=20))
    behind = asyncio.ensure_future(conn.request(request_bytes(OP_WAIT, 1), timeout_ms=60_000))
    with pytest.raises(RequestTimeoutError):
        await hanging
    with pytest.raises(ConnectionClosedError):
        await behind
    assert conn.closed
    assert conn.pending_count == 0
    await until(lambda: echo.server.connection_count == 0, "the server sees the connection go")
    with pytest.raises(ConnectionClosedError):
        await conn.request(request_bytes(OP_ECHO), timeout_ms=5000)


async def test_a_later_request_with_a_shorter_timeout_times_out_first(echo: Running) -> None:
    conn = await Connection.open(echo.host, echo.port)
    patient = asyncio.ensure_future(conn.request(request_bytes(OP_HANG), timeout_ms=60_000))
    hasty = asyncio.ensure_future(conn.request(request_bytes(OP_HANG), timeout_ms=20))
    with pytest.raises(RequestTimeoutError, match="request 1 "):
        await hasty
    with pytest.raises(ConnectionClosedError):
        await patient


async def test_deadline_timer_firing_after_its_request_was_answered_rearms_for_the_next(echo: Running) -> None:
    conn = await Connection.open(echo.host, echo.port)
    assert correlation_of(await conn.request(request_bytes(OP_ECHO), timeout_ms=60_000)) == 0
    parked = asyncio.ensure_future(conn.request(request_bytes(OP_WAIT, 1), timeout_ms=120_000))
    await until(lambda: echo.app.started == [0, 1])
    # White-box: fire the timer now instead of waiting a minute for the first request's deadline.
    conn._check_deadlines()
    assert not conn.closed, "an answered request never times out"
    assert conn._deadline_at > asyncio.get_running_loop().time() + 100, "re-armed for the parked request"
    echo.app.gate(1).set()
    assert correlation_of(await parked) == 1
    await conn.close()


async def test_server_closing_mid_request_raises_connection_closed(echo: Running) -> None:
    conn = await Connection.open(echo.host, echo.port)
    parked = asyncio.ensure_future(conn.request(request_bytes(OP_WAIT, 3), timeout_ms=60_000))
    await until(lambda: echo.app.started == [0])
    await echo.server.close()
    with pytest.raises(ConnectionClosedError):
        await parked
    assert conn.closed


async def test_cancelled_caller_does_not_disturb_the_connection(echo: Running) -> None:
    conn = await Connection.open(echo.host, echo.port)
    abandoned = asyncio.ensure_future(conn.request(request_bytes(OP_WAIT, 1), timeout_ms=60_000))
    await until(lambda: echo.app.started == [0])
    abandoned.cancel()
    later = asyncio.ensure_future(conn.request(request_bytes(OP_ECHO), timeout_ms=60_000))
    echo.app.gate(1).set()
    assert correlation_of(await later) == 1
    assert not conn.closed
    assert conn.unexpected_responses == 0
    await conn.close()


async def test_unexpected_correlation_id_closes_the_connection(echo: Running) -> None:
    conn = await Connection.open(echo.host, echo.port)
    wrong = asyncio.ensure_future(conn.request(request_bytes(OP_BAD_ID), timeout_ms=60_000))
    with pytest.raises(ConnectionClosedError, match="correlation id 1000"):
        await wrong
    assert conn.unexpected_responses == 1
    assert conn.closed


async def _one_shot_server(response_frame: bytes) -> tuple[asyncio.Server, int]:
    """A raw server that reads one request frame and writes `response_frame` bytes back."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        size = struct.unpack(">i", await reader.readexactly(4))[0]
        await reader.readexactly(size)
        writer.write(response_frame)
        await writer.drain()
        await reader.read()  # hold the connection until the client drops it
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


@pytest.mark.parametrize(
    ("response", "error"),
    [
        (struct.pack(">i", 1 << 20) + b"\x00" * 16, FrameTooLargeError),
        (struct.pack(">i", -5), ConnectionClosedError),
        (struct.pack(">i", 2) + b"\x00\x00", ConnectionClosedError),  # too short for a correlation id
    ],
    ids=["oversize", "negative", "short"],
)
async def test_bad_response_frames_close_the_connection(response: bytes, error: type[NetError]) -> None:
    server, port = await _one_shot_server(response)
    try:
        conn = await Connection.open("127.0.0.1", port, max_frame_bytes=1024)
        with pytest.raises(error):
            await conn.request(request_bytes(OP_ECHO), timeout_ms=60_000)
        assert conn.closed
    finally:
        server.close()
        await server.wait_closed()


async def test_refused_connect_raises_connect_error(echo: Running) -> None:
    port = echo.port
    await echo.server.close()
    with pytest.raises(ConnectError):
        await Connection.open("127.0.0.1", port)


async def test_close_fails_pending_requests_and_is_idempotent(echo: Running) -> None:
    conn = await Connection.open(echo.host, echo.port)
    parked = asyncio.ensure_future(conn.request(request_bytes(OP_WAIT, 1), timeout_ms=60_000))
    await until(lambda: echo.app.started == [0])
    await conn.close()
    await conn.close()
    with pytest.raises(ConnectionClosedError):
        await parked
    await until(lambda: echo.server.connection_count == 0)


async def test_close_listener_runs_once_on_loss(echo: Running) -> None:
    conn = await Connection.open(echo.host, echo.port)
    calls: list[Connection] = []
    conn.add_close_listener(calls.append)
    await echo.server.close()
    await until(lambda: conn.closed)
    await conn.close()
    assert calls == [conn]
    late: list[Connection] = []
    conn.add_close_listener(late.append)
    assert late == [conn]


async def test_client_stops_at_the_write_buffer_limit_until_the_server_reads_again() -> None:
    app = EchoApp()
    server = FrameServer(app, max_in_flight=1, max_frame_bytes=4 << 20)
    host, port = await server.start("127.0.0.1", 0)
    try:
        conn = await Connection.open(host, port)
        big = b"y" * (2 << 20)
        # The first request parks the server's only slot, so it stops reading; 7 more of 2 MiB fill the
        # socket buffers and then the client transport's buffer.
        requests = [asyncio.ensure_future(conn.request(request_bytes(OP_WAIT if i == 0 else OP_ECHO, 0, big),
                                                       timeout_ms=60_000)) for i in range(8)]
        await until(lambda: conn._write_paused, "the client transport reports its buffer full")
        assert not any(task.done() for task in requests)
        app.gate(0).set()
        results = await asyncio.gather(*requests)
        assert [correlation_of(r) for r in results] == list(range(8))
        assert all(len(r) == 6 + len(big) for r in results)
        await conn.close()
    finally:
        await server.close()


async def test_a_failing_request_builder_leaves_the_connection_usable(echo: Running) -> None:
    conn = await Connection.open(echo.host, echo.port)

    def broken(correlation_id: int) -> bytes:
        raise ValueError("cannot encode")

    with pytest.raises(ValueError):
        await conn.request(broken, timeout_ms=5000)
    with pytest.raises(TypeError):
        await conn.request(lambda cid: "text", timeout_ms=5000)  # type: ignore[arg-type,return-value]
    assert conn.pending_count == 0
    assert correlation_of(await conn.request(request_bytes(OP_ECHO), timeout_ms=5000)) == 2
    await conn.close()
