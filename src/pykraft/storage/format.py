"""`storage format`: make log directories ready for a node (Kafka's `Formatter`, reference §3.6, §3.7, §6.2).

Each directory gets `meta.properties` (cluster.id, node.id, a fresh directory.id); the metadata directory also
gets `bootstrap.checkpoint` (FeatureLevelRecords in the snapshot batch format) and, for a dynamic quorum
(--standalone / --initial-controllers on a controller), the raft bootstrap snapshot
`__cluster_metadata-0/00000000000000000000-0000000000.checkpoint` holding KRaftVersion(1) + the initial voters.

Crash safety: a directory counts as formatted only once `meta.properties` exists, and that file is written
last (atomically, after everything else is fsynced). A crash part way leaves a directory that still looks
unformatted, and the next format removes what the interrupted one wrote before starting again. Each directory
is locked while it is written, so a running node's directory is never formatted under it.

The caller passes plain values (`FormatRequest`), not the node configuration: storage stays below node.
"""

from __future__ import annotations

import os
import random
import shutil
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from kio.static.primitive import i16

from pykraft.raft.log import BOOTSTRAP_SNAPSHOT_ID, SnapshotId
from pykraft.raft.snapshot_writer import SnapshotWriter
from pykraft.raft.voter_set import Endpoints, ReplicaKey, SupportedVersionRange, VoterNode, VoterSet
from pykraft.records.metadata import FeatureLevelRecordV0, encode_metadata_record
from pykraft.records.uuids import kafka_str_to_uuid, random_kafka_uuid

from .files import LOG_SUFFIX, PARTITION_DIR, atomic_write, snapshot_name
from .format_options import (
    GROUP_VERSION,
    KRAFT_VERSION,
    METADATA_VERSION,
    TRANSACTION_VERSION,
    FormatError,
    QuorumFlag,
    effective_group_version,
    effective_kraft_version,
    effective_transaction_version,
    effective_metadata_version,
    initial_voter_set,
    metadata_version_name,
    parse_features,
    parse_initial_controllers,
)
from .errors import StorageError
from .locking import DirectoryLock
from .log_open import open_file_log
from .meta_properties import (
    META_PROPERTIES,
    MetaProperties,
    parse_properties,
    read_meta_properties,
    write_meta_properties,
)
from .scram_option import SCRAM_METADATA_VERSION, parse_scram
from .snapshot_content import write_bootstrap_snapshot

BOOTSTRAP_CHECKPOINT = "bootstrap.checkpoint"


@dataclass(frozen=True, slots=True)
class FormatRequest:
    cluster_id: str
    node_id: int
    is_controller: bool
    log_dirs: tuple[str, ...]
    metadata_log_dir: str
    has_static_voters: bool  # controller.quorum.voters is set
    controller_listener_name: str
    controller_endpoints: Endpoints  # this node's advertised controller endpoints (used by --standalone)
    quorum_flag: QuorumFlag = QuorumFlag.NONE
    initial_controllers: str | None = None
    release_version: str | None = None
    features: tuple[str, ...] = ()
    ignore_formatted: bool = False
    add_scram: tuple[str, ...] = ()  # --add-scram arguments (scram_option.py)


@dataclass(frozen=True, slots=True)
class DirectoryPlan:
    path: str
    kind: str  # "data directory", "metadata directory", "dynamic metadata (voter) directory"
    meta: MetaProperties
    voters: VoterSet | None  # the raft bootstrap snapshot's voters, for a dynamic metadata directory


@dataclass(frozen=True, slots=True)
class FormatPlan:
    metadata_version: int
    kraft_version: int
    directories: tuple[DirectoryPlan, ...]
    extra_records: tuple = ()  # bootstrap records after the feature levels: --add-scram's credentials
    group_version: int = 0
    transaction_version: int = 0


def plan_format(request: FormatRequest, rng: random.Random) -> FormatPlan:
    """Check the flags against each other and the configuration; decide what goes into every directory."""
    try:
        kafka_str_to_uuid(request.cluster_id)
        valid_id = len(request.cluster_id) == 22
    except ValueError:
        valid_id = False
    if not valid_id:
        raise FormatError(
            f"cluster id {request.cluster_id!r} is not a valid Kafka uuid (22 characters of URL-safe base64; "
            "make one with `pykraft storage random-uuid`)"
        )
    flag = request.quorum_flag
    if flag is QuorumFlag.NONE and request.initial_controllers is not None:
        raise AssertionError("initial_controllers is only given with QuorumFlag.INITIAL_CONTROLLERS")
    if flag in (QuorumFlag.STANDALONE, QuorumFlag.INITIAL_CONTROLLERS):
        if not request.is_controller:
            raise FormatError(f"you cannot use {flag.value} on a broker node: only controllers are initial voters")
        if request.has_static_voters:
            raise FormatError(
                f"you cannot set controller.quorum.voters and format the node with {flag.value}; for a dynamic "
                "quorum remove controller.quorum.voters and set controller.quorum.bootstrap.servers instead"
            )
    if request.is_controller and not request.has_static_voters and flag is QuorumFlag.NONE:
        raise FormatError(
            "Because controller.quorum.voters is not set on this controller, you must specify one of the "
            "following: --standalone, --initial-controllers, or --no-initial-controllers."
        )
    features = parse_features(request.features)
    metadata_version = effective_metadata_version(request.release_version, features)
    kraft_version = effective_kraft_version(flag, features, metadata_version)
    scram_records = tuple(parse_scram(argument, rng) for argument in request.add_scram)
    if scram_records and metadata_version < SCRAM_METADATA_VERSION:
        raise FormatError(f"SCRAM is only supported in metadata.version {metadata_version_name(SCRAM_METADATA_VERSION)} "
                          "or later.")
    voters, local_dir = _initial_voters(request, rng)
    directories = []
    for path in sorted(set(request.log_dirs) | {request.metadata_log_dir}):
        is_metadata = path == request.metadata_log_dir
        directory_id = local_dir if is_metadata and local_dir is not None else random_kafka_uuid(rng)
        kind = "data directory"
        if is_metadata:
            kind = "metadata directory"
            if voters is not None:
                voter = request.node_id in voters.ids()
                kind = "dynamic metadata voter directory" if voter else "dynamic metadata directory"
        meta = MetaProperties(request.cluster_id, request.node_id, directory_id)
        directories.append(DirectoryPlan(path, kind, meta, voters if is_metadata else None))
    return FormatPlan(metadata_version, kraft_version, tuple(directories), scram_records,
                      group_version=effective_group_version(features, metadata_version),
                      transaction_version=effective_transaction_version(features, metadata_version))


def _initial_voters(request: FormatRequest, rng: random.Random) -> tuple[VoterSet | None, uuid.UUID | None]:
    """The initial voter set and this node's metadata directory id (None: a fresh one)."""
    if request.quorum_flag is QuorumFlag.STANDALONE:
        if request.controller_endpoints.is_empty():
            raise FormatError("--standalone needs an advertised controller listener: none found in the configuration")
        unroutable = [e for e in request.controller_endpoints.items if e.host in ("0.0.0.0", "::")]
        if unroutable:
            # The VotersRecord is how the other controllers will reach this one: a wildcard address cannot work.
            raise FormatError(
                f"--standalone would record the nonroutable address {unroutable[0].host} for listener "
                f"{unroutable[0].name}: set advertised.listeners to a routable host"
            )
        directory_id = random_kafka_uuid(rng)
        key = ReplicaKey(request.node_id, directory_id)
        node = VoterNode(key, request.controller_endpoints, SupportedVersionRange(0, 1))
        return VoterSet.of([node]), directory_id
    if request.quorum_flag is QuorumFlag.INITIAL_CONTROLLERS:
        if not request.initial_controllers:
            raise FormatError("--initial-controllers needs a value: id@host:port:directoryId,...")
        controllers = parse_initial_controllers(request.initial_controllers)
        local = next((c for c in controllers if c.node_id == request.node_id), None)
        return initial_voter_set(controllers, request.controller_listener_name), (local.directory_id if local else None)
    return None, None


def format_directories(
    request: FormatRequest,
    out: Callable[[str], None] = print,
    *,
    rng: random.Random | None = None,
    now_ms: int | None = None,
) -> FormatPlan:
    """Validate, then write every directory. Raises FormatError (flags, already formatted) or StorageError/OSError."""
    plan = plan_format(request, rng or random.SystemRandom())
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    formatted = [d.path for d in plan.directories if os.path.exists(os.path.join(d.path, META_PROPERTIES))]
    if formatted and not request.ignore_formatted:
        raise FormatError(
            f"Log directory {formatted[0]} is already formatted. Use --ignore-formatted to ignore this directory "
            "and format the others."
        )
    todo = [d for d in plan.directories if d.path not in formatted]
    if not todo:
        out("All of the log directories are already formatted.")
        return plan
    version_name = metadata_version_name(plan.metadata_version)
    for directory in todo:
        out(f"Formatting {directory.kind} {directory.path} with metadata.version {version_name}.")
        _format_one(directory, plan, request.metadata_log_dir, now_ms)
    return plan


def _format_one(directory: DirectoryPlan, plan: FormatPlan, metadata_dir: str, now_ms: int) -> None:
    os.makedirs(directory.path, exist_ok=True)
    lock = DirectoryLock(directory.path)
    try:
        # Checked again under the lock: another format may have finished in between.
        if os.path.exists(os.path.join(directory.path, META_PROPERTIES)):
            raise FormatError(f"Log directory {directory.path} is already formatted (by a concurrent format)")
        _clear_interrupted_format(directory.path)
        if directory.path == metadata_dir:
            atomic_write(os.path.join(directory.path, BOOTSTRAP_CHECKPOINT), bootstrap_checkpoint_bytes(plan, now_ms))
            if directory.voters is not None:
                log, _ = open_file_log(directory.path, lock=lock)
                with log:
                    write_bootstrap_snapshot(log, directory.voters.to_voters_record(), now_ms)
        write_meta_properties(directory.path, directory.meta)  # last: from here on the directory is formatted
    finally:
        lock.release()


def _clear_interrupted_format(path: str) -> None:
    """Remove what an interrupted format wrote. Anything a running node would have written is refused instead:
    a metadata log without meta.properties is not ours to delete."""
    partition = os.path.join(path, PARTITION_DIR)
    if os.path.isdir(partition):
        for name in os.listdir(partition):
            if _written_by_a_node(partition, name):
                raise FormatError(
                    f"{path} has no meta.properties but holds a metadata log ({os.path.join(partition, name)}); "
                    "move it aside before formatting"
                )
        shutil.rmtree(partition)
    try:
        os.unlink(os.path.join(path, BOOTSTRAP_CHECKPOINT))
    except FileNotFoundError:
        pass


_BOOTSTRAP_SNAPSHOT_NAME = snapshot_name(BOOTSTRAP_SNAPSHOT_ID.offset, BOOTSTRAP_SNAPSHOT_ID.epoch)


def _written_by_a_node(partition: str, name: str) -> bool:
    """Format writes only an empty segment, its indexes, partition.metadata, leader-epoch-checkpoint and the
    bootstrap snapshot. Records, other snapshots or a quorum-state mean a node ran here."""
    if name.endswith(LOG_SUFFIX):
        return os.path.getsize(os.path.join(partition, name)) > 0
    if name.endswith(".checkpoint"):
        return name != _BOOTSTRAP_SNAPSHOT_NAME
    return name.startswith("quorum-state")


def bootstrap_checkpoint_bytes(plan: FormatPlan, now_ms: int) -> bytes:
    """`bootstrap.checkpoint`: header, one batch of FeatureLevelRecords, footer (Kafka's BatchFileWriter)."""
    records = [FeatureLevelRecordV0(name=METADATA_VERSION, feature_level=i16(plan.metadata_version))]
    if plan.kraft_version > 0:
        records.append(FeatureLevelRecordV0(name=KRAFT_VERSION, feature_level=i16(plan.kraft_version)))
    if plan.transaction_version > 0:
        records.append(FeatureLevelRecordV0(name=TRANSACTION_VERSION, feature_level=i16(plan.transaction_version)))
    if plan.group_version > 0:
        records.append(FeatureLevelRecordV0(name=GROUP_VERSION, feature_level=i16(plan.group_version)))
    records.extend(plan.extra_records)
    buffer = _BufferSnapshot()
    writer = SnapshotWriter(buffer, last_contained_log_time_ms=0, now_ms=now_ms, kraft_version=0, voters=None,
                            on_frozen=lambda _id: None)
    writer.append([encode_metadata_record(r) for r in records])
    writer.freeze()
    return bytes(buffer.data)


class _BufferSnapshot:
    """A RawSnapshotWriter into memory: the bootstrap file is then written atomically in one go."""

    def __init__(self) -> None:
        self.data = bytearray()
        self._frozen = False

    @property
    def snapshot_id(self) -> SnapshotId:
        return BOOTSTRAP_SNAPSHOT_ID

    def size_in_bytes(self) -> int:
        return len(self.data)

    def append(self, data: bytes | memoryview) -> None:
        self.data += data

    def is_frozen(self) -> bool:
        return self._frozen

    def freeze(self) -> None:
        self._frozen = True

    def close(self) -> None:
        pass



def describe_directories(directories: list[str] | tuple[str, ...], *, kraft_mode: bool = True) -> tuple[list[str], int]:
    """`storage info`: Kafka's StorageTool report of the directories, and the exit code (1 if any problem).

    Kafka prints the first directory's meta.properties as a sorted map and a problem per unformatted, missing
    or mismatched directory.
    """
    problems: list[str] = []
    found: list[str] = []
    first: MetaProperties | None = None
    for path in sorted(directories):
        if not os.path.isdir(path):
            problems.append(f"{path} {'is not a directory' if os.path.exists(path) else 'does not exist'}")
            continue
        found.append(path)
        meta_path = os.path.join(path, META_PROPERTIES)
        if not os.path.exists(meta_path):
            problems.append(f"{path} is not formatted.")
            continue
        try:
            meta = read_meta_properties(path)
        except (StorageError, OSError, UnicodeDecodeError) as exc:
            problems.append(f"Error loading {meta_path}: {exc}")
            continue
        if first is None:
            first = meta
        elif meta.cluster_id != first.cluster_id:
            problems.append("Mismatched cluster IDs between storage directories.")
        elif meta.node_id != first.node_id:
            problems.append("Mismatched node IDs between storage directories.")
    if first is not None and kraft_mode and first.version == 0:
        problems.append("The kafka configuration file appears to be for a cluster in KRaft mode, but the directories "
                        "are formatted for legacy mode.")
    lines: list[str] = []
    if not directories:
        return ["No directories specified."], 0
    if found:
        lines += ["Found log directory:" if len(found) == 1 else "Found log directories:"]
        lines += [f"  {path}" for path in found] + [""]
    if first is not None:
        lines += [f"Found metadata: {{{_sorted_properties(first)}}}", ""]
    if problems:
        lines += ["Found problem:" if len(problems) == 1 else "Found problems:"]
        lines += [f"  {problem}" for problem in problems] + [""]
    return lines, 1 if problems else 0


def _sorted_properties(meta: MetaProperties) -> str:
    """Java's TreeMap.toString of the properties: `{cluster.id=..., directory.id=..., node.id=1, version=1}`."""
    props = parse_properties(meta.to_text())
    return ", ".join(f"{key}={props[key]}" for key in sorted(props))
