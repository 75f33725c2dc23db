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
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from pykraft.records import RecordBatch, RecordsError, TruncatedBatchError, iter_batches
from pykraft.records.control import decode_control_record
from pykraft.records.crc import crc32c
from pykraft.records.metadata import MetadataRecordError, decode_metadata_record, metadata_record_envelope
from pykraft.records.metadata.json_view import message_to_dict

from .layout import FileSlice, LogFile

ROWS_PER_BATCH = 65536
TORN_TAIL = "torn tail: "  # prefix of the error of a truncated last batch at the end of a file (a crash artefact)

LOG_FIELDS: list[tuple[str, pa.DataType]] = [
    ("cluster_id", pa.string()), ("node_id", pa.int32()), ("directory_id", pa.string()), ("topic", pa.string()),
    ("partition", pa.int32()), ("file", pa.string()), ("position", pa.int64()), ("base_offset", pa.int64()),
    ("offset", pa.int64()), ("leader_epoch", pa.int32()), ("timestamp", pa.int64()), ("is_control", pa.bool_()),
    ("control_type", pa.string()), ("key", pa.binary()), ("value", pa.binary()), ("crc_valid", pa.bool_()),
    ("batch_digest", pa.int64()), ("error", pa.string()),
]
METADATA_FIELDS: list[tuple[str, pa.DataType]] = [
    ("record_type", pa.string()), ("record_version", pa.int32()), ("payload", pa.string()),
]
SNAPSHOT_FIELDS: list[tuple[str, pa.DataType]] = [("snapshot_end_offset", pa.int64()), ("snapshot_epoch", pa.int32())]


def arrow_schema(*, metadata: bool, snapshot: bool = False) -> pa.Schema:
    fields = LOG_FIELDS + (METADATA_FIELDS if metadata else []) + (SNAPSHOT_FIELDS if snapshot else [])
    return pa.schema([pa.field(n, t) for n, t in fields])


def spark_ddl(*, metadata: bool, snapshot: bool = False) -> str:
    """The same schema as a Spark DDL string (Arrow batches must match it exactly)."""
    names = {pa.string(): "STRING", pa.int32(): "INT", pa.int64(): "BIGINT", pa.bool_(): "BOOLEAN",
             pa.binary(): "BINARY"}
    schema = arrow_schema(metadata=metadata, snapshot=snapshot)
    return ", ".join(f"`{f.name}` {names[f.type]}" for f in schema)


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


def payload_of(batch: RecordBatch, record: Any) -> tuple[str | None, int | None, str | None, str | None]:
    """(record type, version, payload JSON, problem) of one record, control or metadata."""
    try:
        if batch.is_control:
            control = decode_control_record(record)
            fields = message_to_dict(control.message) if control.message is not None else {}
            return control.type.name, None, json.dumps(fields, default=str), None
        if record.value is None:
            return None, None, None, "null value"
        envelope = metadata_record_envelope(decode_metadata_record(record.value))
        return envelope["type"], envelope["version"], json.dumps(envelope["data"], default=str), None
    except (RecordsError, MetadataRecordError) as exc:
        return None, None, None, str(exc)


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
                 at_file_end: bool = True, rows_per_batch: int = ROWS_PER_BATCH) -> Iterator[pa.RecordBatch]:
    """Arrow batches of the records in `data` (the bytes of `file` from byte `start`)."""
    columns = _Columns(arrow_schema(metadata=metadata, snapshot=snapshot))
    common: dict[str, Any] = {
        "cluster_id": file.node.cluster_id, "node_id": file.node.node_id, "directory_id": file.node.directory_id,
        "topic": file.topic, "partition": file.partition, "file": file.path,
    }
    if snapshot:
        common.update(snapshot_end_offset=file.base_offset, snapshot_epoch=file.snapshot_epoch)
    position = start
    try:
        for batch in iter_batches(data, verify_crc=False):
            _batch_rows(columns, common, batch, position, metadata)
            position += batch.size_in_bytes
            if len(columns) >= rows_per_batch:
                yield columns.flush()
    except RecordsError as exc:
        torn = isinstance(exc, TruncatedBatchError) and at_file_end
        columns.row(**common, position=start + exc.position, offset=-1 if exc.base_offset is None else exc.base_offset,
                    base_offset=exc.base_offset, error=(TORN_TAIL if torn else "") + str(exc))
    if len(columns):
        yield columns.flush()


def _batch_rows(columns: _Columns, common: dict[str, Any], batch: RecordBatch, position: int, metadata: bool) -> None:
    """Append one batch column by column (the batch-wide values repeated): a dict per record would cost more
    than the decoding itself."""
    header = dict(common, position=position, base_offset=batch.base_offset, leader_epoch=batch.partition_leader_epoch,
                  is_control=batch.is_control, crc_valid=batch.crc_valid, batch_digest=crc32c(batch.buffer[8:]))
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
    if metadata:
        payloads = [payload_of(batch, r) for r in records]
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
