"""Writing a response whose pieces include file regions (a consumer Fetch answer's record batches, `FileRegion`):
the batches go from the segment file's pages to the socket, never through a Python buffer (Kafka's zero-copy
`FileRecords.writeTo`): each region is mapped (`mmap`, populated at once) and the answer's pieces, headers and mapped
regions alike, are written by one `os.writev`, so the kernel copies the records once, from the page cache into the
socket, as it must for any send.

Why not `os.sendfile` (Kafka's `transferTo`): measured on this project's machine (loopback, uvloop, 1 MiB answers, the
server's CPU per MB over a few alternating runs at load ~13): sendfile 0.35-0.44 ms, pread + write (the copying path)
0.25-0.29, this module's mmap + writev 0.20-0.32 (mostly ~0.24). Loopback TCP gains nothing from sendfile's page
references (the receiver copies either way) and pays its splice; a copy from mapped pages costs what a copy from a
buffer does, and the pread into that buffer is saved. Measured again for issue 34 inside the broker, the two ways
switched between rounds on one broker serving benchmarks/fetch.py's reader (CPU from the process's CPU-time clock,
load 8-14, three A/B runs): sendfile (header by writev, the batches by sendfile, the trailing tags by writev) 0.56-0.65
ms/MB of broker CPU and 800-920 MB/s, this module 0.39-0.44 ms/MB and 1,000-1,280 MB/s (medians); corking the three
writes (TCP_CORK) did not help (0.58-0.70). In a bare process sendfile is bimodal here: 0.07-0.12 ms/MB in some runs,
0.33-0.39 in others (the wake-ups of a reader on the other core; this VM's inter-processor interrupts are costly),
where mmap + writev stays at 0.18-0.22.

Direct writes go to the socket itself, so they may only happen while the transport has nothing queued: bytes queued
in the transport would otherwise go out after bytes written directly, out of order. uvloop queues even a small write
until the end of the loop iteration, so writing the frame's size prefix through the transport would always leave
something queued before the region. Hence the direct mode: while the transport's buffer is empty, all the pieces are
written straight to the socket. What the socket does not take goes through the transport, which sends it after
anything it holds; the rest of a mapped region is copied first (the mapping is closed before this returns to the
event loop, so nothing can truncate the file while its pages are read: the loop's thread does both). On TLS (`plain`
false) every region is read and written (`pread`: one copy, the path before this module).

A region whose file is shorter than the region (truncated under the answer after the size prefix promised its bytes)
raises `TruncatedRegion`: the caller closes the connection, as Kafka does. Every region is closed here.
"""

from __future__ import annotations

import asyncio
import mmap
import os
from dataclasses import dataclass

from pykraft.protocol.framing import FileRegion, Part

__all__ = ["FileSendCounters", "TruncatedRegion", "has_region", "write_with_regions"]

_IOV_MAX = 512  # well under Linux's 1024 iovecs per writev
_POPULATE = getattr(mmap, "MAP_POPULATE", 0)  # Linux; elsewhere the pages fault in as they are read


class TruncatedRegion(OSError):
    """A file region could not be read whole: its file was cut under it."""


@dataclass(slots=True)
class FileSendCounters:
    sent_from_file: int = 0  # region bytes the kernel sent from the file's mapped pages
    copied_from_file: int = 0  # region bytes copied into Python first (TLS, or the rest when the socket was full)


def has_region(pieces: list[Part]) -> bool:
    return any(type(piece) is FileRegion for piece in pieces)


def write_with_regions(transport: asyncio.Transport, pieces: list[Part], plain: bool,
                       counters: FileSendCounters) -> None:
    """Write `pieces` in order (see the module docstring); closes every region and mapping, also on failure."""
    maps: list[tuple[mmap.mmap, memoryview, memoryview]] = []
    try:
        fd = _direct_fd(transport) if plain else -1
        buffers: list[bytes | bytearray | memoryview] = []  # everything, in order, for direct writes
        queued: list[bytes | bytearray | memoryview] = []  # what goes through the transport
        for piece in pieces:
            if type(piece) is not FileRegion:
                (buffers if fd >= 0 else queued).append(piece)  # type: ignore[arg-type]  # not a region
            elif fd >= 0:
                buffers.append(_map(piece, maps))
            else:
                rest = _read(piece)
                counters.copied_from_file += len(rest)
                queued.append(rest)
        if buffers:
            mapped = {id(view) for _, _, view in maps}
            copied = _write_direct(fd, buffers, queued, mapped)
            counters.sent_from_file += sum(view.nbytes for _, _, view in maps) - copied
            counters.copied_from_file += copied
        for data in queued:
            transport.write(data)
    finally:
        for mapping, whole, view in maps:
            view.release()
            whole.release()
            mapping.close()
        for piece in pieces:
            if type(piece) is FileRegion:
                piece.close()


def _map(region: FileRegion, maps: list[tuple[mmap.mmap, memoryview, memoryview]]) -> memoryview:
    """The region's bytes as a read-only view of its file's pages (mapped and populated at once: one page-table
    setup instead of a fault per page). The file's size is checked first: a mapping past the end of a file faults
    (SIGBUS) when read. Nothing truncates a segment while this runs (the event loop's thread does both), and the
    view is released before this returns to the loop (what the socket does not take is copied)."""
    if os.fstat(region.fd).st_size < region.position + region.size:
        raise TruncatedRegion("a segment file was cut under a Fetch answer's region")
    aligned = region.position - region.position % mmap.ALLOCATIONGRANULARITY
    mapping = mmap.mmap(region.fd, region.position + region.size - aligned, flags=mmap.MAP_SHARED | _POPULATE,
                        prot=mmap.PROT_READ, offset=aligned)
    whole = memoryview(mapping)
    view = whole[region.position - aligned:]
    maps.append((mapping, whole, view))
    return view


def _write_direct(fd: int, buffers: list[bytes | bytearray | memoryview],
                  queued: list[bytes | bytearray | memoryview], mapped: set[int]) -> int:
    """Write `buffers` to the socket (`writev`, up to `_IOV_MAX` at a time); what it does not take goes to `queued`,
    a mapped view's rest as a copy (the mapping is closed before the transport sends it). Returns the bytes of
    mapped views so copied."""
    for at in range(0, len(buffers), _IOV_MAX):
        chunk = buffers[at:at + _IOV_MAX]
        sizes = [memoryview(b).nbytes for b in chunk]
        try:
            written = os.writev(fd, chunk)
        except (BlockingIOError, InterruptedError):
            written = 0
        if written == sum(sizes):
            continue
        copied = 0
        for buffer, size in zip(buffers[at:], [*sizes, *(memoryview(b).nbytes for b in buffers[at + len(chunk):])],
                                strict=True):
            if written >= size:
                written -= size
                continue
            if id(buffer) in mapped:
                rest = bytes(memoryview(buffer)[written:])
                copied += len(rest)
                queued.append(rest)
            else:
                queued.append(memoryview(buffer)[written:] if written else buffer)
            written = 0
        return copied
    return 0


def _direct_fd(transport: asyncio.Transport) -> int:
    """The socket's descriptor when nothing is queued in the transport (direct writes keep the order), else -1."""
    if transport.get_write_buffer_size():
        return -1
    sock = transport.get_extra_info("socket")
    return sock.fileno() if sock is not None else -1


def _read(region: FileRegion) -> bytes:
    data = os.pread(region.fd, region.size, region.position)
    if len(data) != region.size:
        raise TruncatedRegion(f"a segment file ended {region.size - len(data)} bytes before its region")
    return data
