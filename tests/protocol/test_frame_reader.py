"""FrameReader: frames read into buffers it hands out (BufferedProtocol), across any split of the stream."""

from __future__ import annotations

import random
import struct

import pytest

import pykraft.protocol.frame_reader as frame_reader
from pykraft.protocol.errors import FrameTooLargeError, InvalidFrameError
from pykraft.protocol.frame_reader import SCRATCH_BYTES, FrameReader


def _frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


def _receive(reader: FrameReader, stream: bytes, rng: random.Random, max_read: int) -> list[memoryview]:
    """What the event loop does: recv_into(get_buffer()) of at most `max_read` bytes, then buffer_updated."""
    frames: list[memoryview] = []
    pos = 0
    while pos < len(stream):
        buffer = reader.get_buffer(-1)
        assert len(buffer) > 0
        n = min(len(buffer), rng.randint(1, max_read), len(stream) - pos)
        buffer[:n] = stream[pos:pos + n]
        pos += n
        frames.extend(reader.buffer_updated(n))
    return frames


@pytest.mark.parametrize("seed", range(8))
def test_any_split_of_the_stream_gives_back_the_frames(seed, monkeypatch) -> None:
    monkeypatch.setattr(frame_reader, "EAGER_LIMIT", 300_000)  # the 1 MB frame arrives in pieces
    rng = random.Random(seed)
    sizes = [0, 1, 100, SCRATCH_BYTES // 2, SCRATCH_BYTES // 2 + 1, SCRATCH_BYTES + 7, 1_000_000, 5, 40_000]
    rng.shuffle(sizes)
    bodies = [rng.randbytes(size) for size in sizes]
    stream = b"".join(_frame(body) for body in bodies)
    frames = _receive(FrameReader(), stream, rng, max_read=rng.choice([3, 1000, 70_000, 300_000]))
    assert [bytes(frame) for frame in frames] == bodies
    for frame, body in zip(frames, bodies, strict=True):
        if SCRATCH_BYTES < len(body) <= 300_000:
            assert type(frame.obj) is bytearray and len(frame.obj) == len(body)  # its own buffer, not copied out
        elif len(body) <= SCRATCH_BYTES // 2:
            assert type(frame.obj) is bytes  # copied out of the scratch buffer


def test_a_frame_is_not_changed_by_later_reads() -> None:
    reader = FrameReader()
    rng = random.Random(1)
    first = _receive(reader, _frame(b"a" * 10) + _frame(b"b" * 50_000), rng, 70_000)
    _receive(reader, _frame(b"c" * 10) + _frame(b"d" * 50_000), rng, 70_000)
    assert [bytes(f[:1]) for f in first] == [b"a", b"b"] and len(first[1]) == 50_000


@pytest.mark.parametrize("prefix, error", [(-1, InvalidFrameError), (1001, FrameTooLargeError)])
def test_a_bad_size_prefix_fails_at_once_and_for_good(prefix, error) -> None:
    reader = FrameReader(max_frame_size=1000)
    buffer = reader.get_buffer(-1)
    buffer[:4] = struct.pack(">i", prefix)
    with pytest.raises(error):
        reader.buffer_updated(4)
    reader.get_buffer(-1)
    with pytest.raises(error):
        reader.buffer_updated(0)


def test_a_large_announced_frame_allocates_nothing_before_its_body_arrives() -> None:
    reader = FrameReader()
    buffer = reader.get_buffer(-1)
    buffer[:4] = struct.pack(">i", 50_000_000)
    assert reader.buffer_updated(4) == []
    assert len(reader.get_buffer(-1)) <= SCRATCH_BYTES  # still the scratch buffer
