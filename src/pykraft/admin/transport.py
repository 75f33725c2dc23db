"""How the admin client reaches a node: a one-method protocol, so tests drive the client with a fake.

`Transport.request(host, port, build, timeout_ms=)` sends `build(correlation_id)` (a request without its size
prefix) and returns the response payload. It raises one of three errors, which the client's retry policy
tells apart because they mean different things for a non-idempotent request (a voter change):

- `TransportConnectError`: nothing was sent (refused, unreachable, TLS handshake failed);
- `TransportTimeoutError`: sent, no answer in time: the peer may or may not have acted on it;
- `TransportClosedError`: the connection broke while the request was out: same uncertainty.

`default_transport()` uses `pykraft.net.client.ConnectionPool` (pooled, pipelined connections with Kafka's reconnect
backoff). `DirectTransport`, one asyncio connection per request, is kept as the fallback when the net package is
not importable and as a second, independent implementation for tests.
"""

from __future__ import annotations

import asyncio
import errno
import itertools
import ssl
import struct
from collections.abc import Callable
from typing import Protocol

from pykraft.protocol.framing import DEFAULT_MAX_FRAME_SIZE

__all__ = [
    "DirectTransport",
    "Transport",
    "TransportClosedError",
    "TransportConnectError",
    "TransportError",
    "TransportTimeoutError",
    "default_transport",
]

_SIZE = struct.Struct(">i")
BuildRequest = Callable[[int], bytes]


class TransportError(Exception):
    def __init__(self, host: str, port: int, reason: str) -> None:
        self.host, self.port, self.reason = host, port, reason
        super().__init__(f"{host}:{port}: {reason}")


class TransportConnectError(TransportError):
    """Could not connect; the request was not sent."""


class TransportTimeoutError(TransportError):
    """The request was sent and no response came in time."""


class TransportClosedError(TransportError):
    """The connection failed with the request possibly delivered, or the answer was unusable."""


class Transport(Protocol):
    async def request(self, host: str, port: int, build: BuildRequest, *, timeout_ms: int) -> bytes: ...

    async def close(self) -> None: ...


def reason_of(exc: BaseException) -> str:
    """A short lower-case reason for a socket error, as the CLI prints it ("connection refused")."""
    if isinstance(exc, ConnectionRefusedError) or getattr(exc, "errno", None) == errno.ECONNREFUSED:
        return "connection refused"
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError)):
        return "timed out"
    if isinstance(exc, ssl.SSLError):
        return f"TLS error: {exc.reason or exc}"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    return str(exc) or type(exc).__name__


class DirectTransport:
    """One connection per request: connect, write one frame, read one frame, close."""

    def __init__(self, ssl_context: ssl.SSLContext | None = None, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE):
        self._ssl = ssl_context
        self._max = max_frame_size
        self._ids = itertools.count(1)

    async def request(self, host: str, port: int, build: BuildRequest, *, timeout_ms: int) -> bytes:
        timeout = max(timeout_ms, 1) / 1000
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(host, port, ssl=self._ssl, server_hostname=host if self._ssl else None),
                timeout)
        except (OSError, asyncio.TimeoutError, ssl.SSLError) as exc:
            raise TransportConnectError(host, port, reason_of(exc)) from None
        try:
            payload = build(next(self._ids))
            writer.write(_SIZE.pack(len(payload)) + payload)
            return await asyncio.wait_for(self._read_frame(reader, host, port), timeout)
        except asyncio.TimeoutError:
            raise TransportTimeoutError(host, port, "no response in time") from None
        except (OSError, asyncio.IncompleteReadError, ssl.SSLError) as exc:
            raise TransportClosedError(host, port, reason_of(exc)) from None
        finally:
            writer.close()

    async def _read_frame(self, reader: asyncio.StreamReader, host: str, port: int) -> bytes:
        (size,) = _SIZE.unpack(await reader.readexactly(_SIZE.size))
        if not 0 <= size <= self._max:
            raise TransportClosedError(host, port, f"invalid response size {size}")
        return await reader.readexactly(size)

    async def close(self) -> None:
        return None


class _PoolTransport:
    """Adapter from `pykraft.net.client.ConnectionPool` to this module's error types."""

    def __init__(self, pool: object) -> None:
        self._pool = pool
        self._reasons: dict[tuple[str, int], str] = {}  # the last real connect failure of each address

    async def request(self, host: str, port: int, build: BuildRequest, *, timeout_ms: int) -> bytes:
        from pykraft.net import errors as net

        # The pool refuses at once while an address is in its reconnect backoff. Waiting that out (within our time
        # budget) avoids spending attempts on refusals, and a refusal reports the last real reason ("connection
        # refused") rather than the backoff itself.
        delay_ms = self._pool.connection_delay_ms(host, port)  # type: ignore[attr-defined]
        if delay_ms > timeout_ms:
            raise TransportConnectError(host, port, self._reasons.get((host, port), "in reconnect backoff"))
        if delay_ms > 0:
            await asyncio.sleep(delay_ms / 1000)
        try:
            response = await self._pool.request(host, port, build, timeout_ms=timeout_ms)  # type: ignore[attr-defined]
        except net.ConnectError as exc:
            reason = _net_reason(exc)
            if exc.__cause__ is None and (host, port) in self._reasons:  # a backoff refusal: keep the real reason
                reason = self._reasons[(host, port)]
            self._reasons[(host, port)] = reason
            raise TransportConnectError(host, port, reason) from None
        except net.RequestTimeoutError:
            raise TransportTimeoutError(host, port, "no response in time") from None
        except net.NetError as exc:  # closed, reset, oversized frame: the request may have arrived
            raise TransportClosedError(host, port, _net_reason(exc)) from None
        return bytes(response)

    async def close(self) -> None:
        await self._pool.close()  # type: ignore[attr-defined]


def _net_reason(exc: BaseException) -> str:
    cause = exc.__cause__ or exc.__context__
    return reason_of(cause) if isinstance(cause, OSError) else (str(exc) or type(exc).__name__)


def default_transport(ssl_context: ssl.SSLContext | None = None, sasl: object | None = None) -> Transport:
    """The pooled transport; with `sasl` (a net.sasl_client.SaslClientConfig) every connection authenticates."""
    try:
        from pykraft.net.client import ConnectionPool  # written concurrently; may not exist yet
    except ImportError:
        return DirectTransport(ssl_context)
    return _PoolTransport(ConnectionPool(ssl_context=ssl_context, sasl=sasl))  # type: ignore[arg-type]
