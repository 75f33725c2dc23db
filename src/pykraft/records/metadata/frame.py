"""The metadata record value frame (reference §3.3): how a metadata record becomes a record value and back.

    value = [unsigned varint frame version = 1][unsigned varint api key][unsigned varint record version]
            + the record in the flexible (compact, tagged-field) encoding

as Kafka's `AbstractApiMessageSerde` writes it. Decoding fails where Kafka's reader fails (frame version, type,
version, body, trailing garbage), always with a MetadataRecordError subclass. The body is first walked by
`pykraft.protocol.wire_check` (bounds, nulls, tags) and only then handed to kio's native reader; see that module
for why.
"""

from __future__ import annotations

import functools
import io
import struct

from kio.serial.errors import SerialError

from pykraft.protocol.wire_check import (
    MAX_STRING_BYTES,
    Guard,
    WireFormatError,
    guard_for,
    kio_input,
    read_uvarint,
)

from .errors import (
    MalformedMetadataRecordError,
    MetadataRecordEncodeError,
    TrailingBytesError,
    TruncatedMetadataRecordError,
    UnknownFrameVersionError,
)
from .registry import FRAME_VERSION, RecordCodec, codec_for, codec_for_class
from .schema import RECORD_CLASSES

# What kio's reader raises on bytes that passed the walk but are still wrong (invalid UTF-8, a bool that is
# neither 0 nor 1, ...), and what its writer raises on values that do not fit their field types.
_KIO_READ_ERRORS = (SerialError, ValueError, LookupError, TypeError, OverflowError, struct.error)
_KIO_WRITE_ERRORS = (SerialError, ValueError, TypeError, AttributeError, OverflowError, struct.error)


def encode_metadata_record(record: object) -> bytes:
    """The record value for `record`, an instance of one of the generated classes (TypeError otherwise).

    Raises MetadataRecordEncodeError when a field value does not fit its Kafka type.
    """
    codec = codec_for_class(type(record))
    out = io.BytesIO()
    out.write(codec.header)
    try:
        codec.write(out, record)
    except _KIO_WRITE_ERRORS as exc:
        raise MetadataRecordEncodeError(f"cannot encode {type(record).__name__}: {exc}") from exc
    value = out.getvalue()
    # Kafka refuses to write (or read) a string longer than 32767 bytes, and kio does not check. Only a
    # value at least that long can hold one, so the common case skips the walk.
    if len(value) > MAX_STRING_BYTES:
        _check_encoded(codec, value)
    return value


def decode_metadata_record(value: bytes | bytearray | memoryview) -> object:
    """The record object encoded in a metadata record value. Raises only MetadataRecordError subclasses
    for bad bytes (and TypeError if `value` is not a bytes-like object)."""
    view = _read_only_bytes(value)
    end = len(view)
    codec, body_start = _read_frame(view, end)
    try:
        body_end, edits = _guard(codec.record_class, codec.api_key).walk(view, body_start, end)
    except WireFormatError as exc:
        raise _body_error(codec, exc) from exc
    if body_end != end:
        raise TrailingBytesError(end - body_end, codec.name)
    # Unknown tagged fields (a newer Kafka's additions) are cut out of a copy; kio cannot skip them itself.
    source, offset, stop = kio_input(view, body_start, end, edits)
    try:
        record, size = codec.read(source, offset)
    except _KIO_READ_ERRORS as exc:
        raise MalformedMetadataRecordError(f"invalid {codec.name} v{codec.version}: {exc}") from exc
    if offset + size != stop:
        # The walk and kio disagree on where the record ends: never expected, but never silently accepted.
        raise MalformedMetadataRecordError(f"invalid {codec.name} v{codec.version}: inconsistent length")
    return record


@functools.cache
def _guard(record_class: type, api_key: int) -> Guard:
    """The walk of one record class; the record's other versions tell which tags Kafka rejects in this one."""
    return guard_for(record_class, tuple(cls for (key, _), cls in RECORD_CLASSES.items() if key == api_key))


def _read_only_bytes(value: bytes | bytearray | memoryview) -> memoryview:
    """kio's reader takes read-only buffers only; a read-only view of a bytearray costs no copy."""
    view = memoryview(value)
    if view.ndim != 1 or view.itemsize != 1:
        view = view.cast("B")
    return view if view.readonly else view.toreadonly()


def _read_frame(view: memoryview, end: int) -> tuple[RecordCodec, int]:
    frame_version, pos = _frame_varint(view, 0, end, "frame version")
    if frame_version != FRAME_VERSION:
        raise UnknownFrameVersionError(frame_version)
    api_key, pos = _frame_varint(view, pos, end, "record type")
    version, pos = _frame_varint(view, pos, end, "record version")
    return codec_for(api_key, version), pos


def _frame_varint(view: memoryview, pos: int, end: int, what: str) -> tuple[int, int]:
    try:
        return read_uvarint(view, pos, end)
    except WireFormatError as exc:
        error = TruncatedMetadataRecordError if exc.truncated else MalformedMetadataRecordError
        raise error(f"error while reading the {what} of a metadata record: {exc}") from exc


def _body_error(codec: RecordCodec, exc: WireFormatError) -> Exception:
    error = TruncatedMetadataRecordError if exc.truncated else MalformedMetadataRecordError
    return error(f"failed to decode {codec.name} v{codec.version}: {exc}")


def _check_encoded(codec: RecordCodec, value: bytes) -> None:
    view = memoryview(value)
    try:
        _guard(codec.record_class, codec.api_key).walk(view, len(codec.header), len(view))
    except WireFormatError as exc:
        raise MetadataRecordEncodeError(f"cannot encode {codec.name}: {exc}") from exc
