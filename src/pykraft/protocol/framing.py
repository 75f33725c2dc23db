"""Kafka's stream framing: every request and response is an int32 big-endian size, then that many bytes.

This module builds frames (`encode_frame`, `encode_frame_parts`, `FrameBody` for a body written in pieces) and
checks sizes: ours must fit the int32 prefix, a peer's must be non-negative and within the configured maximum
(Kafka's `socket.request.max.bytes`, 100 MiB by default). Frames are read by `frame_reader.FrameReader`.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable
from dataclasses import dataclass

from pykraft.protocol.errors import FrameTooLargeError, InvalidFrameError

__all__ = [
    "DEFAULT_MAX_FRAME_SIZE",
    "SIZE_PREFIX_BYTES",
    "FileRegion",
    "FrameBody",
    "encode_frame",
    "check_frame_size",
    "check_peer_frame_size",
    "encode_frame_parts",
]

DEFAULT_MAX_FRAME_SIZE = 104_857_600  # Kafka's socket.request.max.bytes default (100 MiB)
SIZE_PREFIX_BYTES = 4
_INT32_MAX = 2**31 - 1
_SIZE = struct.Struct(">i")


def encode_frame(payload: bytes | bytearray | memoryview) -> bytes:
    """Prefix `payload` with its int32 size."""
    return encode_frame_parts((payload,))


def encode_frame_parts(parts: Iterable[bytes | bytearray | memoryview]) -> bytes:
    """One frame from several pieces (header, body), joined with a single copy."""
    pieces = list(parts)
    size = sum(memoryview(p).nbytes for p in pieces)
    check_frame_size(size)
    return b"".join([_SIZE.pack(size), *pieces])


class FileRegion:
    """`size` bytes of an open file from `position`, to be sent as they are: a consumer Fetch answer's record batches
    in a segment file, which the server sends from the file's mapped pages (the bytes never enter a Python buffer:
    net/file_send.py) or, where it cannot (TLS), reads and writes. The region owns `fd`, a duplicate of the segment's descriptor made when the answer was
    built: the segment may be closed (retention, a cleaner swap) before the answer is written, and a closed number
    could be reused by another file. A truncation under it shortens what can be sent: the server then closes the
    connection (the frame's size was already promised), as Kafka does. `len()` is the size, so counters and the
    encoders' length prefixes treat it like the bytes it stands for; `close()` (or losing the last reference)
    closes the duplicate."""

    __slots__ = ("fd", "position", "size")

    def __init__(self, fd: int, position: int, size: int) -> None:
        self.fd = fd
        self.position = position
        self.size = size

    def __len__(self) -> int:
        return self.size

    def __repr__(self) -> str:
        return f"FileRegion(fd={self.fd}, position={self.position}, size={self.size})"

    def read(self) -> bytes:
        """The bytes (the copying path), short if the file was truncated under the region."""
        return os.pread(self.fd, self.size, self.position) if self.fd >= 0 else b""

    def close(self) -> None:
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            os.close(fd)

    def __del__(self) -> None:
        self.close()


Part = bytes | bytearray | memoryview | FileRegion


@dataclass(frozen=True, slots=True)
class FrameBody:
    """A frame body (no size prefix) in pieces that are written one after the other: a large buffer, such as the
    record batches of a Fetch answer read from a segment, stays the object it was and is never joined, and a
    `FileRegion` is sent from its file."""

    parts: tuple[Part, ...]
    size: int


def check_frame_size(size: int) -> None:
    """A frame we build must fit its int32 size prefix."""
    if size > _INT32_MAX:
        # Not a peer's fault but ours; the same exception keeps one error path for oversize frames.
        raise FrameTooLargeError(f"frame of {size} bytes does not fit an int32 size", size=size, limit=_INT32_MAX)


def check_peer_frame_size(size: int, limit: int) -> None:
    """A size prefix read from a peer: InvalidFrameError if negative, FrameTooLargeError if over `limit`."""
    if size < 0:
        raise InvalidFrameError(f"negative frame size {size}", size=size)
    if size > limit:
        raise FrameTooLargeError(f"frame size {size} is larger than the limit {limit}", size=size, limit=limit)
