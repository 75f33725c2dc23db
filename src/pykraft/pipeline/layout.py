"""Where a cluster's files are: node directories, partition log directories, segments, snapshots, traces and
client histories under the folders given to `pykraft analyze` (a node's data directory, a folder of node
directories such as `.run/quickstart`, or a folder of many clusters' folders).

A log directory is any directory named `<topic>-<partition>` that holds Kafka segment files
(`<20 digits>.log`) or snapshots (`<20 digits>-<10 digits>.checkpoint`); its parent is the node's data
directory, whose `meta.properties` names the cluster, the node and the directory id. Pure file-system work, no
Spark: the data sources plan their partitions with it on the driver.
"""

from __future__ import annotations

import os
import re
import struct
from dataclasses import dataclass
from pathlib import Path

from pykraft.node.runtime.trace import TRACE_FILE
from pykraft.records.uuids import uuid_to_kafka_str
from pykraft.storage.errors import MetaPropertiesError
from pykraft.storage.meta_properties import META_PROPERTIES, read_meta_properties
from pykraft.storage.offset_checkpoints import read_offsets
from pykraft.storage.txn_index import TXN_INDEX_SUFFIX, decode_entries

SEGMENT_NAME = re.compile(r"^(\d{20})\.log$")
SNAPSHOT_NAME = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
PARTITION_DIR = re.compile(r"^(.+)-(\d+)$")
HISTORY_FILE = "pykraft-history.jsonl"  # client histories: one JSON operation per line (history.py's format)
INDEX_ENTRY = struct.Struct(">ii")
DEFAULT_SPLIT_BYTES = 64 * 1024 * 1024
# Without an explicit split size, the input is packed into about TARGET_SLICES input partitions of equal bytes (a
# multiple of it for inputs over TARGET_SLICES x DEFAULT_SPLIT_BYTES, fewer for inputs under TARGET_SLICES x
# MIN_SPLIT_BYTES), cut at `.index` positions about every GRAIN_BYTES: a partition may hold slices of two files.
# Equal partitions, as many as a multiple of the cores, keep every core busy to the end; cutting each file on its
# own left 9 slices of 32, 32 and 20 MiB for three 84 MiB segments, one core idle for the last one.
# Not finer: each Spark task costs about 0.2 CPU seconds of its own (measured: 18 slices of 4 MiB took 8.2-8.5 CPU s
# where 3 of 25 MiB took 5.1-5.6 for the same 1.5 M records), a 16 MiB slice about 1 s of decoding into Parquet.
TARGET_SLICES = 8
GRAIN_BYTES = 1024 * 1024
MIN_SPLIT_BYTES = 16 * 1024 * 1024


class LayoutError(Exception):
    """Bad input: a folder with no log, or a file that cannot be read. The CLI prints it and exits 2."""


@dataclass(frozen=True, slots=True)
class NodeIdentity:
    cluster_id: str
    node_id: int
    directory_id: str | None


@dataclass(frozen=True, slots=True)
class LogFile:
    """One segment or snapshot file of one partition of one node."""

    path: str
    node: NodeIdentity
    topic: str
    partition: int
    base_offset: int  # the segment's base offset, or the snapshot's end offset
    snapshot_epoch: int | None = None  # set for snapshots
    # What the tables' `file` column holds: the path below the node's data directory
    # (`__cluster_metadata-0/00000000000000000000.log`), or the whole `path` when unset (the stream's
    # `kraft://host:port`). A short name, as the cluster, node and directory id, topic and partition are columns of
    # their own; the Parquet writer hashes and copies this string on every row (an absolute path of ~90 bytes cost
    # ~9% of the kafka-log -> Parquet job's CPU). `data_directories` maps a node back to its absolute data directory.
    relative: str | None = None

    @property
    def column(self) -> str:
        return self.path if self.relative is None else self.relative


@dataclass(frozen=True, slots=True)
class FileSlice:
    """A byte range of a segment starting and ending at batch boundaries: one Spark input partition."""

    file: LogFile
    start: int
    end: int  # exclusive; -1 = to the end of the file
    last_slice: bool  # the slice that ends the file: a torn tail there is a crash artefact, not damage


def node_identity(data_dir: Path) -> NodeIdentity:
    """The identity in `meta.properties`; a directory without one gets cluster "unknown" and node -1."""
    if not (data_dir / META_PROPERTIES).exists():
        return NodeIdentity("unknown", -1, None)
    try:
        meta = read_meta_properties(str(data_dir))
    except (MetaPropertiesError, OSError) as exc:
        raise LayoutError(f"{data_dir}: unreadable meta.properties: {exc}") from None
    directory = None if meta.directory_id is None else uuid_to_kafka_str(meta.directory_id)
    return NodeIdentity(meta.cluster_id, meta.node_id, directory)


def _partition_dirs(roots: list[str]) -> list[Path]:
    found: list[Path] = []
    for root in roots:
        if not os.path.isdir(root):
            raise LayoutError(f"{root}: no such directory")
        for current, dirs, files in os.walk(root):
            dirs.sort()
            if PARTITION_DIR.match(os.path.basename(current)) and any(
                SEGMENT_NAME.match(f) or SNAPSHOT_NAME.match(f) for f in files
            ):
                found.append(Path(current))
    return sorted(set(found))


def find_files(roots: list[str], *, snapshots: bool) -> list[LogFile]:
    """Every segment (or, with `snapshots`, every snapshot) under `roots`, in (node, topic, partition, offset)
    order. Raises LayoutError when none is found."""
    files: list[LogFile] = []
    for part_dir in _partition_dirs(roots):
        topic, partition = PARTITION_DIR.match(part_dir.name).groups()  # type: ignore[union-attr]
        node = node_identity(part_dir.parent)
        for name in sorted(os.listdir(part_dir)):
            if snapshots and (m := SNAPSHOT_NAME.match(name)):
                files.append(LogFile(str(part_dir / name), node, topic, int(partition), int(m.group(1)),
                                     int(m.group(2)), relative=f"{part_dir.name}/{name}"))
            elif not snapshots and (m := SEGMENT_NAME.match(name)):
                files.append(LogFile(str(part_dir / name), node, topic, int(partition), int(m.group(1)),
                                     relative=f"{part_dir.name}/{name}"))
    if not files and not snapshots:
        raise LayoutError(f"no Kafka log segment found under {' '.join(roots)}")
    return files


def data_directories(roots: list[str]) -> list[dict[str, object]]:
    """Each node data directory under `roots` that holds a partition, absolute, with the node's identity: what
    turns a table row's (cluster_id, node_id, directory_id, file) back into the file on disk."""
    found = {}
    for part_dir in _partition_dirs(roots):
        data_dir = part_dir.parent.resolve()
        node = node_identity(part_dir.parent)
        found[str(data_dir)] = {"cluster_id": node.cluster_id, "node_id": node.node_id,
                                "directory_id": node.directory_id, "path": str(data_dir)}
    return sorted(found.values(), key=lambda d: (d["cluster_id"], d["node_id"], d["path"]))


def split_segment(file: LogFile, split_bytes: int = DEFAULT_SPLIT_BYTES) -> list[FileSlice]:
    """A segment in slices of about `split_bytes`, cut at positions its `.index` names (each entry is the byte
    position where a batch starts). A segment without a readable index is one slice."""
    size = os.path.getsize(file.path)
    cuts = [0]
    if size > split_bytes:
        index_path = file.path[: -len(".log")] + ".index"
        try:
            with open(index_path, "rb") as f:
                raw = f.read()
        except OSError:
            raw = b""
        for _, position in INDEX_ENTRY.iter_unpack(raw[: len(raw) - len(raw) % INDEX_ENTRY.size]):
            if position - cuts[-1] >= split_bytes and position < size:
                cuts.append(position)
    bounds = cuts + [-1]
    return [FileSlice(file, bounds[i], bounds[i + 1], bounds[i + 1] == -1) for i in range(len(cuts))]


def balanced_partitions(files: list[LogFile], grain: int = GRAIN_BYTES) -> list[list[FileSlice]]:
    """`files` in groups of slices of about equal bytes, in file order (see TARGET_SLICES); consecutive slices of
    one file in one group are one slice."""
    fine = [piece for f in files for piece in split_segment(f, grain)]
    sizes = {f.path: os.path.getsize(f.path) for f in files}
    lengths = [(sizes[p.file.path] if p.end < 0 else p.end) - p.start for p in fine]
    total = sum(lengths)
    count = max(1, min(TARGET_SLICES, -(-total // MIN_SPLIT_BYTES)))
    if count == TARGET_SLICES:
        count *= max(1, -(-total // (TARGET_SLICES * DEFAULT_SPLIT_BYTES)))
    groups: list[list[FileSlice]] = [[] for _ in range(count)]
    done = 0
    for piece, length in zip(fine, lengths):
        # The group in which the piece starts; an empty file at the end (a live node's new active segment) starts
        # at `total` and joins the last group.
        group = groups[min(count - 1, done * count // total)] if total else groups[0]
        if group and group[-1].file == piece.file and group[-1].end == piece.start:
            group[-1] = FileSlice(piece.file, group[-1].start, piece.end, piece.last_slice)
        else:
            group.append(piece)
        done += length
    return [g for g in groups if g]


HWM_CHECKPOINT = "replication-offset-checkpoint"
LOG_START_CHECKPOINT = "log-start-offset-checkpoint"


def offset_checkpoints(roots: list[str]) -> list[tuple[str, int, str, int, int | None, int | None]]:
    """(cluster_id, node_id, topic, partition, high watermark, log start offset) of every replica a node's offset
    checkpoint files name (Kafka's `replication-offset-checkpoint` and `log-start-offset-checkpoint` in each log
    directory); None where one file has no entry. Missing or unreadable files give nothing."""
    found: dict[tuple[str, int, str, int], list[int | None]] = {}
    data_dirs = {part_dir.parent for part_dir in _partition_dirs(roots)}
    for data_dir in sorted(data_dirs):
        node = node_identity(data_dir)
        for slot, name in enumerate((HWM_CHECKPOINT, LOG_START_CHECKPOINT)):
            for (topic, partition), offset in read_offsets(str(data_dir / name)).items():
                found.setdefault((node.cluster_id, node.node_id, topic, partition), [None, None])[slot] = offset
    return [(*key, hwm, start) for key, (hwm, start) in sorted(found.items())]


def aborted_transactions(roots: list[str]) -> list[tuple[str, int, str, int, int, int, int]]:
    """(cluster_id, node_id, topic, partition, producer_id, first_offset, last_offset) of every aborted transaction
    a replica's `.txnindex` files list (Kafka's index of aborted transactions, one per segment; the log cleaner
    keeps the entries of the transactions whose records it removed). A damaged file gives nothing: the markers in
    the log still say what was aborted where its records are."""
    found = []
    for part_dir in _partition_dirs(roots):
        topic, partition = PARTITION_DIR.match(part_dir.name).groups()  # type: ignore[union-attr]
        node = None
        for name in sorted(os.listdir(part_dir)):
            if not name.endswith(TXN_INDEX_SUFFIX):
                continue
            node = node or node_identity(part_dir.parent)
            try:
                entries = decode_entries((part_dir / name).read_bytes()) or []
            except OSError:
                entries = []
            found += [(node.cluster_id, node.node_id, topic, int(partition), e.producer_id, e.first_offset,
                       e.last_offset) for e in entries]
    return found


def history_cluster(path: str) -> str:
    """The cluster whose node directories lie below a client history's folder ("unknown": none, or several)."""
    clusters = {node_identity(part_dir.parent).cluster_id for part_dir in _partition_dirs([str(Path(path).parent)])}
    return clusters.pop() if len(clusters) == 1 else "unknown"


def find_named(roots: list[str], name: str) -> list[str]:
    """Every file called `name` under `roots` (traces, histories), sorted."""
    found = []
    for root in roots:
        for current, dirs, files in os.walk(root):
            dirs.sort()
            if name in files:
                found.append(os.path.join(current, name))
    return sorted(found)


def trace_files(roots: list[str]) -> list[str]:
    return find_named(roots, TRACE_FILE)


def history_files(roots: list[str]) -> list[str]:
    return find_named(roots, HISTORY_FILE)
