"""KRaft control records (reference §3.4): the key is {version int16 = 0, type int16}; the value is the kio
message for that type, whose first field is its own `Version`.

Kafka writes LeaderChangeMessage at version 0; v1 (with voter directory ids) is read too. The value's leading
int16 picks the schema version when decoding, so both round-trip.

One field is pykraft's own, Kafka has none: the target voter set of a quorum reassignment (AlterPartitionReassignments
on `__cluster_metadata-0`, KIP-642), carried by a VotersRecord as a top-level tagged field, tag
`PYKRAFT_TARGET_VOTERS_TAG` (1642, after KIP-642), whose value is a compact array of VotersRecord `Voter` structs
(ids, directory ids, endpoints, kraft.version ranges); an empty array says that no reassignment is in progress. The
VotersRecord itself names the voters as every VotersRecord does (the record changes no voter), so Kafka's parser
(RecordsIterator, ControlRecordUtils, kafka-dump-log) reads it as an ordinary VotersRecord and skips the unknown tag,
as its generated readers skip every unknown tagged field. It is written as `VotersRecordWithTarget(record, target)`
and decoded into `ControlRecord.voters_target` (None when a VotersRecord has no such tag).
"""

from __future__ import annotations

import enum
import io
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kio.schema.k_raft_version_record.v0 import KRaftVersionRecord
from kio.schema.leader_change_message.v0 import LeaderChangeMessage as LeaderChangeMessageV0
from kio.schema.leader_change_message.v1 import LeaderChangeMessage as LeaderChangeMessageV1
from kio.schema.snapshot_footer_record.v0 import SnapshotFooterRecord
from kio.schema.snapshot_header_record.v0 import SnapshotHeaderRecord
from kio.schema.voters_record.v0 import VotersRecord
from kio.serial import entity_reader, entity_writer
from kio.serial.errors import SerialError
from kio.serial.readers import Reader
from kio.serial.writers import Writer

from pykraft.protocol.wire_check import Edit, WireFormatError, guard_for, kio_input, read_uvarint, uvarint_bytes

from .batch import Record, SimpleRecord, encode_batch
from .errors import RecordsError

CONTROL_KEY_VERSION = 0
_KEY = struct.Struct(">hh")
_VERSION = struct.Struct(">h")


class ControlRecordType(enum.IntEnum):
    UNKNOWN = -1
    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


PYKRAFT_TARGET_VOTERS_TAG = 1642  # see the module docstring


@dataclass(frozen=True, slots=True)
class VotersRecordWithTarget:
    """A VotersRecord to write with pykraft's target tag: `target` is the target as a VotersRecord (no voters:
    no reassignment in progress); its Version field is not written."""

    record: VotersRecord
    target: VotersRecord


class InvalidControlRecordError(RecordsError):
    """A record in a control batch whose key or value cannot be decoded."""


# (type, schema version) -> kio class
_SCHEMAS: dict[tuple[ControlRecordType, int], type] = {
    (ControlRecordType.LEADER_CHANGE, 0): LeaderChangeMessageV0,
    (ControlRecordType.LEADER_CHANGE, 1): LeaderChangeMessageV1,
    (ControlRecordType.SNAPSHOT_HEADER, 0): SnapshotHeaderRecord,
    (ControlRecordType.SNAPSHOT_FOOTER, 0): SnapshotFooterRecord,
    (ControlRecordType.KRAFT_VERSION, 0): KRaftVersionRecord,
    (ControlRecordType.KRAFT_VOTERS, 0): VotersRecord,
}
_TYPE_OF_CLASS: dict[type, ControlRecordType] = {cls: kind for (kind, _), cls in _SCHEMAS.items()}
_TYPE_OF_CLASS[VotersRecordWithTarget] = ControlRecordType.KRAFT_VOTERS
_WRITERS: dict[type, Writer[Any]] = {cls: entity_writer(cls) for cls in _SCHEMAS.values()}
_READERS: dict[tuple[ControlRecordType, int], Reader[Any]] = {key: entity_reader(cls) for key, cls in _SCHEMAS.items()}
# Each walk knows the schema's other versions: Kafka rejects their tags instead of skipping them.
_GUARDS = {
    key: guard_for(cls, tuple(other for (kind, _), other in _SCHEMAS.items() if kind == key[0]))
    for key, cls in _SCHEMAS.items()
}
# What kio's reader raises on bytes that passed the walk but are still wrong (invalid UTF-8, a bad bool...).
_KIO_READ_ERRORS = (SerialError, ValueError, LookupError, TypeError, OverflowError, struct.error)


@dataclass(frozen=True, slots=True)
class ControlRecord:
    """A decoded control record. `message` is the kio object, or None for types KRaft does not decode
    (transaction markers, unknown types)."""

    type: ControlRecordType
    type_id: int
    message: Any
    voters_target: VotersRecord | None = None  # a VotersRecord's pykraft target tag, decoded (module docstring)


def control_record_type_of(message: object) -> ControlRecordType:
    try:
        return _TYPE_OF_CLASS[type(message)]
    except KeyError:
        raise TypeError(f"{type(message).__name__} is not a KRaft control record message") from None


def encode_control_record(message: object) -> SimpleRecord:
    """The key and value of one control record, ready for `encode_batch(..., control=True)`."""
    kind = control_record_type_of(message)
    if isinstance(message, VotersRecordWithTarget):
        return SimpleRecord(key=_KEY.pack(CONTROL_KEY_VERSION, kind), value=_with_target(message))
    buffer = io.BytesIO()
    _WRITERS[type(message)](buffer, message)
    return SimpleRecord(key=_KEY.pack(CONTROL_KEY_VERSION, kind), value=buffer.getvalue())


def _encoded_voters_record(record: VotersRecord) -> bytes:
    buffer = io.BytesIO()
    _WRITERS[VotersRecord](buffer, record)
    return buffer.getvalue()


def _with_target(message: VotersRecordWithTarget) -> bytes:
    """The VotersRecord's bytes with the target tag as its top-level tagged section (kio wrote it empty: 0)."""
    base, target = _encoded_voters_record(message.record), _encoded_voters_record(message.target)
    assert base[-1] == 0 and target[-1] == 0, "kio writes an empty top-level tagged section"
    value = target[_VERSION.size:-1]  # the Voters compact array alone
    tag = uvarint_bytes(1) + uvarint_bytes(PYKRAFT_TARGET_VOTERS_TAG) + uvarint_bytes(len(value))
    return base[:-1] + tag + value


def encode_control_batch(
    messages: Sequence[object], *, base_offset: int, partition_leader_epoch: int, timestamp_ms: int
) -> bytes:
    """A control batch holding `messages` in order (e.g. LeaderChange, KRaftVersion, Voters)."""
    return encode_batch(
        [encode_control_record(m) for m in messages],
        base_offset=base_offset,
        partition_leader_epoch=partition_leader_epoch,
        timestamp_ms=timestamp_ms,
        control=True,
    )


def decode_control_key(key: memoryview | bytes | None) -> tuple[ControlRecordType, int]:
    if key is None or len(key) < _KEY.size:
        raise InvalidControlRecordError(f"control record key must be {_KEY.size} bytes, got {0 if key is None else len(key)}")
    version, type_id = _KEY.unpack_from(key)
    if version < 0:
        raise InvalidControlRecordError(f"control record key version {version} is negative")
    try:
        return ControlRecordType(type_id), type_id
    except ValueError:
        return ControlRecordType.UNKNOWN, type_id


def decode_control_record(record: Record) -> ControlRecord:
    kind, type_id = decode_control_key(record.key)
    if kind not in (ControlRecordType.UNKNOWN, ControlRecordType.ABORT, ControlRecordType.COMMIT):
        cut: list[Edit] = []
        message = _decode_value(kind, record.value, cut)
        target = _target_of(record.value, cut) if kind is ControlRecordType.KRAFT_VOTERS and cut else None
        return ControlRecord(kind, type_id, message, target)
    return ControlRecord(kind, type_id, None)


def _target_of(value: memoryview | bytes | None, cut: list[Edit]) -> VotersRecord | None:
    """The pykraft target tag among the tagged fields the walk cut out of a VotersRecord (the last one: the
    top-level tagged section ends the record), decoded as the Voters array of a VotersRecord."""
    assert value is not None  # _decode_value refused a null value
    view = memoryview(value)
    for start, end, replacement in reversed(cut):
        if replacement:
            continue  # a count or size fixed around a cut, not a cut field
        tag, pos = read_uvarint(view, start, end)
        if tag != PYKRAFT_TARGET_VOTERS_TAG:
            continue
        _, pos = read_uvarint(view, pos, end)
        wrapped = _VERSION.pack(0) + bytes(view[pos:end]) + b"\x00"
        target = _decode_value(ControlRecordType.KRAFT_VOTERS, wrapped, [])
        assert isinstance(target, VotersRecord)
        return target
    return None


def _decode_value(kind: ControlRecordType, value: memoryview | bytes | None, cut: list[Edit]) -> object:
    if value is None or len(value) < _VERSION.size:
        raise InvalidControlRecordError(f"{kind.name} control record has no value")
    (version,) = _VERSION.unpack_from(value)
    reader = _READERS.get((kind, version))
    if reader is None:
        raise InvalidControlRecordError(f"{kind.name} control record version {version} is not supported")
    view = memoryview(value).toreadonly()  # kio refuses writable buffers (a log read into a bytearray)
    try:
        end, edits = _GUARDS[(kind, version)].walk(view, 0, len(view))
        cut.extend(edits)
    except WireFormatError as exc:
        raise InvalidControlRecordError(f"cannot decode {kind.name} control record: {exc}") from None
    if end != len(view):
        raise InvalidControlRecordError(f"{kind.name} control record has {len(view) - end} trailing bytes")
    source, offset, stop = kio_input(view, 0, end, edits)
    try:
        message, size = reader(source, offset)
    except _KIO_READ_ERRORS as exc:
        raise InvalidControlRecordError(f"cannot decode {kind.name} control record: {exc}") from None
    if offset + size != stop:
        # The walk and kio read the same schema; a disagreement must not pass silently.
        reason = f"kio read {size} bytes, the walk {stop - offset}"
        raise InvalidControlRecordError(f"{kind.name} control record: {reason}")
    return message
