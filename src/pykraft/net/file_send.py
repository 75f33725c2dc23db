"""Writing a response whose pieces include file regions (a consumer Fetch answer's record batches, `FileRegion`):
the batches go from the segment file to the socket by `os.sendfile`, never through a Python buffer, as Kafka's
zero-copy `FileRecords.writeTo` does.

`sendfile` writes to the socket itself, so it may only run while the transport has nothing queued: bytes queued in
the transport would otherwise go out after bytes written directly, out of order. uvloop queues even a small write
until the end of the loop iteration, so writing the frame's size prefix and headers through the transport would
always leave something queued before the region. Hence the direct mode: while the transport's buffer is empty, every
piece of the answer is written straight to the socket (`os.writev` for headers, `os.sendfile` for regions), in order.
The first piece the socket does not take whole ends the direct mode: the rest of that piece and everything after it
go through the transport (a region's rest is read with `pread` first: one copy, the pre-zero-copy path), which sends
them after anything it holds. On TLS (`plain` false) every region is read and written (sendfile cannot encrypt).

A region that ends short (its segment was truncated under the answer after the size prefix promised its bytes)
raises `TruncatedRegion`: the caller closes the connection, as Kafka does. Every region is closed here.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass

from pykraft.protocol.framing import FileRegion, Part

__all__ = ["FileSendCounters", "TruncatedRegion", "has_region", "write_with_regions"]

_IOV_MAX = 512  # well under Linux's 1024 iovecs per writev


class TruncatedRegion(OSError):
    """A file region could not be read whole: its file was cut under it."""


@dataclass(slots=True)
class FileSendCounters:
    sent_from_file: int = 0  # region bytes the kernel sent from the file (sendfile)
    copied_from_file: int = 0  # region bytes read into Python and written (TLS, or the socket was full)


def has_region(pieces: list[Part]) -> bool:
    return any(type(piece) is FileRegion for piece in pieces)


def write_with_regions(transport: asyncio.Transport, pieces: list[Part], plain: bool,
                       counters: FileSendCounters) -> None:
    """Write `pieces` in order (see the module docstring); closes every region, also on failure."""
    try:
        fd = _direct_fd(transport) if plain else -1
        buffers: list[bytes | bytearray | memoryview] = []  # the buffers before the next region, one writev
        queued: list[bytes | bytearray | memoryview] = []  # what goes through the transport
        for piece in pieces:
            if type(piece) is not FileRegion:
                (buffers if fd >= 0 else queued).append(piece)  # type: ignore[arg-type]  # not a region
                continue
            if fd >= 0 and buffers:
                fd = _write_direct(fd, buffers, queued)
                buffers = []
            sent = _sendfile(fd, piece) if fd >= 0 else 0
            counters.sent_from_file += sent
            if sent < piece.size:
                fd = -1
                rest = _read(piece, sent)
                counters.copied_from_file += len(rest)
                queued.append(rest)
        if buffers:
            _write_direct(fd, buffers, queued)
        for data in queued:
            transport.write(data)
    finally:
        for piece in pieces:
            if type(piece) is FileRegion:
                piece.close()


def _write_direct(fd: int, buffers: list[bytes | bytearray | memoryview],
                  queued: list[bytes | bytearray | memoryview]) -> int:
    """Write `buffers` to the socket; what it does not take goes to `queued`. The descriptor while direct writes
    may go on, -1 once they may not."""
    sizes = [memoryview(b).nbytes for b in buffers]
    try:
        written = os.writev(fd, buffers) if len(buffers) <= _IOV_MAX else 0
    except (BlockingIOError, InterruptedError):
        written = 0
    if written == sum(sizes):
        return fd
    for buffer, size in zip(buffers, sizes, strict=True):
        if written >= size:
            written -= size
            continue
        queued.append(memoryview(buffer)[written:] if written else buffer)
        written = 0
    return -1


def _direct_fd(transport: asyncio.Transport) -> int:
    """The socket's descriptor when nothing is queued in the transport (direct writes keep the order), else -1."""
    if transport.get_write_buffer_size():
        return -1
    sock = transport.get_extra_info("socket")
    return sock.fileno() if sock is not None else -1


def _sendfile(fd: int, region: FileRegion) -> int:
    """Bytes of `region` sent from its file before the socket filled up (all of them, usually)."""
    sent = 0
    while sent < region.size:
        try:
            n = os.sendfile(fd, region.fd, region.position + sent, region.size - sent)
        except (BlockingIOError, InterruptedError):
            return sent
        if n == 0:
            raise TruncatedRegion(f"a segment file ended {region.size - sent} bytes before its region")
        sent += n
    return sent


def _read(region: FileRegion, skip: int) -> bytes:
    data = os.pread(region.fd, region.size - skip, region.position + skip)
    if len(data) != region.size - skip:
        raise TruncatedRegion(f"a segment file ended {region.size - skip - len(data)} bytes before its region")
    return data
