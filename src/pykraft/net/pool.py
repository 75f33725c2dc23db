"""One lazily opened connection per address, with Kafka's reconnect backoff.

Kafka's `ClusterConnectionStates` keeps, per node, a count of failed attempts and the time of the last
disconnect; a node is "blacked out" until `reconnect.backoff.ms` has passed since then. The backoff grows
exponentially with the failures (`ExponentialBackoff(reconnect.backoff.ms, 2, reconnect.backoff.max.ms,
0.2)`): attempt n waits `min(max, base * 2**n * uniform(0.8, 1.2))` (n from 0), and a successful connect
resets the count. Any disconnect counts: a refused or timed-out connect, a request timeout, a peer that
closed. During the backoff `request` raises `ConnectError` at once so the caller's own retry logic (try
another voter, wait for the next poll) decides what to do, as KafkaRaftClient does with an unready node.
"""

from __future__ import annotations

import asyncio
import math
import random
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass

from pykraft.net.connection import Connection
from pykraft.net.errors import ConnectError, ConnectionClosedError
from pykraft.net.sasl_client import SaslClientConfig
from pykraft.protocol.framing import DEFAULT_MAX_FRAME_SIZE

__all__ = ["ConnectionPool", "reconnect_backoff_ms"]

_JITTER = 0.2


def reconnect_backoff_ms(failed_attempts: int, base_ms: int, max_ms: int, rng: random.Random) -> int:
    """Kafka's ExponentialBackoff(base, multiplier 2, max, jitter 0.2).backoff(failed_attempts)."""
    if max_ms <= base_ms or base_ms <= 0:
        return max(0, min(base_ms, max_ms))
    exp_max = math.log(max_ms / base_ms, 2)
    term = base_ms * 2 ** min(failed_attempts, exp_max)
    return min(max_ms, int(term * rng.uniform(1 - _JITTER, 1 + _JITTER)))


@dataclass(slots=True)
class _Endpoint:
    """Connection state of one address (mutable: it is the pool's bookkeeping, never shared)."""

    connection: Connection | None = None
    connecting: asyncio.Task[Connection] | None = None
    reauthenticating: asyncio.Task[None] | None = None
    failed_attempts: int = 0
    blocked_until_ms: float = 0.0


class ConnectionPool:
    """Opens connections on first use, reuses them, and backs off reconnecting after a failure."""

    def __init__(
        self,
        *,
        ssl_context: ssl.SSLContext | None = None,
        connect_timeout_ms: int = 10_000,
        reconnect_backoff_ms: int = 50,
        reconnect_backoff_max_ms: int = 1000,
        rng: random.Random | None = None,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_SIZE,
        clock_ms: Callable[[], float] | None = None,
        sasl: SaslClientConfig | None = None,
    ) -> None:
        self._ssl = ssl_context
        self._sasl = sasl
        self._connect_timeout_ms = connect_timeout_ms
        self._backoff_ms = reconnect_backoff_ms
        self._backoff_max_ms = reconnect_backoff_max_ms
        self._rng = rng if rng is not None else random.Random()
        self._max_frame_bytes = max_frame_bytes
        self._clock_ms = clock_ms if clock_ms is not None else _monotonic_ms
        self._endpoints: dict[tuple[str, int], _Endpoint] = {}
        self._closed = False

    async def request(self, host: str, port: int, build: Callable[[int], bytes], *,
                      timeout_ms: int) -> bytes | bytearray:
        """Send one request to `host:port` over the pooled connection; see `Connection.request`.

        Raises ConnectError at once while the address is in its reconnect backoff or when connecting fails.
        """
        connection = await self._connection_for(host, port)
        return await connection.request(build, timeout_ms=timeout_ms)

    def send_now(self, host: str, port: int, build: Callable[[int], bytes], *,
                 timeout_ms: int) -> asyncio.Future[bytes | bytearray] | None:
        """`request` without waiting a loop turn: sent at once over a live connection to `host:port` (see
        `Connection.send_now`); None when there is none (then `request` connects). Raises what `build` raises."""
        endpoint = self._endpoints.get((host, port))
        if self._closed or endpoint is None or endpoint.connection is None or endpoint.connection.closed:
            return None
        if endpoint.connection.reauth_due:
            return None  # `request` renews the SASL session first
        return endpoint.connection.send_now(build, timeout_ms=timeout_ms)

    def connection_delay_ms(self, host: str, port: int) -> float:
        """How long before a connect attempt to `host:port` is allowed (0 if now or already connected)."""
        endpoint = self._endpoints.get((host, port))
        if endpoint is None or (endpoint.connection is not None and not endpoint.connection.closed):
            return 0.0
        return max(0.0, endpoint.blocked_until_ms - self._clock_ms())

    def is_connected(self, host: str, port: int) -> bool:
        endpoint = self._endpoints.get((host, port))
        return endpoint is not None and endpoint.connection is not None and not endpoint.connection.closed

    async def close(self) -> None:
        """Close every connection; later requests raise ConnectionClosedError."""
        self._closed = True
        endpoints = list(self._endpoints.values())
        self._endpoints.clear()
        for endpoint in endpoints:
            if endpoint.connecting is not None:
                endpoint.connecting.cancel()
        for endpoint in endpoints:
            if endpoint.connection is not None:
                await endpoint.connection.close()

    async def _connection_for(self, host: str, port: int) -> Connection:
        if self._closed:
            raise ConnectionClosedError("connection pool is closed")
        key = (host, port)
        endpoint = self._endpoints.get(key)
        if endpoint is None:
            endpoint = self._endpoints[key] = _Endpoint()
        connection = endpoint.connection
        if connection is not None and not connection.closed:
            if connection.reauth_due and (endpoint.reauthenticating is not None or not connection.pending_count):
                await self._reauthenticate(endpoint, connection)
            return connection
        if endpoint.connecting is None:
            wait_ms = endpoint.blocked_until_ms - self._clock_ms()
            if wait_ms > 0:
                raise ConnectError(f"{host}:{port} is in reconnect backoff for another {wait_ms:.0f} ms")
            endpoint.connecting = asyncio.get_running_loop().create_task(self._connect(key, endpoint))
        connecting = endpoint.connecting
        try:
            # Shielded: one caller giving up (cancelled) must not abort the connect the others are waiting on.
            return await asyncio.shield(connecting)
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if connecting.cancelled() and current is not None and current.cancelling() == 0:
                raise ConnectionClosedError("connection pool closed while connecting") from None
            raise

    async def _reauthenticate(self, endpoint: _Endpoint, connection: Connection) -> None:
        """One in-band SASL re-authentication shared by every caller that finds the session due (nothing else is
        sent on the connection meanwhile: the callers wait here, and `send_now` declines)."""
        if endpoint.reauthenticating is None:
            endpoint.reauthenticating = asyncio.get_running_loop().create_task(
                connection.reauthenticate(self._connect_timeout_ms))
            endpoint.reauthenticating.add_done_callback(lambda _task: setattr(endpoint, "reauthenticating", None))
        await asyncio.shield(endpoint.reauthenticating)

    async def _connect(self, key: tuple[str, int], endpoint: _Endpoint) -> Connection:
        try:
            connection = await Connection.open(
                key[0], key[1], ssl_context=self._ssl, connect_timeout_ms=self._connect_timeout_ms,
                max_frame_bytes=self._max_frame_bytes, sasl=self._sasl)
        except ConnectError:
            self._disconnected(endpoint)
            raise
        finally:
            endpoint.connecting = None
        if self._closed or self._endpoints.get(key) is not endpoint:
            await connection.close()
            raise ConnectionClosedError("connection pool is closed")
        endpoint.connection = connection
        endpoint.failed_attempts = 0
        connection.add_close_listener(lambda _conn: self._on_lost(endpoint, connection))
        return connection

    def _on_lost(self, endpoint: _Endpoint, connection: Connection) -> None:
        if endpoint.connection is connection:
            endpoint.connection = None
            self._disconnected(endpoint)

    def _disconnected(self, endpoint: _Endpoint) -> None:
        delay = reconnect_backoff_ms(endpoint.failed_attempts, self._backoff_ms, self._backoff_max_ms, self._rng)
        endpoint.failed_attempts += 1
        endpoint.blocked_until_ms = self._clock_ms() + delay


def _monotonic_ms() -> float:
    return time.monotonic() * 1000
