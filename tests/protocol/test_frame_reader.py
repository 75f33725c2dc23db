"""FrameReader: frames read into buffers it hands out (BufferedProtocol), across any split of the stream, and
hostile size prefixes refused as soon as their four bytes are in, before anything is kept for them."""

from __future__ import annotations

import random
import struct
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pykraft.protocol.frame_reader as frame_reader
from pykraft.protocol.errors import FrameTooLargeError, InvalidFrameError, ProtocolError
from pykraft.protocol.frame_reader import SCRATCH_BYTES, FrameReader
from pykraft.protocol.framing import DEFAULT_MAX_FRAME_SIZE

from .helpers import receive


def _frame(body: bytes) -> bytes:
    return struct.pack(">i", len(body)) + body


def _receive(reader: FrameReader, stream: bytes, rng: random.Random, max_read: int) -> list[memoryview]:
    """Reads of a random size up to `max_read`, as a socket under load delivers them."""
    return receive(reader, stream, lambda room: min(room, rng.randint(1, max_read)))


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


def test_several_frames_in_one_read_and_a_partial_tail() -> None:
    reader = FrameReader()
    stream = _frame(b"first") + _frame(b"") + _frame(b"third") + b"\x00\x00\x00\x04ab"
    assert [bytes(f) for f in receive(reader, stream)] == [b"first", b"", b"third"]
    assert [bytes(f) for f in receive(reader, b"cd")] == [b"abcd"]


@pytest.mark.parametrize("split", [1, 2, 3])
def test_an_oversize_prefix_is_refused_as_soon_as_it_is_complete(split: int) -> None:
    reader = FrameReader(max_frame_size=1000)
    prefix = struct.pack(">i", 1001)
    assert receive(reader, prefix[:split]) == []
    with pytest.raises(FrameTooLargeError) as info:
        receive(reader, prefix[split:] + b"body bytes that must not be kept")
    assert (info.value.size, info.value.limit) == (1001, 1000)


def test_a_frame_of_exactly_the_limit_is_accepted() -> None:
    assert [bytes(f) for f in receive(FrameReader(max_frame_size=10), _frame(b"0123456789"))] == [b"0123456789"]


def test_an_oversize_frame_after_good_frames_in_the_same_read_still_raises() -> None:
    with pytest.raises(FrameTooLargeError):
        receive(FrameReader(max_frame_size=8), _frame(b"fine") + struct.pack(">i", 9))


def test_a_size_above_the_default_limit_is_refused_without_allocating() -> None:
    reader = FrameReader()
    tracemalloc.start()
    try:
        with pytest.raises(FrameTooLargeError):
            receive(reader, struct.pack(">i", DEFAULT_MAX_FRAME_SIZE + 1) + b"\x00" * 100)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024


@settings(max_examples=200)
@given(payloads=st.lists(st.binary(max_size=200), max_size=8),
       cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=12))
def test_any_chunking_of_a_stream_yields_its_frames(payloads: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(_frame(p) for p in payloads)
    points = sorted({0, len(stream), *(c for c in cuts if c <= len(stream))})
    reader = FrameReader(max_frame_size=200)
    out = [bytes(f) for start, stop in zip(points, points[1:]) for f in receive(reader, stream[start:stop])]
    assert out == payloads


@settings(max_examples=300)
@given(chunks=st.lists(st.binary(max_size=64), max_size=10), limit=st.integers(min_value=0, max_value=64))
def test_random_bytes_only_raise_framing_errors(chunks: list[bytes], limit: int) -> None:
    reader = FrameReader(max_frame_size=limit)
    try:
        for chunk in chunks:
            assert all(len(frame) <= limit for frame in receive(reader, chunk))
    except ProtocolError as error:
        assert isinstance(error, InvalidFrameError)


# ---- one scratch buffer per thread, shared by its connections ----------------------------------------------------
@settings(max_examples=150)
@given(streams=st.lists(st.lists(st.binary(max_size=SCRATCH_BYTES // 2 + 50), max_size=5), min_size=2, max_size=4),
       data=st.data())
def test_readers_of_one_thread_interleaved_each_get_their_own_frames(streams: list[list[bytes]], data) -> None:
    """Connections read in any order (each read a get_buffer then its buffer_updated, as an event loop does), with
    partial frames left in several of them at once: each gets back exactly its stream's frames."""
    wires = [b"".join(_frame(body) for body in bodies) for bodies in streams]
    readers = [FrameReader() for _ in wires]
    positions = [0] * len(wires)
    got: list[list[bytes]] = [[] for _ in wires]
    while any(pos < len(wire) for pos, wire in zip(positions, wires)):
        index = data.draw(st.sampled_from([i for i, wire in enumerate(wires) if positions[i] < len(wire)]))
        buffer = readers[index].get_buffer(-1)
        n = min(data.draw(st.integers(min_value=1, max_value=len(buffer))), len(wires[index]) - positions[index])
        buffer[:n] = wires[index][positions[index]:positions[index] + n]
        positions[index] += n
        got[index].extend(bytes(frame) for frame in readers[index].buffer_updated(n))
    assert got == streams


def test_a_read_that_never_comes_loses_nothing() -> None:
    """A transport may ask for the buffer and then read nothing (EAGAIN): the partial frame it was given back is
    still this reader's, even after another connection wrote over the scratch buffer."""
    first, other = FrameReader(), FrameReader()
    assert receive(first, _frame(b"hello world")[:7]) == []
    first.get_buffer(-1)  # no buffer_updated follows
    assert [bytes(f) for f in receive(other, _frame(b"x" * 1000))] == [b"x" * 1000]
    assert [bytes(f) for f in receive(first, _frame(b"hello world")[7:])] == [b"hello world"]


def test_readers_on_two_threads_do_not_share_a_buffer() -> None:
    """Two threads each fill the buffer their reader handed out before either hands the bytes over: were the scratch
    buffer shared across threads, the second fill would overwrite the first."""
    import threading

    filled = threading.Barrier(2)
    results: dict[int, list[bytes]] = {}

    def read(index: int) -> None:
        reader = FrameReader()
        stream = b"".join(_frame(bytes([index]) * size) for size in (10, 5000, 300))
        out: list[bytes] = []
        for at in range(0, len(stream), 97):
            chunk = stream[at:at + 97]
            buffer = reader.get_buffer(-1)
            buffer[:len(chunk)] = chunk
            filled.wait()
            out.extend(bytes(frame) for frame in reader.buffer_updated(len(chunk)))
            filled.wait()
        results[index] = out

    threads = [threading.Thread(target=read, args=(i,)) for i in (1, 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == {i: [bytes([i]) * 10, bytes([i]) * 5000, bytes([i]) * 300] for i in (1, 2)}


def test_idle_readers_hold_no_buffer() -> None:
    receive(FrameReader(), _frame(b"warm-up"))  # the thread's scratch buffer exists before the count starts
    tracemalloc.start()
    try:
        readers = [FrameReader() for _ in range(200)]
        for reader in readers:
            receive(reader, _frame(b"a request") + _frame(b"x" * 2000))
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert held < 200 * 1024  # well under 1 KiB each (a scratch of their own: 32 KiB each)
