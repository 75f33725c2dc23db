"""ConnectionPool: lazy connections, reuse, reconnect after a restart, Kafka's exponential reconnect backoff.

The pool's clock is injected, so backoff is checked by behaviour (fail fast until the fake clock passes the
backoff) and never by measuring durations.
"""

from __future__ import annotations

import asyncio
import random

import pytest

from pykraft.net.client import ConnectionPool
from pykraft.net.errors import ConnectError, ConnectionClosedError, RequestTimeoutError
from pykraft.net.pool import reconnect_backoff_ms
from pykraft.net.server import FrameServer

from .conftest import OP_ECHO, OP_HANG, EchoApp, Running, correlation_of, request_bytes, until


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_backoff_grows_exponentially_with_20_percent_jitter_up_to_the_max() -> None:
    rng = random.Random(7)
    for attempt, base in enumerate([50, 100, 200, 400, 800]):
        for _ in range(200):
            value = reconnect_backoff_ms(attempt, 50, 1000, rng)
            assert int(base * 0.8) <= value <= min(1000, base * 1.2), (attempt, value)
    for attempt in (5, 6, 30, 1000):
        values = {reconnect_backoff_ms(attempt, 50, 1000, rng) for _ in range(200)}
        assert max(values) == 1000, "the cap is reached and never exceeded"
        assert min(values) >= 800
    assert reconnect_backoff_ms(3, 50, 50, rng) == 50, "no growth when max == base"


def test_jitter_spreads_values() -> None:
    rng = random.Random(1)
    values = {reconnect_backoff_ms(0, 50, 1000, rng) for _ in range(100)}
    assert len(values) > 5
    assert values <= set(range(40, 61))


@pytest.mark.asyncio
async def test_requests_share_one_lazily_opened_connection(echo: Running) -> None:
    pool = ConnectionPool()
    assert not pool.is_connected(echo.host, echo.port)
    results = await asyncio.gather(*[pool.request(echo.host, echo.port, request_bytes(OP_ECHO), timeout_ms=5000)
                                     for _ in range(20)])
    assert sorted(correlation_of(r) for r in results) == list(range(20))
    assert echo.server.stats.connections_accepted == 1
    assert pool.is_connected(echo.host, echo.port)
    await pool.close()
    with pytest.raises(ConnectionClosedError):
        await pool.request(echo.host, echo.port, request_bytes(OP_ECHO), timeout_ms=5000)


@pytest.mark.asyncio
async def test_reconnects_after_server_restart_on_the_same_port_with_backoff() -> None:
    clock = FakeClock()
    pool = ConnectionPool(clock_ms=clock, rng=random.Random(3))
    app = EchoApp()
    server = FrameServer(app)
    host, port = await server.start("127.0.0.1", 0)
    assert correlation_of(await pool.request(host, port, request_bytes(OP_ECHO), timeout_ms=5000)) == 0

    await server.close()
    await until(lambda: not pool.is_connected(host, port), "the pool notices the lost connection")
    delay = pool.connection_delay_ms(host, port)
    assert 40 <= delay <= 60, "first backoff after a lost connection is reconnect.backoff.ms +-20%"
    with pytest.raises(ConnectError, match="backoff"):
        await pool.request(host, port, request_bytes(OP_ECHO), timeout_ms=5000)

    clock.now += delay
    with pytest.raises(ConnectError, match="failed"):  # a real attempt: the port is closed, refused
        await pool.request(host, port, request_bytes(OP_ECHO), timeout_ms=5000)
    second = pool.connection_delay_ms(host, port)
    assert 80 <= second <= 120, "the second failure doubles the backoff"

    server = FrameServer(app)
    await server.start(host, port)
    try:
        with pytest.raises(ConnectError, match="backoff"):  # server is back, but the backoff still holds
            await pool.request(host, port, request_bytes(OP_ECHO), timeout_ms=5000)
        clock.now += second
        response = await pool.request(host, port, request_bytes(OP_ECHO), timeout_ms=5000)
        assert correlation_of(response) == 0, "a new connection starts its correlation ids afresh"
        assert pool.connection_delay_ms(host, port) == 0
    finally:
        await pool.close()
        await server.close()


@pytest.mark.asyncio
async def test_success_resets_the_backoff() -> None:
    clock = FakeClock()
    pool = ConnectionPool(clock_ms=clock, rng=random.Random(5))
    app = EchoApp()
    server = FrameServer(app)
    host, port = await server.start("127.0.0.1", 0)
    try:
        for _ in range(3):  # three lost connections in a row, each after a successful connect
            await pool.request(host, port, request_bytes(OP_ECHO), timeout_ms=5000)
            await server.close()
            await until(lambda: not pool.is_connected(host, port))
            assert 40 <= pool.connection_delay_ms(host, port) <= 60, "the count restarts after every success"
            clock.now += 1000
            server = FrameServer(app)
            await server.start(host, port)
    finally:
        await pool.close()
        await server.close()


@pytest.mark.asyncio
async def test_request_timeout_drops_the_connection_and_backs_off(echo: Running) -> None:
    clock = FakeClock()
    pool = ConnectionPool(clock_ms=clock)
    with pytest.raises(RequestTimeoutError):
        await pool.request(echo.host, echo.port, request_bytes(OP_HANG), timeout_ms=10)
    assert not pool.is_connected(echo.host, echo.port)
    with pytest.raises(ConnectError, match="backoff"):
        await pool.request(echo.host, echo.port, request_bytes(OP_ECHO), timeout_ms=5000)
    clock.now += 100
    assert correlation_of(await pool.request(echo.host, echo.port, request_bytes(OP_ECHO), timeout_ms=5000)) == 0
    assert echo.server.stats.connections_accepted == 2
    await pool.close()


@pytest.mark.asyncio
async def test_cancelled_caller_does_not_abort_a_shared_connect(echo: Running) -> None:
    pool = ConnectionPool()
    first = asyncio.ensure_future(pool.request(echo.host, echo.port, request_bytes(OP_ECHO), timeout_ms=5000))
    second = asyncio.ensure_future(pool.request(echo.host, echo.port, request_bytes(OP_ECHO), timeout_ms=5000))
    await asyncio.sleep(0)
    first.cancel()
    assert correlation_of(await second) in (0, 1)
    assert echo.server.stats.connections_accepted == 1
    await pool.close()


@pytest.mark.asyncio
async def test_send_now_uses_a_live_connection_only(echo: Running) -> None:
    pool = ConnectionPool()
    assert pool.send_now(echo.host, echo.port, request_bytes(OP_ECHO), timeout_ms=5000) is None  # never connects
    assert not pool.is_connected(echo.host, echo.port)
    first = await pool.request(echo.host, echo.port, request_bytes(OP_ECHO), timeout_ms=5000)
    futures = [pool.send_now(echo.host, echo.port, request_bytes(OP_ECHO), timeout_ms=5000) for _ in range(3)]
    assert all(isinstance(f, asyncio.Future) for f in futures)
    answers = await asyncio.gather(*futures)  # type: ignore[arg-type]
    assert [correlation_of(a) for a in answers] == [correlation_of(first) + i for i in (1, 2, 3)]
    assert echo.server.stats.connections_accepted == 1
    await pool.close()
    assert pool.send_now(echo.host, echo.port, request_bytes(OP_ECHO), timeout_ms=5000) is None
