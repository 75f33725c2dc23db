"""The ceiling of replicated produce on this machine: the bytes a replication-factor-3 write moves, with no protocol.

A client process streams 1 MiB chunks over loopback TCP to a "leader" process, which appends each chunk to a file
and forwards it to two "follower" processes, which append it to files of their own. No framing, no acks, no
records, one `recv_into`/`send`/`write` per MiB: only the copies every broker implementation pays (the client's send,
three page-cache writes, three TCP receives and two TCP forwards), in the processes that pay them on a real cluster,
sharing the same cores. No implementation can move more on the machine of the run, so `benchmarks/produce.py` prints
pykraft's rate against this one as well as against the raw disk: the raw disk (write+fdatasync, one process) and
this ceiling (no fsync, four processes) are limited by different things, and which one is lower differs from machine
to machine (stop 25: raw 217-278 MB/s, this ceiling 177; stop 24's disk gave raw 1,197-1,308).
"""

from __future__ import annotations

import os
import socket
import time
from multiprocessing import get_context

from bare_processes import leader_and_followers, own_cpu_seconds

MIB = 1 << 20


def _append_all(source: socket.socket, file_path: str, forward: list[socket.socket], report) -> None:
    """Receive 1 MiB chunks until the peer closes, forward each, append it to `file_path`; report (MiB, CPU s)."""
    chunk = bytearray(MIB)
    view = memoryview(chunk)
    chunks = 0
    cpu = own_cpu_seconds()
    fd = os.open(file_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        while True:
            got = 0
            while got < MIB:
                n = source.recv_into(view[got:])
                if n == 0:
                    report.send((chunks, own_cpu_seconds() - cpu))
                    return
                got += n
            for peer in forward:
                peer.sendall(chunk)
            os.write(fd, chunk)
            chunks += 1
    finally:
        os.close(fd)
        for peer in forward:
            peer.close()


def _follower(listener: socket.socket, file_path: str, report) -> None:
    connection, _ = listener.accept()
    _append_all(connection, file_path, [], report)


def _leader(listener: socket.socket, follower_ports: list[int], file_path: str, report) -> None:
    followers = [socket.create_connection(("127.0.0.1", port)) for port in follower_ports]
    connection, _ = listener.accept()
    _append_all(connection, file_path, followers, report)


def relay_ceiling(directory: str, seconds: float) -> tuple[float, dict[str, float]]:
    """(MB/s moved, CPU ms per MB of each process: leader, follower 1, follower 2, client) over `seconds`; MB are
    MiB here, as in every figure of produce.py."""
    pipes = [get_context("fork").Pipe(duplex=False) for _ in range(3)]  # leader, follower 1, follower 2
    roles = ("leader", "follower 1", "follower 2")
    with leader_and_followers(directory, "ceiling", _leader, _follower, leader_args=(pipes[0][1],),
                              follower_args=lambda index: (pipes[index][1],)) as address:
        client = socket.create_connection(address)
        block = os.urandom(MIB)
        cpu = own_cpu_seconds()
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            client.sendall(block)
        client_cpu = own_cpu_seconds() - cpu
        client.close()
        reports = [receiver.recv() for receiver, _ in pipes]  # each process ends when its source closes
        elapsed = time.perf_counter() - start
    megabytes = min(chunks for chunks, _ in reports)  # MiB, as every figure of produce.py's ("MB")
    per_mb = {role: 1000 * cpu_s / megabytes for role, (_, cpu_s) in zip(roles, reports)}
    per_mb["client"] = 1000 * client_cpu / megabytes
    return megabytes / elapsed, per_mb
