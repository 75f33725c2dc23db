"""Zig-zag varints as Kafka's record format uses them (protobuf style, little-endian groups of 7 bits)."""

from __future__ import annotations

from .errors import MalformedBatchError

_MAX_VARLONG_BYTES = 10


def append_varint(out: bytearray, value: int) -> None:
    """Append `value` (a signed 64-bit integer) zig-zag encoded."""
    zigzag = (value << 1) ^ (value >> 63)
    while zigzag >= 0x80:
        out.append((zigzag & 0x7F) | 0x80)
        zigzag >>= 7
    out.append(zigzag)


def varint_size(value: int) -> int:
    zigzag = (value << 1) ^ (value >> 63)
    size = 1
    while zigzag >= 0x80:
        zigzag >>= 7
        size += 1
    return size


def read_varint(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """Decode a zig-zag varint at `pos`; return (value, position after it).

    Raises MalformedBatchError for an over-long encoding and IndexError when `buf` ends first (callers that know
    the enclosing length turn that into their own error).
    """
    b = buf[pos]
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    result = b & 0x7F
    shift = 7
    end = pos + _MAX_VARLONG_BYTES
    pos += 1
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
        if pos >= end:
            raise MalformedBatchError("varint longer than 10 bytes")
