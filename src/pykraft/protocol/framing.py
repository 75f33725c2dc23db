"""Kafka's stream framing: every request and response is an int32 big-endian size, then that many bytes.

`FrameDecoder` is the incremental reader for the asyncio layer: feed it whatever the socket produced and
it hands back the complete frames. Its one job beyond slicing is to refuse a hostile size prefix (negative,
or above the configured maximum, Kafka's `socket.request.max.bytes` = 100 MiB by default) as soon as the
four prefix bytes are in, before a single byte of that body is kept. Nothing is ever allocated from the
announced size: the buffer only grows by bytes that actually arrived.

Frames come back as read-only `memoryview`s over immutable `bytes`. When a frame lies entirely inside one
fed chunk (the common case on a quiet connection) the view points into that chunk and nothing is copied;
a frame that straddles chunks is assembled once into its own `bytes`.
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
    "FrameDecoder",
    "encode_frame",
    "check_frame_size",
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


class FrameDecoder:
    """Incremental splitter of a byte stream into frames.

    After it raises, the decoder stays failed (the stream position is lost) and every later `feed` raises
    the same error again, so a caller that forgets to close the connection cannot resume mid-stream.
    """

    __slots__ = ("_body", "_body_bytes", "_failure", "_limit", "_pending", "_size")

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        assert 0 <= max_frame_size <= _INT32_MAX, max_frame_size
        self._limit = max_frame_size
        self._pending = bytearray()  # the size prefix of the frame being assembled (possibly partial)
        self._size: int | None = None  # body size of the frame being assembled, once its prefix is complete
        # The body received so far, as the chunks' own bytes: joined once when complete (growing one buffer
        # chunk by chunk copied a megabyte frame twice or more).
        self._body: list[bytes | memoryview] = []
        self._body_bytes = 0
        self._failure: InvalidFrameError | None = None

    @property
    def max_frame_size(self) -> int:
        return self._limit

    @property
    def buffered(self) -> int:
        """Bytes held for an incomplete frame (prefix included)."""
        return len(self._pending) + self._body_bytes

    def feed(self, data: bytes | bytearray | memoryview) -> list[memoryview]:
        """Add received bytes; return every frame completed by them, in order."""
        if self._failure is not None:
            raise self._failure
        # The views we return must never change under the caller, so a mutable chunk is copied once.
        chunk = data if isinstance(data, bytes) else bytes(data)
        frames: list[memoryview] = []
        try:
            pos = self._finish_pending(chunk, frames)
            self._split_chunk(chunk, pos, frames)
        except InvalidFrameError as failure:
            self._failure = failure
            self._pending = bytearray()
            self._body, self._body_bytes = [], 0
            raise
        return frames

    def _finish_pending(self, chunk: bytes, frames: list[memoryview]) -> int:
        """Complete the frame already started (`_pending`, `_body`); return how much of `chunk` that used."""
        if not self._pending:
            return 0
        pos = 0
        if self._size is None:
            take = min(SIZE_PREFIX_BYTES - len(self._pending), len(chunk))
            self._pending += chunk[:take]
            pos = take
            if len(self._pending) < SIZE_PREFIX_BYTES:
                return pos
            (size,) = _SIZE.unpack_from(self._pending)
            check_peer_frame_size(size, self._limit)
            self._size = size
        missing = self._size - self._body_bytes
        take = min(missing, len(chunk) - pos)
        if take:
            self._body.append(memoryview(chunk)[pos : pos + take])
            self._body_bytes += take
        pos += take
        if take == missing:
            frames.append(memoryview(b"".join(self._body)))  # one copy, straight into the frame's own bytes
            self._pending = bytearray()
            self._body, self._body_bytes = [], 0
            self._size = None
        return pos

    def _split_chunk(self, chunk: bytes, pos: int, frames: list[memoryview]) -> None:
        """Slice whole frames straight out of `chunk` from `pos`; keep the unfinished tail."""
        if self._pending:  # the pending frame still needs more bytes than this chunk had
            return
        view = memoryview(chunk)
        end = len(chunk)
        while end - pos >= SIZE_PREFIX_BYTES:
            (size,) = _SIZE.unpack_from(chunk, pos)
            check_peer_frame_size(size, self._limit)
            start = pos + SIZE_PREFIX_BYTES
            if end - start < size:
                self._size = size
                self._pending += view[pos:start]
                if start < end:
                    self._body.append(view[start:end])
                    self._body_bytes = end - start
                return
            frames.append(view[start : start + size])
            pos = start + size
        if pos < end:
            self._pending += view[pos:end]  # a partial size prefix
