"""Errors raised while decoding record batches.

Every decoder in this package raises only `RecordsError` subclasses, so that callers (storage recovery,
the fetch path, dump-log) can tell a torn write at the tail from real corruption without guessing.
"""

from __future__ import annotations


class RecordsError(ValueError):
    """A batch could not be decoded. `position` is the byte offset of the batch in the scanned buffer."""

    def __init__(self, message: str, *, position: int = 0, base_offset: int | None = None) -> None:
        super().__init__(message)
        self.position = position
        self.base_offset = base_offset


class TruncatedBatchError(RecordsError):
    """The buffer ends in the middle of a batch: a torn write at the tail of a file, or a cut Fetch response."""


class CorruptBatchError(RecordsError):
    """A complete batch whose stored CRC-32C does not match its bytes."""


class MalformedBatchError(RecordsError):
    """A batch whose framing or contents are invalid: bad magic, impossible length, or unparsable records."""


class UnsupportedCompressionError(RecordsError):
    """The batch is compressed with a codec whose library is not installed, or with an unknown codec id."""
