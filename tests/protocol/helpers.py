"""Shared helpers for the protocol tests: the (api, version) pairs of the default registry, message bytes."""

from __future__ import annotations

import io
import struct
from collections.abc import Callable

from hypothesis import strategies as st
from kio.serial import entity_writer

from pykraft.protocol.apis import KRAFT_NODE_APIS, ApiKey, request_class, response_class
from pykraft.protocol.frame_reader import FrameReader

REGISTRY_PAIRS = [
    (key, version)
    for key, versions in KRAFT_NODE_APIS
    for version in range(versions.min_version, versions.max_version + 1)
]
REQUEST_CLASSES = [request_class(key, version) for key, version in REGISTRY_PAIRS]
RESPONSE_CLASSES = [response_class(key, version) for key, version in REGISTRY_PAIRS]


def pair_id(pair: tuple[ApiKey, int]) -> str:
    return f"{pair[0].name}-v{pair[1]}"


def class_id(cls: type) -> str:
    return f"{cls.__name__}-v{cls.__version__}"


def body_bytes(message: object) -> bytes:
    buffer = io.BytesIO()
    entity_writer(type(message))(buffer, message)
    return buffer.getvalue()


def receive(reader: FrameReader, stream: bytes,
            read_size: Callable[[int], int] = lambda room: room) -> list[memoryview]:
    """What the event loop does with `stream`: reads of `read_size(room)` bytes into the buffer `get_buffer` hands
    out (`room` bytes long), each followed by `buffer_updated`; returns the frames completed."""
    frames: list[memoryview] = []
    view = memoryview(stream)
    pos = 0
    while pos < len(view):
        buffer = reader.get_buffer(-1)
        assert len(buffer) > 0
        n = min(read_size(len(buffer)), len(view) - pos)
        buffer[:n] = view[pos:pos + n]
        pos += n
        frames.extend(reader.buffer_updated(n))
    return frames


def unframe(frame: bytes) -> memoryview:
    """The single frame body inside `frame`, checked with the real reader."""
    frames = receive(FrameReader(), frame)
    assert len(frames) == 1
    return frames[0]


def request_frame_body(api_key: int, api_version: int, correlation_id: int, rest: bytes) -> bytes:
    """A request frame body with a v1-style fixed prefix (api key, version, correlation id) and `rest`."""
    return struct.pack(">hhi", api_key, api_version, correlation_id) + rest


@st.composite
def mutated(draw: st.DrawFn, original: bytes) -> bytes:
    """`original` with 1-4 truncations, bit flips, bytes that make lengths and counts absurd (huge, negative,
    null, over-long varints), insertions or deletions."""
    data = bytearray(original)
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["flip", "set", "cut", "insert", "delete"]))
        if kind == "cut":
            return bytes(data[: draw(st.integers(0, len(data)))])
        position = draw(st.integers(0, max(len(data) - 1, 0)))
        if kind == "insert":
            data[position:position] = draw(st.binary(min_size=1, max_size=8))
        elif not data:
            continue
        elif kind == "flip":
            data[position] ^= 1 << draw(st.integers(0, 7))
        elif kind == "set":
            # Values that make lengths huge, negative, null or varints long.
            data[position] = draw(st.sampled_from([0x00, 0x01, 0x7F, 0x80, 0xFE, 0xFF]))
        else:
            del data[position : position + draw(st.integers(1, 4))]
    return bytes(data)
