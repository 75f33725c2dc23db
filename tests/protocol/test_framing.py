"""FrameDecoder and frame encoding: slicing, chunk boundaries, and refusing hostile size prefixes early."""

from __future__ import annotations

import struct
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pykraft.protocol.errors import FrameTooLargeError, InvalidFrameError, ProtocolError
from pykraft.protocol.framing import (
    DEFAULT_MAX_FRAME_SIZE,
    FrameDecoder,
    encode_frame,
    encode_frame_parts,
)


def test_default_limit_is_kafkas_socket_request_max_bytes() -> None:
    assert DEFAULT_MAX_FRAME_SIZE == 104_857_600
    assert FrameDecoder().max_frame_size == DEFAULT_MAX_FRAME_SIZE


def test_encode_frame_prefixes_big_endian_size() -> None:
    assert encode_frame(b"abc") == b"\x00\x00\x00\x03abc"
    assert encode_frame(b"") == b"\x00\x00\x00\x00"
    assert encode_frame_parts([b"ab", memoryview(b"cd"), bytearray(b"e")]) == b"\x00\x00\x00\x05abcde"


def test_one_chunk_with_several_frames_and_a_partial_tail() -> None:
    decoder = FrameDecoder()
    stream = encode_frame(b"first") + encode_frame(b"") + encode_frame(b"third") + b"\x00\x00\x00\x04ab"
    frames = decoder.feed(stream)
    assert [bytes(f) for f in frames] == [b"first", b"", b"third"]
    assert decoder.buffered == 6
    assert [bytes(f) for f in decoder.feed(b"cd")] == [b"abcd"]
    assert decoder.buffered == 0


def test_byte_by_byte_feeding_yields_the_same_frames() -> None:
    payloads = [b"x" * 300, b"", b"hello"]
    stream = b"".join(encode_frame(p) for p in payloads)
    decoder = FrameDecoder()
    out = []
    for i in range(len(stream)):
        out.extend(bytes(f) for f in decoder.feed(stream[i : i + 1]))
    assert out == payloads
    assert decoder.buffered == 0


def test_frame_inside_one_chunk_is_a_view_of_that_chunk() -> None:
    chunk = encode_frame(b"zero-copy")
    (frame,) = FrameDecoder().feed(chunk)
    assert frame.obj is chunk  # no copy was made
    assert frame.readonly


def test_frames_never_change_when_the_caller_reuses_its_buffer() -> None:
    buffer = bytearray(encode_frame(b"stable") + encode_frame(b"also"))
    frames = FrameDecoder().feed(buffer)
    buffer[:] = b"\xff" * len(buffer)
    assert [bytes(f) for f in frames] == [b"stable", b"also"]


@pytest.mark.parametrize("split", [1, 2, 3])
def test_oversize_prefix_is_refused_as_soon_as_it_is_complete(split: int) -> None:
    decoder = FrameDecoder(max_frame_size=1000)
    prefix = struct.pack(">i", 1001)
    assert decoder.feed(prefix[:split]) == []
    with pytest.raises(FrameTooLargeError) as info:
        decoder.feed(prefix[split:] + b"body bytes that must not be kept")
    assert info.value.size == 1001
    assert info.value.limit == 1000
    assert decoder.buffered == 0


def test_a_frame_of_exactly_the_limit_is_accepted() -> None:
    decoder = FrameDecoder(max_frame_size=10)
    assert [bytes(f) for f in decoder.feed(encode_frame(b"0123456789"))] == [b"0123456789"]


def test_negative_size_is_an_invalid_frame() -> None:
    with pytest.raises(InvalidFrameError) as info:
        FrameDecoder().feed(struct.pack(">i", -5))
    assert info.value.size == -5
    assert not isinstance(info.value, FrameTooLargeError)


def test_a_failed_decoder_stays_failed() -> None:
    decoder = FrameDecoder(max_frame_size=4)
    with pytest.raises(FrameTooLargeError):
        decoder.feed(struct.pack(">i", 5))
    # Later bytes could be anything (the stream position is lost): every feed repeats the error.
    with pytest.raises(FrameTooLargeError):
        decoder.feed(encode_frame(b"ok"))


def test_oversize_frame_after_good_frames_in_the_same_chunk_still_raises() -> None:
    decoder = FrameDecoder(max_frame_size=8)
    with pytest.raises(FrameTooLargeError):
        decoder.feed(encode_frame(b"fine") + struct.pack(">i", 9))


def test_huge_announced_size_allocates_nothing_for_it() -> None:
    # Within the limit but never sent: the decoder must hold only the bytes that arrived.
    decoder = FrameDecoder(max_frame_size=2**31 - 1)
    tracemalloc.start()
    try:
        decoder.feed(struct.pack(">i", 2**31 - 1) + b"just ten b")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert decoder.buffered == 14
    assert peak < 64 * 1024


def test_size_above_default_limit_is_rejected_without_allocating() -> None:
    decoder = FrameDecoder()
    tracemalloc.start()
    try:
        with pytest.raises(FrameTooLargeError):
            decoder.feed(struct.pack(">i", DEFAULT_MAX_FRAME_SIZE + 1) + b"\x00" * 100)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024


@settings(max_examples=200)
@given(
    payloads=st.lists(st.binary(max_size=200), max_size=8),
    cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=12),
)
def test_any_chunking_of_a_stream_yields_its_frames(payloads: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(encode_frame(p) for p in payloads)
    points = sorted({0, len(stream), *(c for c in cuts if c <= len(stream))})
    decoder = FrameDecoder(max_frame_size=200)
    out = []
    for start, stop in zip(points, points[1:]):
        out.extend(bytes(f) for f in decoder.feed(stream[start:stop]))
    assert out == payloads
    assert decoder.buffered == 0


@settings(max_examples=300)
@given(chunks=st.lists(st.binary(max_size=64), max_size=10), limit=st.integers(min_value=0, max_value=64))
def test_random_bytes_only_raise_framing_errors(chunks: list[bytes], limit: int) -> None:
    decoder = FrameDecoder(max_frame_size=limit)
    try:
        for chunk in chunks:
            for frame in decoder.feed(chunk):
                assert len(frame) <= limit
            assert decoder.buffered <= 4 + limit
    except ProtocolError as error:
        assert isinstance(error, InvalidFrameError)
