"""The floor of one durable 3-voter commit on this machine: the same hops and fsyncs as pykraft's, with no protocol.

Four bare processes with blocking sockets (TCP_NODELAY) and 100-byte commands, one writer, sequential:
client -> leader (appends to its file, forwards to both followers, fdatasyncs its own file) -> followers (append,
fdatasync, one-byte ack) -> leader (waits for one follower's ack: with its own fsync done, a majority of 3) -> client.
That is the path of a linger-0 pykraft commit (two loopback round trips, the leader's and a follower's fdatasync, four
processes sharing the cores), minus everything a real system adds: framing, decoding, validation, a state machine,
an event loop. `benchmarks/quorum.py` times it in the same run, end to end and inside the leader (command read ->
answer sent, as PySyncObj's figure), so the latency rows can be read against what this machine allows that day.

`event_loop_floor` is the same path with each server process on the event loop pykraft's nodes run (uvloop, else
asyncio's own) and asyncio protocols, the leader fsyncing on its loop after the forwards are written, as pykraft's
leader does: what a Python node built on asyncio could reach here. Beside the bare floor it tells the two costs
apart: what the event loop adds to a commit, and what pykraft's own layers add above it.
"""

from __future__ import annotations

import asyncio
import os
import select
import socket
import time
from collections.abc import Callable, Coroutine
from multiprocessing import get_context
from typing import Any

from bare_processes import leader_and_followers

COMMAND = 100


def _no_delay(sock: socket.socket) -> socket.socket:
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def _receive(sock: socket.socket, size: int) -> bytes | None:
    data = b""
    while len(data) < size:
        try:
            chunk = sock.recv(size - len(data))
        except ConnectionResetError:  # the leader closed with the other follower's acks unread: the run is over
            return None
        if not chunk:
            return None
        data += chunk
    return data


def _follower(listener: socket.socket, path: str) -> None:
    leader, _ = listener.accept()
    _no_delay(leader)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    while (command := _receive(leader, COMMAND)) is not None:
        os.write(fd, command)
        os.fdatasync(fd)
        leader.sendall(b"k")
    os.close(fd)


def _leader(listener: socket.socket, follower_ports: list[int], path: str, report) -> None:
    followers = [_no_delay(socket.create_connection(("127.0.0.1", port))) for port in follower_ports]
    client, _ = listener.accept()
    _no_delay(client)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    acked = [0] * len(followers)
    inside: list[float] = []
    while (command := _receive(client, COMMAND)) is not None:
        started = time.perf_counter()
        os.write(fd, command)
        for follower in followers:
            follower.sendall(command)
        os.fdatasync(fd)  # while the followers write and fsync theirs
        wanted = len(inside) + 1
        while max(acked) < wanted:
            ready, _, _ = select.select(followers, [], [])
            for follower in ready:
                acked[followers.index(follower)] += len(follower.recv(64))
        client.sendall(b"k")
        inside.append((time.perf_counter() - started) * 1000)
    os.close(fd)
    for follower in followers:
        follower.close()
    report.send(inside)


def commit_floor(directory: str, commits: int) -> tuple[list[float], list[float]]:
    """(end-to-end ms, inside-the-leader ms) of `commits` sequential durable commits."""
    return _drive(directory, "floor", _leader, _follower, commits)


def _drive(directory: str, name: str, leader: Callable[..., None], follower: Callable[..., None],
           commits: int) -> tuple[list[float], list[float]]:
    """The client: `commits` sequential commands through `leader`, each timed until its one-byte answer."""
    receiver, sender = get_context("fork").Pipe(duplex=False)
    end_to_end: list[float] = []
    with leader_and_followers(directory, name, leader, follower, leader_args=(sender,)) as address:
        client = _no_delay(socket.create_connection(address))  # queued until an event-loop leader accepts
        command = b"v" * COMMAND
        for _ in range(commits):
            started = time.perf_counter()
            client.sendall(command)
            _receive(client, 1)
            end_to_end.append((time.perf_counter() - started) * 1000)
        client.close()
        inside = receiver.recv()
    return end_to_end, inside


# ---- the same path on an event loop ------------------------------------------------------------------------------
def _run_on_pykrafts_loop(main: Callable[[], Coroutine[Any, Any, None]]) -> None:
    try:
        import uvloop
    except ImportError:  # the loop node/serve.py falls back to
        asyncio.run(main())
        return
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(main())


class _Commands(asyncio.Protocol):
    """Splits the byte stream into COMMAND-sized commands and hands each to `on_command`; resolves `closed` at EOF."""

    def __init__(self, on_command: Callable[[asyncio.Transport, bytes], None], closed: asyncio.Future[None]) -> None:
        self._on_command = on_command
        self._closed = closed
        self._pending = b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        _no_delay(transport.get_extra_info("socket"))

    def data_received(self, data: bytes) -> None:
        self._pending += data
        while len(self._pending) >= COMMAND:
            command, self._pending = self._pending[:COMMAND], self._pending[COMMAND:]
            self._on_command(self.transport, command)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self._closed.done():
            self._closed.set_result(None)


def _loop_follower(listener: socket.socket, path: str) -> None:
    async def serve() -> None:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)

        def append(transport: asyncio.Transport, command: bytes) -> None:
            os.write(fd, command)
            os.fdatasync(fd)
            transport.write(b"k")

        loop = asyncio.get_running_loop()
        closed = loop.create_future()
        listener.setblocking(False)
        server = await loop.create_server(lambda: _Commands(append, closed), sock=listener)
        await closed
        server.close()
        os.close(fd)

    _run_on_pykrafts_loop(serve)


class _Acks(asyncio.Protocol):
    """A follower's one-byte acks, counted."""

    def __init__(self, on_ack: Callable[[], None]) -> None:
        self.count = 0
        self._on_ack = on_ack

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        _no_delay(transport.get_extra_info("socket"))

    def data_received(self, data: bytes) -> None:
        self.count += len(data)
        self._on_ack()


class _LoopLeader:
    """The leader's side on the loop: appends each client command, forwards it, fsyncs it two turns later (once the
    forwards are on the wire, as pykraft's leader: flusher.on_loop_after_answers), and answers the client when its
    own fsync and one follower's ack cover the command (a majority of 3)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, fd: int) -> None:
        self._loop = loop
        self._fd = fd
        self.followers: list[asyncio.Transport] = []
        self.acks: list[_Acks] = []
        self.inside: list[float] = []
        self._client: asyncio.Transport | None = None
        self._appended = self._synced = self._answered = 0
        self._started = 0.0

    def append(self, client: asyncio.Transport, command: bytes) -> None:
        self._started = time.perf_counter()
        self._client = client
        os.write(self._fd, command)
        self._appended += 1
        for follower in self.followers:
            follower.write(command)
        self._loop.call_soon(self._loop.call_soon, self._sync, self._appended)

    def _sync(self, through: int) -> None:
        os.fdatasync(self._fd)
        self._synced = max(self._synced, through)
        self.maybe_answer()

    def maybe_answer(self) -> None:
        wanted = self._answered + 1
        if self._client is not None and min(self._appended, self._synced, max(a.count for a in self.acks)) >= wanted:
            self._answered = wanted
            self._client.write(b"k")
            self.inside.append((time.perf_counter() - self._started) * 1000)


def _loop_leader(listener: socket.socket, follower_ports: list[int], path: str, report) -> None:
    async def serve() -> None:
        loop = asyncio.get_running_loop()
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        leader = _LoopLeader(loop, fd)
        for port in follower_ports:
            transport, acks = await loop.create_connection(lambda: _Acks(leader.maybe_answer), "127.0.0.1", port)
            leader.followers.append(transport)
            leader.acks.append(acks)
        closed = loop.create_future()
        listener.setblocking(False)
        server = await loop.create_server(lambda: _Commands(leader.append, closed), sock=listener)
        await closed
        for follower in leader.followers:
            follower.close()
        server.close()
        os.close(fd)
        report.send(leader.inside)

    _run_on_pykrafts_loop(serve)


def event_loop_floor(directory: str, commits: int) -> tuple[list[float], list[float]]:
    """(end-to-end ms, inside-the-leader ms) of `commits` sequential durable commits through event-loop processes."""
    return _drive(directory, "loop-floor", _loop_leader, _loop_follower, commits)
