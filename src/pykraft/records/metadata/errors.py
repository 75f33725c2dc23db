"""Errors of the metadata record codec.

`decode_metadata_record` raises only `MetadataRecordError` subclasses, whatever the bytes: a metadata log
written by a peer, a torn file or random garbage must never crash the reader (house rule). The subclasses say
which part of the value frame was wrong; Kafka's own reader (`AbstractApiMessageSerde.read`) fails in the
same places with a `MetadataParseException`.
"""

from __future__ import annotations


class MetadataRecordError(ValueError):
    """A metadata record value could not be decoded or encoded."""


class UnknownFrameVersionError(MetadataRecordError):
    """The value does not start with frame version 1 (0 was KRaft's 2.8 preview format, never supported)."""

    def __init__(self, frame_version: int) -> None:
        if frame_version == 0:
            detail = "frame version 0 is the KRaft preview format of Kafka 2.8, which is not supported"
        else:
            detail = f"unknown frame version {frame_version} (only frame version 1 is supported)"
        super().__init__(f"cannot decode metadata record: {detail}")
        self.frame_version = frame_version


class UnknownMetadataRecordTypeError(MetadataRecordError):
    """The api key in the frame is not a metadata record type we know."""

    def __init__(self, api_key: int) -> None:
        super().__init__(f"unknown metadata record type (api key {api_key})")
        self.api_key = api_key


class UnsupportedMetadataRecordVersionError(MetadataRecordError):
    """The record type is known but not at this version."""

    def __init__(self, api_key: int, name: str, version: int, supported: range) -> None:
        super().__init__(
            f"unsupported version {version} of {name} (api key {api_key}); "
            f"supported versions are {supported.start}-{supported.stop - 1}"
        )
        self.api_key = api_key
        self.version = version


class TruncatedMetadataRecordError(MetadataRecordError):
    """The value ends before the record does (or a length inside it claims more bytes than remain)."""


class MalformedMetadataRecordError(MetadataRecordError):
    """The record body is not a valid encoding of its schema: a null in a non-nullable field, invalid UTF-8,
    a string longer than Kafka allows, a tagged field whose size does not match its value, and so on."""


class TrailingBytesError(MetadataRecordError):
    """The record decoded completely but bytes remain after it (Kafka: "byte(s) of garbage after")."""

    def __init__(self, count: int, name: str) -> None:
        super().__init__(f"found {count} byte(s) of garbage after {name}")
        self.count = count


class MetadataRecordEncodeError(MetadataRecordError):
    """A record object cannot be encoded: a value out of range for its field type, a None in a
    non-nullable field, or a string longer than Kafka's limit of 32767 UTF-8 bytes."""
