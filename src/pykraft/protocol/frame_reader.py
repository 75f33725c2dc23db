"""Kafka frames received straight into their own buffers, for `asyncio.BufferedProtocol` (`get_buffer` /
`buffer_updated`): the reader of the server and of client connections.

With `data_received`, uvloop hands a 1 MB Produce or Fetch frame over in chunks of at most 256 KiB, each a new
`bytes` object, which must then be joined: the frame is copied once more than needed and four chunk buffers are
allocated and freed per frame. Here, once a frame's size prefix is in, a frame larger than half the scratch
buffer gets a buffer of exactly its size and the socket is read into the rest of it; small frames are read into a
scratch buffer and copied out (they are small). A frame is a `memoryview` over a `bytearray` (a large frame, owned by
nobody else: never written again) or over `bytes` (a small one).

The scratch buffer is one per thread, shared by every connection that thread reads (`_thread_scratch`): an event
loop asks a protocol for its buffer and hands it the bytes read into it in one step (uvloop's and asyncio's
transports, TLS included, read and call `buffer_updated` before they ask any other protocol), so no other reader
can write into it in between. A reader keeps only the bytes of a frame that is not complete yet (`_partial`, copied
back to the front of the scratch before the next read), so an idle connection holds no buffer: 500 idle client
connections to a broker cost 36.9 KiB of RSS each with a scratch of their own, 5.1 KiB with this (idle_rss.py).

The size prefix is checked (negative, or over `max_frame_size`: Kafka's `socket.request.max.bytes`) as soon as its
four bytes are in, before anything is allocated. A frame's own buffer is allocated from its announced size, as
Kafka's `NetworkReceive` does, but only up to `EAGER_LIMIT` and only once part of its body has arrived; a larger
frame gets pieces of `EAGER_LIMIT` as its bytes arrive, joined once at its end. After an error the reader stays
failed and raises it again on every read: the stream position is lost, so a caller that forgets to close the
connection cannot resume mid-stream.
"""

from __future__ import annotations

import struct
import threading

from pykraft.protocol.errors import InvalidFrameError
from pykraft.protocol.framing import DEFAULT_MAX_FRAME_SIZE, SIZE_PREFIX_BYTES, check_peer_frame_size

__all__ = ["EAGER_LIMIT", "FrameReader"]

SCRATCH_BYTES = 32 * 1024  # per thread (not per connection); frames over half of it get their own buffer
EAGER_LIMIT = 16 << 20  # frames up to this size get their whole buffer at once (a Produce of 1 MB batches)
_SIZE = struct.Struct(">i")
_scratch_of_thread = threading.local()


def _thread_scratch() -> memoryview:
    """The scratch buffer of the calling thread (see the module docstring), made at its first read."""
    view: memoryview | None = getattr(_scratch_of_thread, "view", None)
    if view is None:
        view = memoryview(bytearray(SCRATCH_BYTES))
        _scratch_of_thread.view = view
    return view


class FrameReader:
    __slots__ = ("_failure", "_filled", "_limit", "_partial", "_piece", "_piece_view", "_pieces", "_remaining")

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        self._limit = max_frame_size
        # The start of a small frame (or of a size prefix) whose rest has not arrived: under SCRATCH_BYTES // 2 + 4
        # bytes, since a frame larger than half the scratch moves to its own buffer once its body starts.
        self._partial = b""
        # A large frame being received: its buffer (one piece, or several when over EAGER_LIMIT), the bytes in the
        # current piece and the bytes still missing after it.
        self._piece: bytearray | None = None
        self._piece_view: memoryview | None = None
        self._pieces: list[bytearray] = []
        self._filled = 0
        self._remaining = 0
        self._failure: InvalidFrameError | None = None

    @property
    def limit(self) -> int:
        """The largest frame accepted: a SASL listener lowers it until the connection authenticated."""
        return self._limit

    @limit.setter
    def limit(self, value: int) -> None:
        self._limit = value

    def get_buffer(self, _sizehint: int = -1) -> memoryview:
        """Where the next socket read goes: the rest of the large frame's own buffer, or the thread's scratch buffer
        after this connection's partial frame (copied to its front; kept here too, in case no read follows)."""
        if self._piece_view is not None:
            return self._piece_view[self._filled:]
        scratch = _thread_scratch()
        kept = len(self._partial)
        if kept:
            scratch[:kept] = self._partial
        return scratch[kept:]

    def buffer_updated(self, nbytes: int) -> list[memoryview]:
        """`nbytes` were read into the last `get_buffer`; return every frame they completed, in order."""
        if self._failure is not None:
            raise self._failure
        try:
            if self._piece is not None:
                return self._piece_received(nbytes)
            return self._split_scratch(len(self._partial) + nbytes)
        except InvalidFrameError as failure:
            self._failure = failure
            raise

    def _piece_received(self, nbytes: int) -> list[memoryview]:
        self._filled += nbytes
        piece = self._piece
        assert piece is not None
        if self._filled < len(piece):
            return []
        self._pieces.append(piece)
        if self._remaining:
            self._next_piece()
            return []
        pieces, self._pieces = self._pieces, []
        self._piece = self._piece_view = None
        return [memoryview(pieces[0] if len(pieces) == 1 else b"".join(pieces))]

    def _next_piece(self) -> None:
        """The next buffer of a large frame: all of it up to EAGER_LIMIT, so a frame over it is held only as far
        as its bytes arrived (and joined once at its end)."""
        size = min(self._remaining, EAGER_LIMIT)
        self._remaining -= size
        self._piece = bytearray(size)
        self._piece_view = memoryview(self._piece)
        self._filled = 0

    def _split_scratch(self, end: int) -> list[memoryview]:
        """The frames completed in the first `end` bytes of the scratch buffer; the rest becomes `_partial`, or the
        start of a large frame's own buffer."""
        frames: list[memoryview] = []
        view = _thread_scratch()
        start = 0
        while end - start >= SIZE_PREFIX_BYTES:
            (size,) = _SIZE.unpack_from(view, start)
            check_peer_frame_size(size, self._limit)
            body = start + SIZE_PREFIX_BYTES
            available = end - body
            if available >= size:
                frames.append(memoryview(bytes(view[body:body + size])))
                start = body + size
                continue
            if size > SCRATCH_BYTES // 2 and available > 0:
                self._start_large(size, view[body:end])
                start = end
            break
        self._partial = bytes(view[start:end]) if start < end else b""
        return frames

    def _start_large(self, size: int, first: memoryview) -> None:
        """A large frame whose first body bytes are in (never more than a piece: the scratch is smaller)."""
        self._remaining = size
        self._next_piece()
        assert self._piece is not None
        self._piece[:len(first)] = first
        self._filled = len(first)
