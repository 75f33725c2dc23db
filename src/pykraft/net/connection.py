"""Pipelined client connections with Kafka framing and correlation ids.

A `Connection` sends requests as soon as they are built and matches responses by correlation id (the first
int32 of every response). Kafka servers answer strictly in request order, so like Kafka's NetworkClient we
check that each response answers the OLDEST outstanding request; anything else (an unknown or out-of-order
id, a frame too short to hold an id) means the stream can no longer be trusted, so the connection is closed
(Kafka throws IllegalStateException and disconnects) and counted in `Connection.unexpected_responses`.

A request that times out closes the connection (Kafka's NetworkClient disconnects on request timeout): that
request fails with `RequestTimeoutError`, every other pending one with `ConnectionClosedError`. A caller that
is cancelled while waiting does not disturb the connection: its response, when it comes, is dropped.

Built on `asyncio.BufferedProtocol` for the same reasons as the server (a large answer, a follower's 1 MB Fetch,
is read straight into its own buffer; one write per request, no stream buffer copies); see benchmarks/net.py.

With `sasl` (a SASL_PLAINTEXT or SASL_SSL listener), `open` authenticates before returning (sasl_client.py); a
refusal is a ConnectError that says so. When the server grants a session lifetime, the connection is due for
re-authentication at 85-95% of it (`reauth_due`, Kafka's client picks the same window): the pool re-authenticates
it in-band while nothing is in flight (`reauthenticate`).
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
import ssl
import struct
from collections import deque
from collections.abc import Callable
from typing import cast

from pykraft.net.errors import ConnectError, ConnectionClosedError, FrameTooLargeError, NetError, RequestTimeoutError
from pykraft.net.sasl_client import SaslAuthenticationError, SaslClientConfig, authenticate
from pykraft.protocol.errors import FrameTooLargeError as FrameSizeError
from pykraft.protocol.errors import InvalidFrameError
from pykraft.protocol.frame_reader import FrameReader
from pykraft.protocol.framing import DEFAULT_MAX_FRAME_SIZE

__all__ = ["Connection"]

_log = logging.getLogger("pykraft.net.client")
_SIZE = struct.Struct(">i")
_INT32_MAX = 2**31 - 1

# One outstanding request: correlation id, the future its caller awaits, its deadline (loop time), its timeout.
_Pending = tuple[int, "asyncio.Future[bytes | bytearray]", float, int]


class Connection:
    """One TCP (or TLS) connection to one peer, carrying any number of pipelined requests."""

    def __init__(self, host: str, port: int, max_frame_bytes: int) -> None:
        """Internal: use `Connection.open`."""
        self.host = host
        self.port = port
        self._loop = asyncio.get_running_loop()
        self._reader = FrameReader(max_frame_bytes)
        self._transport: asyncio.Transport | None = None
        self._pending: deque[_Pending] = deque()
        # One timer for the earliest deadline instead of one per request: arming and cancelling a timer per
        # request was a fifth of the pipelined cost (benchmarks/net.py). It is re-armed when it fires.
        self._deadline_timer: asyncio.TimerHandle | None = None
        self._deadline_at = math.inf
        self._out: list[bytes] = []  # frames written in this loop iteration, sent together (see request)
        self._next_id = 0
        self._failure: NetError | None = None  # set once the connection is unusable
        self._write_paused = False
        self._drain_waiters: list[asyncio.Future[None]] = []
        self._lost: asyncio.Future[None] = self._loop.create_future()
        self._close_listeners: list[Callable[[Connection], None]] = []
        self.unexpected_responses = 0
        self._sasl: SaslClientConfig | None = None
        self._reauth_at: float | None = None  # loop time from which the SASL session should be renewed

    @classmethod
    async def open(
        cls,
        host: str,
        port: int,
        *,
        ssl_context: ssl.SSLContext | None = None,
        connect_timeout_ms: int = 10_000,
        max_frame_bytes: int = DEFAULT_MAX_FRAME_SIZE,
        sasl: SaslClientConfig | None = None,
    ) -> Connection:
        """Connect (and finish the TLS handshake, then SASL) within `connect_timeout_ms`, or raise ConnectError."""
        conn = cls(host, port, max_frame_bytes)
        conn._sasl = sasl
        loop = conn._loop
        deadline = loop.time() + connect_timeout_ms / 1000
        try:
            async with asyncio.timeout_at(deadline):
                await loop.create_connection(lambda: _ClientProtocol(conn), host, port, ssl=ssl_context)
                if ssl_context is not None:
                    await conn._await_tls_verdict(deadline)
                if sasl is not None:
                    await conn._authenticate(connect_timeout_ms)
        except SaslAuthenticationError as exc:
            conn._abort_transport()
            raise ConnectError(f"SASL authentication with {host}:{port} failed: {exc}") from exc
        except TimeoutError as exc:
            conn._abort_transport()
            raise ConnectError(f"connect to {host}:{port} timed out after {connect_timeout_ms} ms") from exc
        except (OSError, ssl.SSLError) as exc:
            conn._abort_transport()
            raise ConnectError(f"connect to {host}:{port} failed: {exc}") from exc
        except NetError as exc:
            conn._abort_transport()
            raise ConnectError(f"connect to {host}:{port} failed: {exc}") from exc
        return conn

    @property
    def closed(self) -> bool:
        return self._failure is not None

    @property
    def reauth_due(self) -> bool:
        """Whether the SASL session should be renewed now (see the module docstring)."""
        return self._reauth_at is not None and self._loop.time() >= self._reauth_at

    async def _authenticate(self, timeout_ms: int) -> None:
        assert self._sasl is not None
        lifetime_ms = await authenticate(lambda build: self.request(build, timeout_ms=timeout_ms), self._sasl)
        self._reauth_at = (self._loop.time() + lifetime_ms / 1000 * random.uniform(0.85, 0.95)
                           if lifetime_ms > 0 else None)

    async def reauthenticate(self, timeout_ms: int = 10_000) -> None:
        """Renew the SASL session in-band; the connection closes (ConnectionClosedError) when that fails."""
        try:
            await self._authenticate(timeout_ms)
        except SaslAuthenticationError as exc:
            self._fail(ConnectionClosedError(f"SASL re-authentication with {self.host}:{self.port} failed: {exc}"))
            raise ConnectionClosedError(str(exc)) from exc

    @property
    def pending_count(self) -> int:
        return len(self._pending)

    async def request(self, build: Callable[[int], bytes], *, timeout_ms: int) -> bytes | bytearray:
        """Send `build(correlation_id)` and return the whole payload of its response."""
        future = self.send_now(build, timeout_ms=timeout_ms)
        if self._write_paused:
            await self._drained()
        return await future

    def send_now(self, build: Callable[[int], bytes], *, timeout_ms: int) -> asyncio.Future[bytes | bytearray]:
        """The synchronous half of `request`: the request is on its way (or queued for this loop iteration's
        send) when this returns; the future completes with the response's payload. No write back-pressure."""
        if self._failure is not None:
            raise ConnectionClosedError(f"connection to {self.host}:{self.port} is closed: {self._failure}")
        correlation_id = self._next_id
        self._next_id = 0 if correlation_id == _INT32_MAX else correlation_id + 1
        frame = _frame(build(correlation_id))  # before any bookkeeping: a failing build leaves no trace
        future: asyncio.Future[bytes | bytearray] = self._loop.create_future()
        deadline = self._loop.time() + timeout_ms / 1000
        if deadline < self._deadline_at:
            self._arm_deadline(deadline)
        idle = not self._pending
        self._pending.append((correlation_id, future, deadline, timeout_ms))
        if idle:
            # Nothing in flight: send now, latency matters (one request at a time, as the raft client does).
            assert self._transport is not None
            self._transport.write(frame)
        else:
            # Pipelining: gather the frames of this loop iteration into one send() instead of one per request.
            if not self._out:
                self._loop.call_soon(self._send_out)
            self._out.append(frame)
        return future

    async def close(self) -> None:
        """Close the connection; pending requests fail with ConnectionClosedError."""
        if self._failure is None:
            self._fail(ConnectionClosedError(f"connection to {self.host}:{self.port} closed locally"), graceful=True)
        if self._transport is not None:
            await asyncio.wait([self._lost], timeout=1.0)

    def add_close_listener(self, listener: Callable[[Connection], None]) -> None:
        """Call `listener(self)` once, when the connection becomes unusable (at once if it already is)."""
        if self._failure is not None:
            listener(self)
        else:
            self._close_listeners.append(listener)

    # ---- protocol callbacks (via _ClientProtocol) ----

    def _connection_made(self, transport: asyncio.Transport) -> None:
        self._transport = transport

    def _buffer_updated(self, nbytes: int) -> None:
        if self._failure is not None:
            return
        try:
            frames = self._reader.buffer_updated(nbytes)
        except FrameSizeError as exc:
            self._fail(FrameTooLargeError(f"response from {self.host}:{self.port}: {exc}",
                                          size=exc.size, limit=exc.limit))
            return
        except InvalidFrameError as exc:
            self._fail(ConnectionClosedError(f"invalid frame from {self.host}:{self.port}: {exc}"))
            return
        pending = self._pending
        for frame in frames:
            if len(frame) < 4:
                self._unexpected(f"a response of {len(frame)} bytes has no correlation id")
                return
            (correlation_id,) = _SIZE.unpack_from(frame)
            if not pending or pending[0][0] != correlation_id:
                expected = pending[0][0] if pending else None
                self._unexpected(f"response with correlation id {correlation_id}, expected {expected}")
                return
            future = pending.popleft()[1]
            if not future.done():  # a cancelled caller's response is dropped
                future.set_result(_as_bytes(frame))

    def _connection_lost(self, exc: Exception | None) -> None:
        if self._failure is None:
            reason = f"{type(exc).__name__}: {exc}" if exc is not None else "closed by peer"
            error = ConnectionClosedError(f"connection to {self.host}:{self.port} lost ({reason})")
            error.__cause__ = exc
            self._fail(error)
        self._wake_drain_waiters()
        if not self._lost.done():
            self._lost.set_result(None)

    def _pause_writing(self) -> None:
        self._write_paused = True

    def _resume_writing(self) -> None:
        self._write_paused = False
        self._wake_drain_waiters()

    # ---- internals ----

    def _send_out(self) -> None:
        out, self._out = self._out, []
        if self._failure is None and out:
            assert self._transport is not None
            self._transport.write(b"".join(out))

    def _arm_deadline(self, when: float) -> None:
        if self._deadline_timer is not None:
            self._deadline_timer.cancel()
        self._deadline_timer = self._loop.call_at(when, self._check_deadlines)
        self._deadline_at = when

    def _check_deadlines(self) -> None:
        """Time out the first expired request (closing the connection), or re-arm for the next deadline.
        Requests whose caller was cancelled never time out: their answer, when it comes, is dropped."""
        self._deadline_timer = None
        self._deadline_at = math.inf
        if self._failure is not None:
            return
        now = self._loop.time()
        earliest = math.inf
        for correlation_id, future, deadline, timeout_ms in self._pending:
            if future.done():
                continue
            if deadline <= now:
                future.set_exception(RequestTimeoutError(
                    f"request {correlation_id} to {self.host}:{self.port} got no response within {timeout_ms} ms"))
                self._fail(ConnectionClosedError(
                    f"connection to {self.host}:{self.port} closed after a request timeout"))
                return
            earliest = min(earliest, deadline)
        if earliest != math.inf:
            self._arm_deadline(earliest)

    def _unexpected(self, what: str) -> None:
        self.unexpected_responses += 1
        _log.warning("closing connection to %s:%s: %s", self.host, self.port, what)
        self._fail(ConnectionClosedError(f"connection to {self.host}:{self.port} closed: {what}"))

    def _fail(self, error: NetError, *, graceful: bool = False) -> None:
        """Mark the connection unusable, close the transport, fail the oldest pending request with `error`
        and the others with ConnectionClosedError (they did nothing wrong; they may be retried)."""
        self._failure = error
        pending, self._pending = self._pending, deque()
        others = error if isinstance(error, ConnectionClosedError) else ConnectionClosedError(
            f"connection to {self.host}:{self.port} closed: {error}")
        if self._deadline_timer is not None:
            self._deadline_timer.cancel()
            self._deadline_timer = None
        self._out = []
        for index, (_, future, _, _) in enumerate(pending):
            if not future.done():
                future.set_exception(error if index == 0 else others)
        if graceful and self._transport is not None:
            self._transport.close()
        else:
            self._abort_transport()
        self._wake_drain_waiters()
        listeners, self._close_listeners = self._close_listeners, []
        for listener in listeners:
            try:
                listener(self)
            except Exception:  # a listener's bug must not stop the others or the failing of requests
                _log.exception("close listener of connection to %s:%s failed", self.host, self.port)

    def _abort_transport(self) -> None:
        if self._transport is not None:
            self._transport.abort()

    async def _drained(self) -> None:
        waiter: asyncio.Future[None] = self._loop.create_future()
        self._drain_waiters.append(waiter)
        await waiter

    def _wake_drain_waiters(self) -> None:
        waiters, self._drain_waiters = self._drain_waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    async def _await_tls_verdict(self, deadline: float) -> None:
        """Under TLS 1.3 the client finishes its handshake before the server has checked the client's
        certificate; a rejection arrives afterwards as an alert. A server that accepts sends its session
        tickets right after that check, so wait for a ticket or the connection's loss (or give up waiting
        at the deadline and assume acceptance: a server may send no tickets). TLS 1.2 needs no wait."""
        assert self._transport is not None
        ssl_object = self._transport.get_extra_info("ssl_object")
        if ssl_object is None or ssl_object.version() != "TLSv1.3":
            return
        # No callback announces a ticket, so poll: finely for the first ~10 ms (a loopback verdict takes
        # about one round trip plus the server's certificate check), then ever more coarsely.
        polls = 0
        while True:
            if self._failure is not None:
                raise ConnectError(f"TLS handshake rejected by {self.host}:{self.port}: {self._failure}")
            session = ssl_object.session
            if session is not None and session.has_ticket:
                return
            delay = 0.00025 if polls < 40 else min(0.05, 0.00025 * 2 ** (polls - 40))
            if self._loop.time() + delay >= deadline:
                return
            polls += 1
            await asyncio.sleep(delay)


def _frame(payload: bytes | bytearray | memoryview) -> bytes:
    if not isinstance(payload, bytes | bytearray | memoryview):
        raise TypeError(f"a request builder returned {type(payload).__name__}, not bytes")
    size = len(payload) if isinstance(payload, bytes) else memoryview(payload).nbytes
    return _SIZE.pack(size) + payload


def _as_bytes(frame: memoryview) -> bytes | bytearray:
    """The frame's own buffer, without a copy when the frame is all of it (`FrameReader` gives every frame its
    own `bytes`, or for a large one its own `bytearray`, which nothing else holds or writes)."""
    owner = frame.obj
    if (type(owner) is bytes or type(owner) is bytearray) and frame.nbytes == len(owner):
        return owner
    return bytes(frame)


class _ClientProtocol(asyncio.BufferedProtocol):
    """Forwards the event loop's callbacks to its Connection (kept apart so Connection's API stays small)."""

    __slots__ = ("_conn",)

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport; not checked with isinstance: uvloop's transports do not subclass asyncio.Transport.
        self._conn._connection_made(cast(asyncio.Transport, transport))

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._conn._reader.get_buffer(sizehint)

    def buffer_updated(self, nbytes: int) -> None:
        self._conn._buffer_updated(nbytes)

    def eof_received(self) -> bool | None:
        return None  # close our side too; connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        self._conn._connection_lost(exc)

    def pause_writing(self) -> None:
        self._conn._pause_writing()

    def resume_writing(self) -> None:
        self._conn._resume_writing()
