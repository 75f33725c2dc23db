"""`pykraft dump-log`: print every batch and record of metadata log segments and snapshots, decoding control
and metadata records, in the format of Kafka's `kafka-dump-log --cluster-metadata-decoder` (or one JSON object
per record with --json); `.index` and `.timeindex` files are dumped as Kafka dumps them (dump_index.py), and so
are a partition's producer snapshots, `<offset>.snapshot` (dump_producer_snapshot.py).

A damaged file is printed as far as it can be read; the damage is then reported with its byte position and the
command exits non-zero. A batch whose CRC does not match is shown with `isvalid: false` and its records are
decoded if they still parse, because an operator inspecting a damaged log wants to see as much as possible.
"""

from __future__ import annotations

import base64
import json
import mmap
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from pykraft.records import Record, RecordBatch, RecordsError, iter_batches
from pykraft.records.control import ControlRecordType, decode_control_record
from pykraft.records.metadata import MetadataRecordError, decode_metadata_record, metadata_record_envelope
from pykraft.records.metadata.json_view import message_to_dict, to_jackson_json

from .dump_index import INDEX_SUFFIXES, dump_index_file
from .dump_producer_snapshot import PRODUCER_SNAPSHOT_SUFFIX, dump_producer_snapshot_file

_SEGMENT_NAME = re.compile(r"^(\d{20})\.log$")
_SNAPSHOT_NAME = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")

# Kafka's dump tool labels control records with these names.
_CONTROL_LABELS = {
    ControlRecordType.LEADER_CHANGE: "LeaderChange",
    ControlRecordType.SNAPSHOT_HEADER: "SnapshotHeader",
    ControlRecordType.SNAPSHOT_FOOTER: "SnapshotFooter",
    ControlRecordType.KRAFT_VERSION: "KRaftVersion",
    ControlRecordType.KRAFT_VOTERS: "KRaftVoters",
}


@dataclass(frozen=True, slots=True)
class DecodedPayload:
    """What a record holds, as dump-log shows it: exactly one of control / metadata / raw value."""

    control: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    raw_value: bytes | None = None
    problem: str | None = None


def decode_payload(batch: RecordBatch, record: Record) -> DecodedPayload:
    if batch.is_control:
        try:
            control = decode_control_record(record)
        except RecordsError as exc:
            return DecodedPayload(raw_value=_raw(record), problem=str(exc))
        if control.type in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
            epoch = int.from_bytes(bytes(record.value)[2:6], "big", signed=True) if record.value is not None \
                and len(record.value) >= 6 else -1
            return DecodedPayload(control={"type": "endTxnMarker", "marker": control.type.name,
                                           "coordinatorEpoch": epoch})
        label = _CONTROL_LABELS.get(control.type, f"Control{control.type_id}")
        fields = message_to_dict(control.message) if control.message is not None else {}
        return DecodedPayload(control={"type": label, **fields})
    if record.value is None:
        return DecodedPayload(problem="null value")
    try:
        message = decode_metadata_record(record.value)
    except MetadataRecordError as exc:
        return DecodedPayload(raw_value=bytes(record.value), problem=str(exc))
    return DecodedPayload(metadata=metadata_record_envelope(message))


def _raw(record: Record) -> bytes | None:
    return None if record.value is None else bytes(record.value)


# ---- text format ------------------------------------------------------------------------------------------


def batch_line(batch: RecordBatch, position: int, crc_valid: bool) -> str:
    last_sequence = batch.base_sequence + batch.last_offset_delta if batch.base_sequence >= 0 else -1
    delete_horizon = f"OptionalLong[{batch.base_timestamp}]" if batch.attributes & 0x40 else "OptionalLong.empty"
    return (
        f"baseOffset: {batch.base_offset} lastOffset: {batch.last_offset} count: {batch.record_count} "
        f"baseSequence: {batch.base_sequence} lastSequence: {last_sequence} producerId: {batch.producer_id} "
        f"producerEpoch: {batch.producer_epoch} partitionLeaderEpoch: {batch.partition_leader_epoch} "
        f"isTransactional: {str(batch.is_transactional).lower()} isControl: {str(batch.is_control).lower()} "
        f"deleteHorizonMs: {delete_horizon} position: {position} CreateTime: {batch.max_timestamp} "
        f"size: {batch.size_in_bytes} magic: {batch.magic} compresscodec: {batch.compression.name.lower()} "
        f"crc: {batch.crc} isvalid: {str(crc_valid).lower()}"
    )


def record_line(record: Record, payload: DecodedPayload) -> str:
    key_size = -1 if record.key is None else len(record.key)
    value_size = -1 if record.value is None else len(record.value)
    header_keys = "[" + ",".join(k for k, _ in record.headers) + "]"
    line = (
        f"| offset: {record.offset} CreateTime: {record.timestamp} keySize: {key_size} valueSize: {value_size} "
        f"sequence: -1 headerKeys: {header_keys}"
    )
    if payload.control is not None and payload.control["type"] == "endTxnMarker":  # a transaction's COMMIT/ABORT
        return f"{line} endTxnMarker: {payload.control['marker']} coordinatorEpoch: {payload.control['coordinatorEpoch']}"
    if payload.control is not None:
        fields = {k: v for k, v in payload.control.items() if k != "type"}
        label = payload.control["type"]
        # Kafka's DumpLogSegments writes "LeaderChange: {...}" but "SnapshotHeader {...}", "KRaftVersion {...}", ...
        separator = ": " if label == "LeaderChange" else " "
        return f"{line} {label}{separator}{_compact_json(fields)}"
    if payload.metadata is not None:
        return f"{line} payload: {_compact_json(payload.metadata)}"
    text = base64.b64encode(payload.raw_value or b"").decode("ascii")
    return f"{line} undecodable: {payload.problem} value(base64): {text}"


def _compact_json(value: Any) -> str:
    return to_jackson_json(value)  # Kafka's tool writes JSON with Jackson; match it character for character


# ---- JSON format ------------------------------------------------------------------------------------------


def record_object(file: str, batch: RecordBatch, record: Record, payload: DecodedPayload, crc_valid: bool) -> dict:
    obj: dict[str, Any] = {
        "file": file,
        "baseOffset": batch.base_offset,
        "offset": record.offset,
        "leaderEpoch": batch.partition_leader_epoch,
        "timestamp": record.timestamp,
        "isControl": batch.is_control,
        "crcValid": crc_valid,
    }
    if payload.control is not None:
        obj["control"] = payload.control
    elif payload.metadata is not None:
        meta = payload.metadata
        obj["metadata"] = {"type": meta["type"], "version": meta["version"], **meta["data"]}
    else:
        obj["value"] = None if payload.raw_value is None else base64.b64encode(payload.raw_value).decode("ascii")
        obj["error"] = payload.problem
    return obj


# ---- driver -----------------------------------------------------------------------------------------------


def file_preamble(path: Path) -> list[str]:
    lines = [f"Dumping {path}"]
    if match := _SEGMENT_NAME.match(path.name):
        lines.append(f"Log starting offset: {int(match.group(1))}")
    elif match := _SNAPSHOT_NAME.match(path.name):
        lines.append(f"Snapshot end offset: {int(match.group(1))}, epoch: {int(match.group(2))}")
    return lines


def read_file(path: Path) -> bytes | mmap.mmap:
    with path.open("rb") as f:
        size = path.stat().st_size
        if size == 0:
            return b""
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)


def _batches_with_positions(data: bytes | mmap.mmap) -> Iterator[tuple[int, RecordBatch]]:
    position = 0
    for batch in iter_batches(data, verify_crc=False):
        yield position, batch
        position += batch.size_in_bytes


def dump_file(path: Path, as_json: bool, out: TextIO) -> list[str]:
    """Print one file; return the problems found (empty when the file is sound)."""
    problems: list[str] = []
    if not as_json:
        print("\n".join(file_preamble(path)), file=out)
    data = read_file(path)
    view = memoryview(data)
    try:
        for position, batch in _batches_with_positions(view):
            crc_valid = batch.crc_valid
            if not crc_valid:
                problems.append(
                    f"{path}: CRC mismatch in the batch at byte position {position} (base offset {batch.base_offset})"
                )
            if not as_json:
                print(batch_line(batch, position, crc_valid), file=out)
            try:
                records = list(batch.records())
            except RecordsError as exc:
                problems.append(
                    f"{path}: cannot decode the records of the batch at byte position {position} "
                    f"(base offset {batch.base_offset}): {exc}"
                )
                continue
            for record in records:
                payload = decode_payload(batch, record)
                if as_json:
                    obj = record_object(str(path), batch, record, payload, crc_valid)
                    print(json.dumps(obj), file=out)
                else:
                    print(record_line(record, payload), file=out)
            del records
    except RecordsError as exc:
        offset = "" if exc.base_offset is None else f" (base offset {exc.base_offset})"
        problems.append(f"{path}: {exc} at byte position {exc.position}{offset}")
    finally:
        view.release()
        if isinstance(data, mmap.mmap):
            try:
                data.close()
            except BufferError:
                pass  # record views still alive; the map is released when they are
    return problems


def dump_files(paths: list[Path], as_json: bool, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Dump every file; return the exit code (0 when every file was read completely and intact)."""
    out = out or sys.stdout  # looked up per call: test runners swap sys.stdout
    err = err or sys.stderr
    failed = False
    for path in paths:
        try:
            if path.suffix in INDEX_SUFFIXES:
                problems = dump_index_file(path, as_json, out)
            elif path.suffix == PRODUCER_SNAPSHOT_SUFFIX:
                problems = dump_producer_snapshot_file(path, as_json, out)
            else:
                problems = dump_file(path, as_json, out)
        except BrokenPipeError:
            raise  # the reader went away (e.g. `| head`); not a problem with the file
        except OSError as exc:
            problems = [f"{path}: {exc.strerror or exc}"]
        for problem in problems:
            print(f"pykraft dump-log: {problem}", file=err)
        failed = failed or bool(problems)
    return 1 if failed else 0
