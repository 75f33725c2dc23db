"""Which class encodes which metadata record: (api key, version) <-> class, record names, and the kio codec of
each class (built on first use and kept, as kio asks)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from kio.serial import entity_reader, entity_writer

from pykraft.protocol.wire_check import uvarint_bytes

from .errors import UnknownMetadataRecordTypeError, UnsupportedMetadataRecordVersionError
from .schema import RECORD_CLASSES, RECORD_NAMES, MetadataRecordType

FRAME_VERSION = 1
"""The only value frame version Kafka writes and reads (`AbstractApiMessageSerde.DEFAULT_FRAME_VERSION`)."""



def _version_ranges() -> dict[int, range]:
    """api key -> supported versions (Kafka's validVersions are always one contiguous range)."""
    by_key: dict[int, list[int]] = {}
    for api_key, version in RECORD_CLASSES:
        by_key.setdefault(api_key, []).append(version)
    return {api_key: range(min(found), max(found) + 1) for api_key, found in by_key.items()}


_VERSIONS = _version_ranges()
_KEY_OF_CLASS: dict[type, tuple[int, int]] = {cls: key for key, cls in RECORD_CLASSES.items()}


@dataclass(frozen=True, slots=True)
class RecordCodec:
    """Everything needed to encode or decode one (record, version)."""

    record_class: type
    api_key: int
    version: int
    name: str
    header: bytes
    """The value frame: unsigned varints frame version, api key, record version."""
    write: Any
    read: Any


def record_type_name(api_key: int) -> str:
    """Kafka's record name for an api key, e.g. 0 -> "RegisterBrokerRecord"."""
    try:
        return RECORD_NAMES[api_key]
    except KeyError:
        raise UnknownMetadataRecordTypeError(api_key) from None


def supported_versions(api_key: int) -> range:
    """The versions we can encode and decode for an api key."""
    try:
        return _VERSIONS[api_key]
    except KeyError:
        raise UnknownMetadataRecordTypeError(api_key) from None


def latest_version(api_key: int) -> int:
    return supported_versions(api_key)[-1]


def record_class(api_key: int, version: int) -> type:
    """The dataclass of (api key, version). Raises UnknownMetadataRecordTypeError or
    UnsupportedMetadataRecordVersionError."""
    try:
        return RECORD_CLASSES[(api_key, version)]
    except KeyError:
        versions = supported_versions(api_key)
        raise UnsupportedMetadataRecordVersionError(api_key, RECORD_NAMES[api_key], version, versions) from None


def record_type(record: object) -> MetadataRecordType:
    """The MetadataRecordType of a record object."""
    return MetadataRecordType(codec_for_class(type(record)).api_key)


def codec_for(api_key: int, version: int) -> RecordCodec:
    return _codec(record_class(api_key, version))


def codec_for_class(cls: type) -> RecordCodec:
    """Raises TypeError for anything that is not one of the generated metadata record classes."""
    if cls not in _KEY_OF_CLASS:
        raise TypeError(f"{cls.__name__} is not a metadata record class")
    return _codec(cls)


@functools.cache
def _codec(cls: type) -> RecordCodec:
    api_key, version = _KEY_OF_CLASS[cls]
    return RecordCodec(
        record_class=cls,
        api_key=api_key,
        version=version,
        name=RECORD_NAMES[api_key],
        header=uvarint_bytes(FRAME_VERSION) + uvarint_bytes(api_key) + uvarint_bytes(version),
        write=entity_writer(cls),
        read=entity_reader(cls),
    )
