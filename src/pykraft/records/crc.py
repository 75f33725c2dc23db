"""CRC-32C (Castagnoli), the checksum of record batch v2. All callers go through this one function."""

from __future__ import annotations

from collections.abc import Callable

import google_crc32c

try:
    # google_crc32c only accepts `bytes`; the `crc32c` package (a dependency of kio) reads any buffer, so
    # memoryview slices of a segment are checksummed without being copied first.
    from crc32c import crc32c as _crc32c_any_buffer
except ImportError:  # pragma: no cover - kio always brings it; the fallback copies.

    def _crc32c_any_buffer(data: bytes | bytearray | memoryview) -> int:
        return google_crc32c.value(bytes(data))


_crc32c_bytes: Callable[[bytes], int] = google_crc32c.value


def crc32c(data: bytes | bytearray | memoryview) -> int:
    if type(data) is bytes:
        return _crc32c_bytes(data)
    return _crc32c_any_buffer(data)
