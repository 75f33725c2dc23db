"""`pykraft dump-log`: print the batches and records of log segments and snapshots as Kafka's kafka-dump-log does
(or one JSON object per record with --json); `.index` and `.timeindex` files are dumped as Kafka dumps them
(dump_index.py), and so are a partition's producer snapshots, `<offset>.snapshot` (dump_producer_snapshot.py).

How records are decoded (`Decoding`), as Kafka's flags choose it:
- --cluster-metadata-decoder, and by default for the files of `__cluster_metadata-0` and `.checkpoint` snapshots:
  control and metadata records decoded (`payload: {...}`);
- --offsets-decoder (`__consumer_offsets`): each record's key and value as Kafka's OffsetsMessageParser prints them
  (dump_offsets.py);
- any other segment (a user topic): the batch lines only, as Kafka's default (shallow) iteration prints them;
  --deep-iteration adds a line per record (offset, timestamp, key and value sizes, sequence, header keys) and
  --print-data-log (which implies it) adds ` key: ... payload: ...`, the bytes as UTF-8 text (Kafka's
  StringDecoder). --skip-record-metadata leaves the per-record metadata out.

Offsets that do not follow each other (a segment the log cleaner rewrote) are listed at the end on stderr, as
Kafka's tool lists them ("Non-consecutive offsets in <file>", then "  <a> is followed by <b>"); they are no error.
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
from pykraft.controller.describe_configs import config_value_sensitive
from pykraft.records.metadata.json_view import message_to_dict, to_jackson_json
from pykraft.records.metadata.redaction import redact_view

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
class Decoding:
    """How records are shown: decoder "metadata", "offsets" or "data" (see the module docstring)."""

    decoder: str | None = None  # None: metadata for metadata-log files, else data
    deep: bool = False
    print_data: bool = False
    skip_record_metadata: bool = False

    def for_file(self, path: Path, data: bytes | memoryview) -> Decoding:
        """Without a decoder flag: metadata for the files of `__cluster_metadata-0`, snapshots, and any segment
        whose first data record is a metadata record (pykraft's own logs wherever they were copied); a user
        topic's segment otherwise (Kafka needs --cluster-metadata-decoder for the first kind)."""
        if self.decoder is not None:
            return self
        metadata = (path.suffix == ".checkpoint" or path.parent.name == METADATA_DIRECTORY
                    or _holds_metadata(data))
        return Decoding("metadata" if metadata else "data", self.deep, self.print_data, self.skip_record_metadata)

    @property
    def records_shown(self) -> bool:
        return self.decoder != "data" or self.deep or self.print_data


METADATA_DIRECTORY = "__cluster_metadata-0"


def _holds_metadata(data: bytes | memoryview, looked_at: int = 8) -> bool:
    """Does one of the first data records of the file (those of batches that are not control batches) hold a
    metadata record? Several are looked at, so one damaged record does not decide. A file of control batches only
    (a KRaft log's start) counts as metadata."""
    from pykraft.controller.log_replay import decode_value

    seen = 0
    try:
        for batch in iter_batches(data, verify_crc=False, allow_truncated_tail=True):
            if batch.is_control:
                continue
            try:
                for record in batch.records():
                    if decode_value(record.value) is not None:
                        return True
                    seen += 1
                    if seen >= looked_at:
                        return False
            except RecordsError:
                continue
    except RecordsError:
        pass
    return seen == 0


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
        label = _CONTROL_LABELS.get(control.type, f"Control{control.type_id}")
        fields = message_to_dict(control.message) if control.message is not None else {}
        if control.voters_target is not None:  # pykraft's target tag (records/control.py); Kafka shows none
            fields["pykraftTargetVoters"] = message_to_dict(control.voters_target)["voters"]
        return DecodedPayload(control={"type": label, **fields})
    if record.value is None:
        return DecodedPayload(problem="null value")
    try:
        message = decode_metadata_record(record.value)
    except MetadataRecordError as exc:
        return DecodedPayload(raw_value=bytes(record.value), problem=str(exc))
    envelope = metadata_record_envelope(message)
    # SCRAM salts and keys, sensitive config values: never printed (Kafka's RecordRedactor)
    envelope["data"] = redact_view(envelope["type"], envelope["data"], config_value_sensitive)
    return DecodedPayload(metadata=envelope)


def _raw(record: Record) -> bytes | None:
    return None if record.value is None else bytes(record.value)


# ---- text format ------------------------------------------------------------------------------------------


def timestamp_type(batch: RecordBatch) -> str:
    return "LogAppendTime" if batch.attributes & 0x08 else "CreateTime"


def record_sequence(batch: RecordBatch, record: Record) -> int:
    """Kafka's Record.sequence: the batch's base sequence plus the record's offset delta (wrapping), or -1."""
    if batch.base_sequence < 0:
        return -1
    return (batch.base_sequence + record.offset - batch.base_offset) % 2**31


def batch_line(batch: RecordBatch, position: int, crc_valid: bool) -> str:
    last_sequence = batch.base_sequence + batch.last_offset_delta if batch.base_sequence >= 0 else -1
    delete_horizon = f"OptionalLong[{batch.base_timestamp}]" if batch.attributes & 0x40 else "OptionalLong.empty"
    return (
        f"baseOffset: {batch.base_offset} lastOffset: {batch.last_offset} count: {batch.record_count} "
        f"baseSequence: {batch.base_sequence} lastSequence: {last_sequence} producerId: {batch.producer_id} "
        f"producerEpoch: {batch.producer_epoch} partitionLeaderEpoch: {batch.partition_leader_epoch} "
        f"isTransactional: {str(batch.is_transactional).lower()} isControl: {str(batch.is_control).lower()} "
        f"deleteHorizonMs: {delete_horizon} position: {position} {timestamp_type(batch)}: {batch.max_timestamp} "
        f"size: {batch.size_in_bytes} magic: {batch.magic} compresscodec: {batch.compression.name.lower()} "
        f"crc: {batch.crc} isvalid: {str(crc_valid).lower()}"
    )


def record_metadata(record: Record, batch: RecordBatch | None = None) -> str:
    key_size = -1 if record.key is None else len(record.key)
    value_size = -1 if record.value is None else len(record.value)
    header_keys = "[" + ",".join(k for k, _ in record.headers) + "]"
    kind = "CreateTime" if batch is None else timestamp_type(batch)
    sequence = -1 if batch is None else record_sequence(batch, record)
    return (f"| offset: {record.offset} {kind}: {record.timestamp} keySize: {key_size} valueSize: {value_size} "
            f"sequence: {sequence} headerKeys: {header_keys}")


def _text(data: memoryview | None) -> str:
    return bytes(data).decode("utf-8", errors="replace") if data is not None else ""


def data_record_line(batch: RecordBatch, record: Record, decoding: Decoding) -> str:
    """A user-topic record (Kafka's dumpLog with the StringDecoder or the offsets decoder)."""
    parts = [] if decoding.skip_record_metadata else [record_metadata(record, batch)]
    if batch.is_control and not decoding.skip_record_metadata:
        control = _control_text(record)
        if control:
            parts.append(control)
    if decoding.print_data and not batch.is_control:
        if decoding.decoder == "offsets":
            from .dump_offsets import parse

            key, payload = parse(record.offset, None if record.key is None else bytes(record.key),
                                 None if record.value is None else bytes(record.value))
        else:
            key = None if record.key is None else _text(record.key)
            payload = None if record.value is None else _text(record.value)
        if key is not None:
            parts.append(f"key: {key}")
        if payload is not None:
            parts.append(f"payload: {payload}")
    line = " ".join(parts)
    return f"| {line}" if decoding.skip_record_metadata else line


def _control_text(record: Record) -> str:
    """A control record of a data log: Kafka prints the transaction markers this way."""
    try:
        control = decode_control_record(record)
    except RecordsError:
        return ""
    if control.type in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        epoch = int.from_bytes(bytes(record.value or b"")[2:6], "big", signed=True) if record.value else -1
        return f"endTxnMarker: {control.type.name} coordinatorEpoch: {epoch}"
    return f"controlType: {control.type.name}({control.type_id})"


def record_line(record: Record, payload: DecodedPayload, batch: RecordBatch | None = None) -> str:
    line = record_metadata(record, batch)
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


def data_record_object(file: str, batch: RecordBatch, record: Record, crc_valid: bool) -> dict:
    """--json for a user-topic record: key and value in base64 (null for a null one), headers likewise."""
    def b64(data: memoryview | None) -> str | None:
        return None if data is None else base64.b64encode(bytes(data)).decode("ascii")

    return {"file": file, "baseOffset": batch.base_offset, "offset": record.offset,
            "leaderEpoch": batch.partition_leader_epoch, "timestamp": record.timestamp,
            "timestampType": timestamp_type(batch), "isControl": batch.is_control, "crcValid": crc_valid,
            "key": b64(record.key), "value": b64(record.value),
            "headers": [[k, b64(v)] for k, v in record.headers]}


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


def _batches_with_positions(data: bytes | memoryview | mmap.mmap) -> Iterator[tuple[int, RecordBatch]]:
    position = 0
    for batch in iter_batches(data, verify_crc=False):
        yield position, batch
        position += batch.size_in_bytes


def dump_file(path: Path, as_json: bool, out: TextIO, decoding: Decoding | None = None,
              gaps: list[tuple[int, int]] | None = None) -> list[str]:
    """Print one file; return the problems found (empty when the file is sound). `gaps` collects, as Kafka's tool
    does, each pair of successive record offsets that are not consecutive (a cleaned segment's removed records):
    most recent first."""
    problems: list[str] = []
    last_offset = -1
    if not as_json:
        print("\n".join(file_preamble(path)), file=out)
    data = read_file(path)
    view = memoryview(data)
    decoding = (decoding or Decoding()).for_file(path, view)
    try:
        for position, batch in _batches_with_positions(view):
            crc_valid = batch.crc_valid
            if not crc_valid:
                problems.append(
                    f"{path}: CRC mismatch in the batch at byte position {position} (base offset {batch.base_offset})"
                )
            if not as_json:
                print(batch_line(batch, position, crc_valid), file=out)
            if not decoding.records_shown and not as_json:
                continue
            try:
                records = list(batch.records())
            except RecordsError as exc:
                problems.append(
                    f"{path}: cannot decode the records of the batch at byte position {position} "
                    f"(base offset {batch.base_offset}): {exc}"
                )
                continue
            for record in records:
                if last_offset >= 0 and record.offset != last_offset + 1 and gaps is not None:
                    gaps.insert(0, (last_offset, record.offset))
                last_offset = record.offset
                if decoding.decoder != "metadata":
                    print(json.dumps(data_record_object(str(path), batch, record, crc_valid)) if as_json
                          else data_record_line(batch, record, decoding), file=out)
                    continue
                payload = decode_payload(batch, record)
                if as_json:
                    obj = record_object(str(path), batch, record, payload, crc_valid)
                    print(json.dumps(obj), file=out)
                else:
                    print(record_line(record, payload, batch), file=out)
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


def dump_files(paths: list[Path], as_json: bool, out: TextIO | None = None, err: TextIO | None = None,
               decoding: Decoding | None = None) -> int:
    """Dump every file; return the exit code (0 when every file was read completely and intact)."""
    out = out or sys.stdout  # looked up per call: test runners swap sys.stdout
    err = err or sys.stderr
    failed = False
    gaps: dict[str, list[tuple[int, int]]] = {}
    for path in paths:
        try:
            if path.suffix in INDEX_SUFFIXES:
                problems = dump_index_file(path, as_json, out)
            elif path.suffix == PRODUCER_SNAPSHOT_SUFFIX:
                problems = dump_producer_snapshot_file(path, as_json, out)
            else:
                problems = dump_file(path, as_json, out, decoding, gaps.setdefault(str(path.absolute()), []))
        except BrokenPipeError:
            raise  # the reader went away (e.g. `| head`); not a problem with the file
        except OSError as exc:
            problems = [f"{path}: {exc.strerror or exc}"]
        for problem in problems:
            print(f"pykraft dump-log: {problem}", file=err)
        failed = failed or bool(problems)
    for name, pairs in gaps.items():  # Kafka's DumpLogSegments reports them last, on stderr; not a failure
        if pairs:
            print(f"Non-consecutive offsets in {name}", file=err)
            for first, second in pairs:
                print(f"  {first} is followed by {second}", file=err)
    return 1 if failed else 0
