"""The floor of one durable 3-voter commit on this machine: the same hops and fsyncs as pykraft's, with no protocol.

Four bare processes with blocking sockets (TCP_NODELAY) and 100-byte commands, one writer, sequential:
client -> leader (appends to its file, forwards to both followers, fdatasyncs its own file) -> followers (append,
fdatasync, one-byte ack) -> leader (waits for one follower's ack: with its own fsync done, a majority of 3) -> client.
That is the path of a linger-0 pykraft commit (two loopback round trips, the leader's and a follower's fdatasync, four
processes sharing the cores), minus everything a real system adds: framing, decoding, validation, a state machine,
an event loop. `benchmarks/quorum.py` times it in the same run, end to end and inside the leader (command read ->
answer sent, as PySyncObj's figure), so the latency rows can be read against what this machine allows that day.
"""

from __future__ import annotations

import os
import select
import socket
import time
from multiprocessing import get_context

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
    receiver, sender = get_context("fork").Pipe(duplex=False)
    end_to_end: list[float] = []
    with leader_and_followers(directory, "floor", _leader, _follower, leader_args=(sender,)) as address:
        client = _no_delay(socket.create_connection(address))
        command = b"v" * COMMAND
        for _ in range(commits):
            started = time.perf_counter()
            client.sendall(command)
            _receive(client, 1)
            end_to_end.append((time.perf_counter() - started) * 1000)
        client.close()
        inside = receiver.recv()
    return end_to_end, inside
