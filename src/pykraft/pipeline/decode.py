"""Segment and snapshot bytes -> Arrow record batches, one row per record, with the project's own codecs
(`records/`: batch framing, control records, metadata records). No Spark here: the data sources call it on the
executors and `benchmarks/pipeline.py` times it alone.

A batch whose records cannot be decoded gives one row at its base offset with `error` set, and a framing error
(impossible length, bad magic, torn tail) one row at the position where reading stopped, so that damage is a row
the audits see, never a failed task. With `metadata=True` three more columns hold the record type, its version
and its payload as JSON (control records too: LeaderChange, KRaftVoters...).
"""

from __future__ import annotations

import json
import mmap
import struct
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from pykraft.records import RecordBatch, RecordsError, TruncatedBatchError, iter_batches
from pykraft.records.compression import Compression
from pykraft.records.control import ControlRecordType, decode_control_record
from pykraft.records.crc import crc32c
from pykraft.records.metadata import FRAME_VERSION, MetadataRecordError, decode_metadata_record
from pykraft.records.metadata.json_view import message_to_dict

from .columnar import RunColumns, decode_run
from .layout import FileSlice, LogFile
from .coordinator_payload import TXN_TOPIC, txn_payload
from .group_payload import GROUP_TOPIC, group_payload
from .payload import metadata_columns

METADATA_TOPIC = "__cluster_metadata"

_END_TXN_MARKER = struct.Struct(">hi")
ROWS_PER_BATCH = 65536
TORN_TAIL = "torn tail: "  # prefix of the error of a truncated last batch at the end of a file (a crash artefact)

LOG_FIELDS: list[tuple[str, pa.DataType]] = [
    ("cluster_id", pa.string()), ("node_id", pa.int32()), ("directory_id", pa.string()), ("topic", pa.string()),
    ("partition", pa.int32()), ("file", pa.string()), ("position", pa.int64()), ("base_offset", pa.int64()),
    ("offset", pa.int64()), ("leader_epoch", pa.int32()), ("timestamp", pa.int64()), ("is_control", pa.bool_()),
    ("control_type", pa.string()), ("key", pa.binary()), ("value", pa.binary()), ("crc_valid", pa.bool_()),
    ("batch_digest", pa.int64()), ("error", pa.string()),
    # The batch's producer fields (-1: none) and transactional flag: what the idempotence audit reads.
    ("producer_id", pa.int64()), ("producer_epoch", pa.int16()), ("base_sequence", pa.int32()),
    ("last_offset_delta", pa.int32()), ("is_transactional", pa.bool_()),
]
METADATA_FIELDS: list[tuple[str, pa.DataType]] = [
    ("record_type", pa.string()), ("record_version", pa.int32()), ("payload", pa.string()),
]
SNAPSHOT_FIELDS: list[tuple[str, pa.DataType]] = [("snapshot_end_offset", pa.int64()), ("snapshot_epoch", pa.int32())]
# Columns every row has, an error row too: declared NOT NULL, so that Spark's row copies skip their null checks and
# Parquet stores them as required columns (no definition level per value).
# The others stay nullable: a framing-error row has no base offset (at times), leader epoch, timestamp, control
# flag, CRC verdict or digest. Declaring those six NOT NULL anyway (error rows would need -1/false sentinels, and
# the audits would have to tell them from real values) was measured, not done: alternating A/Bs (local[2], 2 M
# records, median CPU s) gave 4.73 -> 4.51 at load 2-5, and 5.31 -> 5.30 at load 6: no clear gain for that cost.
NOT_NULL = frozenset({"cluster_id", "node_id", "topic", "partition", "file", "position", "offset",
                      "snapshot_end_offset", "snapshot_epoch"})


_NUMPY_TYPES = {pa.int16(): np.int16, pa.int32(): np.int32, pa.int64(): np.int64, pa.bool_(): np.bool_}


def arrow_schema(*, metadata: bool, snapshot: bool = False) -> pa.Schema:
    fields = LOG_FIELDS + (METADATA_FIELDS if metadata else []) + (SNAPSHOT_FIELDS if snapshot else [])
    return pa.schema([pa.field(n, t, nullable=n not in NOT_NULL) for n, t in fields])


def spark_ddl(*, metadata: bool, snapshot: bool = False) -> str:
    """The same schema as a Spark DDL string (Arrow batches must match it exactly)."""
    names = {pa.string(): "STRING", pa.int16(): "SMALLINT", pa.int32(): "INT", pa.int64(): "BIGINT",
             pa.bool_(): "BOOLEAN", pa.binary(): "BINARY"}
    schema = arrow_schema(metadata=metadata, snapshot=snapshot)
    return ", ".join(f"`{f.name}` {names[f.type]}{'' if f.nullable else ' NOT NULL'}" for f in schema)


class _Columns:
    """Column lists for one Arrow batch; `row` appends one record."""

    def __init__(self, schema: pa.Schema) -> None:
        self.schema = schema
        self.data: dict[str, list[Any]] = {name: [] for name in schema.names}

    def __len__(self) -> int:
        return len(self.data["offset"])

    def row(self, **values: Any) -> None:
        for name, column in self.data.items():
            column.append(values.get(name))

    def flush(self) -> pa.RecordBatch:
        batch = pa.RecordBatch.from_arrays(
            [pa.array(self.data[f.name], type=f.type) for f in self.schema], schema=self.schema)
        for column in self.data.values():
            column.clear()
        return batch


PayloadOf = Callable[[Any, Any], tuple[str | None, int | None, str | None, str | None]]


def payload_decoder(topic: str) -> PayloadOf | None:
    """(key, value) -> (record type, version, payload JSON, problem) for the records of `topic`'s plain batches,
    None for a topic whose records are the user's own bytes (no payload columns, nothing tried)."""
    if topic == METADATA_TOPIC:
        return lambda _key, value: metadata_payload(value)
    if topic == GROUP_TOPIC:
        return group_payload
    if topic == TXN_TOPIC:
        return txn_payload
    return None


def payload_of(batch: RecordBatch, record: Any, decoder: PayloadOf | None = None
               ) -> tuple[str | None, int | None, str | None, str | None]:
    """(record type, version, payload JSON, problem) of one record: a control record (any topic), or a plain one
    through `decoder` (metadata records by default)."""
    if not batch.is_control:
        if decoder is None:
            return metadata_payload(record.value)
        return decoder(record.key, record.value)
    try:
        control = decode_control_record(record)
    except RecordsError as exc:
        return None, None, None, str(exc)
    if control.type in (ControlRecordType.COMMIT, ControlRecordType.ABORT):
        return _end_txn_marker(control.type.name, record.value)
    fields = message_to_dict(control.message) if control.message is not None else {}
    return control.type.name, None, json.dumps(fields, default=str), None


def _end_txn_marker(kind: str, value: Any) -> tuple[str | None, int | None, str | None, str | None]:
    """A transaction marker's EndTxnMarker value (version int16, coordinatorEpoch int32), as Kafka's dump tool
    prints it; a value too short for it keeps the marker's type with the problem beside it."""
    if value is None or len(value) < _END_TXN_MARKER.size:
        return kind, None, None, f"{kind} marker without an EndTxnMarker value"
    version, coordinator_epoch = _END_TXN_MARKER.unpack_from(value)
    return kind, version, json.dumps({"version": version, "coordinatorEpoch": coordinator_epoch}), None


def metadata_payload(value: Any) -> tuple[str | None, int | None, str | None, str | None]:
    """(record type, version, payload JSON, problem) of one metadata record's value (None: a null value)."""
    if value is None:
        return None, None, None, "null value"
    if not len(value) or (value[0] != FRAME_VERSION and value[0] < 0x80):
        # A client's own bytes in the log (the quickstart's JSON): the frame version a decode would refuse at its
        # first byte (as controller/log_replay.may_be_metadata_record), without the decode's exception.
        return None, None, None, "not a metadata record"
    try:
        record = decode_metadata_record(value)
    except (RecordsError, MetadataRecordError) as exc:
        return None, None, None, str(exc)
    return (*metadata_columns(record), None)


def control_type_of(record: Any) -> str | None:
    try:
        return decode_control_record(record).type.name
    except RecordsError:
        return None


def _read_range(path: str, start: int, end: int) -> bytes | mmap.mmap | memoryview:
    with open(path, "rb") as f:
        if f.seek(0, 2) == 0:
            return b""
        whole = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    return memoryview(whole)[start: (len(whole) if end < 0 else end)]


def decode_slice(piece: FileSlice, *, metadata: bool, rows_per_batch: int = ROWS_PER_BATCH) -> Iterator[pa.RecordBatch]:
    yield from decode_bytes(_read_range(piece.file.path, piece.start, piece.end), piece.file, start=piece.start,
                            metadata=metadata, at_file_end=piece.last_slice, rows_per_batch=rows_per_batch)


def decode_bytes(data: Any, file: LogFile, *, start: int = 0, metadata: bool, snapshot: bool = False,
                 at_file_end: bool = True, rows_per_batch: int = ROWS_PER_BATCH,
                 vectorised: bool = True) -> Iterator[pa.RecordBatch]:
    """Arrow batches of the records in `data` (the bytes of `file` from byte `start`).

    Runs of plain (uncompressed, non-control) batches are decoded column-wise (columnar.py); control and
    compressed batches, and any run the vectorised path declines, record by record (`vectorised=False`: all of
    them, the reference the tests compare against)."""
    schema = arrow_schema(metadata=metadata, snapshot=snapshot)
    out = _Output(schema, data, file, start, metadata, snapshot, rows_per_batch)
    position = start
    try:
        for batch in iter_batches(data, verify_crc=False):
            if vectorised and not batch.is_control and batch.compression == Compression.NONE:
                out.plain(position - start, batch)
            else:
                out.slow(position, batch)
            position += batch.size_in_bytes
            yield from out.ready()
    except RecordsError as exc:
        torn = isinstance(exc, TruncatedBatchError) and at_file_end
        out.slow_row(position=start + exc.position, offset=-1 if exc.base_offset is None else exc.base_offset,
                     base_offset=exc.base_offset, error=(TORN_TAIL if torn else "") + str(exc))
    yield from out.ready(final=True)


class _Output:
    """Collects the rows of one file slice in order: pending plain batches (decoded column-wise in one go),
    rows decoded one by one, and finished Arrow parts, which leave as batches of about `rows_per_batch` rows."""

    def __init__(self, schema: pa.Schema, data: Any, file: LogFile, start: int, metadata: bool, snapshot: bool,
                 rows_per_batch: int) -> None:
        self.schema, self.raw, self.start, self.metadata = schema, data, start, metadata
        # The payload columns are decoded only where the records are metadata (or group records): a user
        # partition's records are the user's bytes, left as they are.
        self.decoder = payload_decoder(file.topic) if metadata else None
        self.buf = np.frombuffer(data, dtype=np.uint8) if len(data) else np.zeros(0, np.uint8)
        self.common: dict[str, Any] = {
            "cluster_id": file.node.cluster_id, "node_id": file.node.node_id, "directory_id": file.node.directory_id,
            "topic": file.topic, "partition": file.partition, "file": file.column,
        }
        if snapshot:
            self.common.update(snapshot_end_offset=file.base_offset, snapshot_epoch=file.snapshot_epoch)
        self.rows_per_batch = rows_per_batch
        self.columns = _Columns(schema)
        self.pending: list[tuple[int, RecordBatch]] = []
        self.pending_rows = 0
        self.parts: list[pa.RecordBatch] = []
        self.part_rows = 0
        self.constants: dict[str, pa.Array] = {}

    def plain(self, relative_position: int, batch: RecordBatch) -> None:
        self._flush_rows()
        self.pending.append((relative_position, batch))
        self.pending_rows += batch.record_count

    def slow(self, position: int, batch: RecordBatch) -> None:
        self._flush_pending()
        _batch_rows(self.columns, self.common, batch, position, self.metadata, self.decoder)

    def slow_row(self, **values: Any) -> None:
        self._flush_pending()
        self.columns.row(**self.common, **values)

    def ready(self, final: bool = False) -> Iterator[pa.RecordBatch]:
        if final or self.pending_rows >= self.rows_per_batch:
            self._flush_pending()
        if final or len(self.columns) >= self.rows_per_batch:
            self._flush_rows()
        if self.parts and (final or self.part_rows >= self.rows_per_batch):
            parts = self.parts
            self.parts, self.part_rows = [], 0
            if len(parts) == 1:
                yield parts[0]
            else:
                yield from pa.Table.from_batches(parts, self.schema).combine_chunks().to_batches()

    def _add(self, part: pa.RecordBatch) -> None:
        self.parts.append(part)
        self.part_rows += part.num_rows

    def _flush_rows(self) -> None:
        if len(self.columns):
            self._add(self.columns.flush())

    def _flush_pending(self) -> None:
        if not self.pending:
            return
        pending, self.pending, self.pending_rows = self.pending, [], 0
        run = decode_run(self.buf, self.raw, pending)
        if run is None:
            for relative, batch in pending:
                _batch_rows(self.columns, self.common, batch, self.start + relative, self.metadata,
                            self.decoder)
            self._flush_rows()
        elif len(run.offset):
            self._add(self._run_batch(pending, run))

    def _run_batch(self, pending: list[tuple[int, RecordBatch]], run: RunColumns) -> pa.RecordBatch:
        count = len(run.offset)
        per_batch = {
            "position": [self.start + relative for relative, _ in pending],
            "base_offset": [b.base_offset for _, b in pending],
            "leader_epoch": [b.partition_leader_epoch for _, b in pending],
            "is_control": [False] * len(pending),
            "crc_valid": [b.crc_valid for _, b in pending],
            "batch_digest": [crc32c(b.buffer[8:]) for _, b in pending],
            "producer_id": [b.producer_id for _, b in pending],
            "producer_epoch": [b.producer_epoch for _, b in pending],
            "base_sequence": [b.base_sequence for _, b in pending],
            "last_offset_delta": [b.last_offset_delta for _, b in pending],
            "is_transactional": [b.is_transactional for _, b in pending],
        }
        arrays: dict[str, pa.Array] = {"offset": pa.array(run.offset, pa.int64()),
                                       "timestamp": pa.array(run.timestamp, pa.int64()),
                                       "key": run.key, "value": run.value}
        # Each batch's values repeated over its records: numpy's repeat, then Arrow over the same memory (an Arrow
        # take by record cost twice as much).
        counts = np.bincount(run.batch_of, minlength=len(pending))
        for name, values in per_batch.items():
            kind = self.schema.field(name).type
            arrays[name] = pa.array(np.repeat(np.asarray(values, dtype=_NUMPY_TYPES[kind]), counts), kind)
        if self.decoder is not None:
            arrays.update(_payload_columns(self.raw, run, self.decoder))
        columns = [arrays[field.name] if field.name in arrays else self._constant(field, count)
                   for field in self.schema]
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)

    def _constant(self, field: pa.Field, count: int) -> pa.Array:
        """A column holding the slice's one value (cluster, node, topic, file...) or null on every row: made once
        per slice and cut to each batch's length (a zero-copy slice; the IPC writer sends only its rows). Making
        the four string columns anew for every batch was 12% of the plain decoding's CPU."""
        column = self.constants.get(field.name)
        if column is None or len(column) < count:
            value = self.common.get(field.name)
            size = max(count, self.rows_per_batch)
            column = pa.nulls(size, field.type) if value is None else pa.repeat(pa.scalar(value, field.type), size)
            self.constants[field.name] = column
        return column.slice(0, count)


def _payload_columns(raw: Any, run: RunColumns, decoder: PayloadOf) -> dict[str, pa.Array]:
    """record_type, record_version and payload of a run's plain records, as payload_of gives them."""
    types, versions, payloads = [], [], []
    pairs: Iterator[tuple[Any, Any]]
    if decoder in (group_payload, txn_payload):  # the coordinators' records: key and value
        pairs = zip(run.key.to_pylist(), run.value.to_pylist())
    else:  # metadata: the value alone, read in place (no Python bytes for the keys)
        pairs = ((None, None if length < 0 else raw[start: start + length])
                 for start, length in zip(run.value_start.tolist(), run.value_length.tolist()))
    for key, value in pairs:
        kind, version, payload = decoder(key, value)[:3]
        types.append(kind)
        versions.append(version)
        payloads.append(payload)
    return {"record_type": pa.array(types, pa.string()), "record_version": pa.array(versions, pa.int32()),
            "payload": pa.array(payloads, pa.string())}


def _batch_rows(columns: _Columns, common: dict[str, Any], batch: RecordBatch, position: int, metadata: bool,
                decoder: PayloadOf | None) -> None:
    """Append one batch column by column (the batch-wide values repeated): a dict per record would cost more
    than the decoding itself. Payload columns: control records always (with `metadata`), plain records where
    `decoder` reads them."""
    header = dict(common, position=position, base_offset=batch.base_offset, leader_epoch=batch.partition_leader_epoch,
                  is_control=batch.is_control, crc_valid=batch.crc_valid, batch_digest=crc32c(batch.buffer[8:]),
                  producer_id=batch.producer_id, producer_epoch=batch.producer_epoch,
                  base_sequence=batch.base_sequence, last_offset_delta=batch.last_offset_delta,
                  is_transactional=batch.is_transactional)
    try:
        records = list(batch.records())
    except RecordsError as exc:
        columns.row(**header, offset=batch.base_offset, timestamp=batch.base_timestamp,
                    error=f"cannot decode the records of the batch: {exc}")
        return
    count = len(records)
    per_record: dict[str, list[Any]] = {
        "offset": [r.offset for r in records], "timestamp": [r.timestamp for r in records],
        "key": [None if r.key is None else bytes(r.key) for r in records],
        "value": [None if r.value is None else bytes(r.value) for r in records],
    }
    if metadata and (batch.is_control or decoder is not None):
        payloads = [payload_of(batch, r, decoder) for r in records]
        per_record["record_type"] = [p[0] for p in payloads]
        per_record["record_version"] = [p[1] for p in payloads]
        per_record["payload"] = [p[2] for p in payloads]
        if batch.is_control:
            per_record["control_type"] = per_record["record_type"]
            per_record["error"] = [p[3] for p in payloads]
    elif batch.is_control:
        per_record["control_type"] = [control_type_of(r) for r in records]
    for name, column in columns.data.items():
        if name in per_record:
            column.extend(per_record[name])
        else:
            column.extend([header.get(name)] * count)
