"""Decompression of record-batch payloads. pykraft writes uncompressed batches (as KRaft leaders do) but reads
batches that other producers compressed, when the codec's library is installed.

Codec libraries are imported lazily so that a missing optional package costs nothing until a batch needs it,
and the error then names the package to install.
"""

from __future__ import annotations

import enum
import importlib
import struct
from collections.abc import Callable
from types import ModuleType
from typing import cast

from .errors import MalformedBatchError, UnsupportedCompressionError


class Compression(enum.IntEnum):
    """Attribute bits 0-2 of a batch."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


# codec -> (module to import, package that provides it)
_LIBRARIES = {
    Compression.SNAPPY: ("snappy", "python-snappy"),
    Compression.LZ4: ("lz4.frame", "lz4"),
    Compression.ZSTD: ("zstandard", "zstandard"),
}

# Java producers frame snappy data the xerial way: this magic, two int32 versions, then [int32 length][block]...
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER_SIZE = 16
_XERIAL_BLOCK = 32 * 1024  # snappy-java's default block size


def _library(codec: Compression) -> ModuleType:
    module_name, package = _LIBRARIES[codec]
    try:
        return importlib.import_module(module_name)
    except ImportError:
        raise UnsupportedCompressionError(
            f"batch is compressed with {codec.name.lower()} but the '{package}' package is not installed "
            "(install pykraft[compression])"
        ) from None


def _gunzip(data: bytes) -> bytes:
    import gzip  # here: a node that never sees a gzip batch does not load it

    return gzip.decompress(data)


def _unsnappy(data: bytes) -> bytes:
    snappy = _library(Compression.SNAPPY)
    if not data.startswith(_XERIAL_MAGIC):
        return cast(bytes, snappy.decompress(data))
    out = bytearray()
    pos = _XERIAL_HEADER_SIZE
    while pos < len(data):
        if pos + 4 > len(data):
            raise MalformedBatchError("xerial snappy block length is truncated")
        (size,) = struct.unpack_from(">i", data, pos)
        pos += 4
        if size < 0 or pos + size > len(data):
            raise MalformedBatchError("xerial snappy block extends past the batch")
        out += snappy.decompress(data[pos : pos + size])
        pos += size
    return bytes(out)


def _unlz4(data: bytes) -> bytes:
    return cast(bytes, _library(Compression.LZ4).decompress(data))


def _unzstd(data: bytes) -> bytes:
    # A streaming decompressor, because producers may omit the content size from the frame header.
    return cast(bytes, _library(Compression.ZSTD).ZstdDecompressor().decompressobj().decompress(data))


_DECOMPRESSORS: dict[int, Callable[[bytes], bytes]] = {
    Compression.GZIP: _gunzip,
    Compression.SNAPPY: _unsnappy,
    Compression.LZ4: _unlz4,
    Compression.ZSTD: _unzstd,
}


def decompress(codec: int, data: bytes | memoryview) -> bytes:
    """Return the decompressed records section. Raises UnsupportedCompressionError or MalformedBatchError only."""
    try:
        decompressor = _DECOMPRESSORS[codec]
    except KeyError:
        raise UnsupportedCompressionError(f"unknown compression codec id {codec}") from None
    try:
        return decompressor(bytes(data))
    except (UnsupportedCompressionError, MalformedBatchError):
        raise
    except Exception as exc:
        # Each codec library raises its own error classes (snappy.UncompressError, zstd.ZstdError, lz4's
        # RuntimeError, zlib.error, ...) with no common base, so any failure here means a bad payload.
        raise MalformedBatchError(f"cannot decompress {Compression(codec).name.lower()} payload: {exc}") from None


def compress(codec: int, data: bytes) -> bytes:
    """Compress a records section as Kafka's Java producer frames it: snappy in xerial blocks of 32 KiB (Java's
    SnappyOutputStream), lz4 as a frame of independent 64 KiB blocks without content size (Kafka's
    Lz4BlockOutputStream refuses dependent blocks). Used by the log cleaner when it rewrites a compressed batch,
    and by tests and tools."""
    if codec == Compression.GZIP:
        import gzip

        return gzip.compress(data, mtime=0)  # as Java's GZIPOutputStream (Kafka's): the same bytes whenever written
    if codec == Compression.SNAPPY:
        snappy = _library(Compression.SNAPPY)
        out = bytearray(_XERIAL_MAGIC)
        out += struct.pack(">ii", 1, 1)  # the stream version and the minimum compatible version
        for start in range(0, len(data), _XERIAL_BLOCK):
            block = snappy.compress(data[start:start + _XERIAL_BLOCK])
            out += struct.pack(">i", len(block))
            out += block
        return bytes(out)
    if codec == Compression.LZ4:
        frame = _library(Compression.LZ4)
        return cast(bytes, frame.compress(data, block_size=frame.BLOCKSIZE_MAX64KB, block_linked=False,
                                          store_size=False))
    if codec == Compression.ZSTD:
        return cast(bytes, _library(Compression.ZSTD).ZstdCompressor().compress(data))
    raise UnsupportedCompressionError(f"unknown compression codec id {codec}")
