"""Kafka's stream framing: every request and response is an int32 big-endian size, then that many bytes.

This module builds frames (`encode_frame`, `encode_frame_parts`, `FrameBody` for a body written in pieces) and
checks sizes: ours must fit the int32 prefix, a peer's must be non-negative and within the configured maximum
(Kafka's `socket.request.max.bytes`, 100 MiB by default). Frames are read by `frame_reader.FrameReader`.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass

from pykraft.protocol.errors import FrameTooLargeError, InvalidFrameError

__all__ = [
    "DEFAULT_MAX_FRAME_SIZE",
    "SIZE_PREFIX_BYTES",
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


@dataclass(frozen=True, slots=True)
class FrameBody:
    """A frame body (no size prefix) in pieces that are written one after the other: a large buffer, such as the
    record batches of a Fetch answer read from a segment, stays the object it was and is never joined."""

    parts: tuple[bytes | bytearray | memoryview, ...]
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
