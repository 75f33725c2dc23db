"""Frame encoding and the size checks shared by the writer and the reader (frame_reader.py has the reader's tests)."""

from __future__ import annotations

import pytest

from pykraft.protocol.errors import FrameTooLargeError, InvalidFrameError
from pykraft.protocol.framing import (
    DEFAULT_MAX_FRAME_SIZE,
    check_frame_size,
    check_peer_frame_size,
    encode_frame,
    encode_frame_parts,
)


def test_default_limit_is_kafkas_socket_request_max_bytes() -> None:
    assert DEFAULT_MAX_FRAME_SIZE == 104_857_600


def test_encode_frame_prefixes_big_endian_size() -> None:
    assert encode_frame(b"abc") == b"\x00\x00\x00\x03abc"
    assert encode_frame(b"") == b"\x00\x00\x00\x00"
    assert encode_frame_parts([b"ab", memoryview(b"cd"), bytearray(b"e")]) == b"\x00\x00\x00\x05abcde"


def test_a_frame_we_build_must_fit_an_int32_size() -> None:
    check_frame_size(2**31 - 1)
    with pytest.raises(FrameTooLargeError) as info:
        check_frame_size(2**31)
    assert info.value.limit == 2**31 - 1


def test_a_peers_size_prefix_is_checked_against_the_limit() -> None:
    check_peer_frame_size(0, 10)
    check_peer_frame_size(10, 10)  # exactly the limit is accepted
    with pytest.raises(FrameTooLargeError) as too_large:
        check_peer_frame_size(11, 10)
    assert (too_large.value.size, too_large.value.limit) == (11, 10)
    with pytest.raises(InvalidFrameError) as negative:
        check_peer_frame_size(-5, 10)
    assert negative.value.size == -5
    assert not isinstance(negative.value, FrameTooLargeError)
