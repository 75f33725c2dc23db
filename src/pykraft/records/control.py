"""KRaft control records (reference §3.4): the key is {version int16 = 0, type int16}; the value is the kio
message for that type, whose first field is its own `Version`.

Kafka writes LeaderChangeMessage at version 0; v1 (with voter directory ids) is read too. The value's leading
int16 picks the schema version when decoding, so both round-trip.

One type is pykraft's own, Kafka has none: `PYKRAFT_VOTERS_TARGET` (1642, after KIP-642), the target voter set of a
quorum reassignment (AlterPartitionReassignments on `__cluster_metadata-0`). Its value is a VotersRecord v0 naming
the target voters (ids, directory ids, endpoints, kraft.version ranges); a record with no voters says that no
reassignment is in progress. It is written as `VotersTarget(record)` and decodes to the plain VotersRecord. Kafka's
`kafka-dump-log` prints it as `controlType: UNKNOWN(1642)`; Kafka's raft client (RecordsIterator) refuses it with
"Unknown control record type UNKNOWN".

These values come from log segments and snapshots that may be torn or corrupt, so each one is walked by
`pykraft.protocol.wire_check` before kio's native reader sees it (a corrupt array length would otherwise abort
the process); tagged fields a newer Kafka added are cut out, as Kafka skips them.
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

from pykraft.protocol.wire_check import WireFormatError, guard_for, kio_input

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
    PYKRAFT_VOTERS_TARGET = 1642  # pykraft's own: see the module docstring


@dataclass(frozen=True, slots=True)
class VotersTarget:
    """A PYKRAFT_VOTERS_TARGET control record to write: `record` is the target as a VotersRecord (no voters: none)."""

    record: VotersRecord


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
    (ControlRecordType.PYKRAFT_VOTERS_TARGET, 0): VotersRecord,
}
_TYPE_OF_CLASS: dict[type, ControlRecordType] = {cls: kind for (kind, _), cls in _SCHEMAS.items()
                                                 if kind is not ControlRecordType.PYKRAFT_VOTERS_TARGET}
_TYPE_OF_CLASS[VotersTarget] = ControlRecordType.PYKRAFT_VOTERS_TARGET
_WRITERS = {cls: entity_writer(cls) for cls in _SCHEMAS.values()}
_READERS = {key: entity_reader(cls) for key, cls in _SCHEMAS.items()}
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


def control_record_type_of(message: object) -> ControlRecordType:
    try:
        return _TYPE_OF_CLASS[type(message)]
    except KeyError:
        raise TypeError(f"{type(message).__name__} is not a KRaft control record message") from None


def encode_control_record(message: object) -> SimpleRecord:
    """The key and value of one control record, ready for `encode_batch(..., control=True)`."""
    kind = control_record_type_of(message)
    if isinstance(message, VotersTarget):
        message = message.record
    buffer = io.BytesIO()
    _WRITERS[type(message)](buffer, message)
    return SimpleRecord(key=_KEY.pack(CONTROL_KEY_VERSION, kind), value=buffer.getvalue())


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
        return ControlRecord(kind, type_id, _decode_value(kind, record.value))
    return ControlRecord(kind, type_id, None)


def _decode_value(kind: ControlRecordType, value: memoryview | bytes | None) -> object:
    if value is None or len(value) < _VERSION.size:
        raise InvalidControlRecordError(f"{kind.name} control record has no value")
    (version,) = _VERSION.unpack_from(value)
    reader = _READERS.get((kind, version))
    if reader is None:
        raise InvalidControlRecordError(f"{kind.name} control record version {version} is not supported")
    view = memoryview(value).toreadonly()  # kio refuses writable buffers (a log read into a bytearray)
    try:
        end, edits = _GUARDS[(kind, version)].walk(view, 0, len(view))
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
