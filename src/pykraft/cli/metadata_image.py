"""The metadata image `metadata-shell` browses, rebuilt offline from files with the controller's own replay (the
QuorumController every controller runs, as `pykraft analyze` replays a log):

- a snapshot file (`<offset>-<epoch>.checkpoint`): its records alone, as Kafka's shell reads `--snapshot`;
- a metadata log directory (`__cluster_metadata-0`, or a node's data directory holding one): the latest snapshot
  in it, then every record of its segments after the snapshot. The log is read to its end: offline there is no
  high watermark, so records the quorum had not committed yet are part of the image (Kafka's shell, reading
  through a raft client, stops at the high watermark).
The provenance is Kafka's: the last offset and epoch contained, and the time of the last batch (of a snapshot: its
header's last contained log timestamp).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path

from pykraft.controller.controller import ControllerConfig, QuorumController
from pykraft.controller.log_replay import decode_value
from pykraft.records import RecordsError, iter_batches
from pykraft.records.control import ControlRecordType, decode_control_record

METADATA_DIR = "__cluster_metadata-0"
SNAPSHOT = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
SEGMENT = re.compile(r"^(\d{20})\.log$")


class ImageError(Exception):
    """The files cannot be read into an image (`str()` is the one line to print)."""


@dataclass(frozen=True, slots=True)
class Provenance:
    offset: int  # the last offset the image contains (-1: none)
    epoch: int
    time_ms: int


@dataclass
class LoadedImage:
    controller: QuorumController
    provenance: Provenance


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise ImageError(f"{path}: no such file") from None
    except OSError as exc:
        raise ImageError(f"{path}: {exc.strerror or exc}") from None


def _replay(controller: QuorumController, data: bytes, path: Path, after: int) -> Provenance | None:
    """Replay the metadata records of `data` with offsets above `after`; the provenance of the last batch read."""
    last: Provenance | None = None
    try:
        for batch in iter_batches(data, verify_crc=True, allow_truncated_tail=True):
            if batch.is_control:
                continue
            for record in batch.records():
                if record.offset <= after:
                    continue
                decoded = decode_value(record.value)
                if decoded is not None:
                    controller.replay(decoded, record.offset)
            if batch.last_offset > after:
                last = Provenance(batch.last_offset, batch.partition_leader_epoch, batch.max_timestamp)
    except RecordsError as exc:
        raise ImageError(f"{path}: {exc}") from None
    return last


def _snapshot_time(data: bytes) -> int:
    for batch in iter_batches(data, verify_crc=False, allow_truncated_tail=True):
        if batch.is_control:
            for record in batch.records():
                control = decode_control_record(record)
                if control.type == ControlRecordType.SNAPSHOT_HEADER and control.message is not None:
                    return int(control.message.last_contained_log_timestamp)
        break
    return -1


def load_snapshot(controller: QuorumController, path: Path) -> Provenance:
    match = SNAPSHOT.match(path.name)
    if match is None:
        raise ImageError(f"{path}: not a snapshot file (<offset>-<epoch>.checkpoint)")
    data = _read(path)
    records = []
    try:
        for batch in iter_batches(data, verify_crc=True):
            if not batch.is_control:
                records += [d for d in (decode_value(r.value) for r in batch.records()) if d is not None]
    except RecordsError as exc:
        raise ImageError(f"{path}: {exc}") from None
    end_offset, epoch = int(match.group(1)), int(match.group(2))
    controller.load_snapshot(records, end_offset - 1)
    return Provenance(end_offset - 1, epoch, _snapshot_time(data))


def metadata_directory(path: Path) -> Path:
    if path.name == METADATA_DIR or any(SEGMENT.match(p.name) or SNAPSHOT.match(p.name) for p in path.iterdir()):
        return path
    if (path / METADATA_DIR).is_dir():
        return path / METADATA_DIR
    raise ImageError(f"{path}: no metadata log here (neither {METADATA_DIR} nor segments or snapshots)")


def new_controller() -> QuorumController:
    return QuorumController(ControllerConfig(node_id=-1, cluster_id=""), random.Random(0))


def load_image(snapshot: Path | None = None, directory: Path | None = None) -> LoadedImage:
    controller = new_controller()
    if snapshot is not None:
        return LoadedImage(controller, load_snapshot(controller, snapshot))
    assert directory is not None
    if not directory.is_dir():
        raise ImageError(f"{directory}: no such directory")
    folder = metadata_directory(directory)
    snapshots = sorted(p for p in folder.iterdir() if SNAPSHOT.match(p.name))
    provenance = Provenance(-1, -1, -1)
    if snapshots:
        provenance = load_snapshot(controller, snapshots[-1])
    for segment in sorted(p for p in folder.iterdir() if SEGMENT.match(p.name)):
        found = _replay(controller, _read(segment), segment, provenance.offset)
        provenance = found or provenance
    return LoadedImage(controller, provenance)
