"""Opening a node's storage: lock, meta.properties checks, the metadata log with recovery, the quorum state.

Order matters: the directory lock first (two processes must never both recover the same log), then every check
that may refuse, reading only, so that a refused start changes nothing on disk: meta.properties (a directory of
another node or cluster), the quorum-state file (both copies damaged), the log's own checks (corrupt segments or
snapshots; log_open.py). Only then the repairs: the log's recovery (torn tail, rebuilt indexes) and the rewrite of
a stale quorum-state copy. Every refusal is a `StorageError` subclass whose message is one line that an operator
can act on (Kafka's wording where Kafka has one).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Any

from pykraft.raft.election import ElectionState
from pykraft.raft.voter_set import ReplicaKey
from pykraft.storage import (
    DirectoryLock,
    FileLog,
    LogConfig,
    MetaProperties,
    MetaPropertiesError,
    QuorumStateData,
    QuorumStateStore,
    RecoveryReport,
    StorageError,
    open_file_log,
    read_meta_properties,
)
from pykraft.storage.meta_properties import META_PROPERTIES

_log = logging.getLogger("pykraft.node")


@dataclass(frozen=True, slots=True)
class NodeStorage:
    meta: MetaProperties
    log: FileLog
    report: RecoveryReport
    store: QuorumStateStore
    stored_election: ElectionState | None
    stored_kraft_version: int
    lock: DirectoryLock  # held by us, not by the log: release it after closing the log

    def close(self) -> None:
        try:
            self.log.close()
        finally:
            self.lock.release()


def log_config(config: Any) -> LogConfig:
    return LogConfig(segment_bytes=config.segment_bytes, segment_ms=config.segment_ms,
                     retention_bytes=config.max_retention_bytes, retention_ms=config.max_retention_ms)


def _read_meta(directory: str) -> MetaProperties:
    if not os.path.exists(os.path.join(directory, META_PROPERTIES)):
        raise MetaPropertiesError(f"No `meta.properties` found in {directory} (have you run `pykraft storage format` "
                                  f"to format the directory?)")
    return read_meta_properties(directory)


def check_directories(config: Any) -> MetaProperties:
    """The metadata dir's meta.properties, after checking every formatted dir against the configured node."""
    meta = _read_meta(config.metadata_log_dir)
    for directory in dict.fromkeys((config.metadata_log_dir, *config.log_dirs)):
        other = meta if directory == config.metadata_log_dir else (
            read_meta_properties(directory) if os.path.exists(os.path.join(directory, META_PROPERTIES)) else None)
        if other is None:
            continue
        path = os.path.join(directory, META_PROPERTIES)
        if other.node_id != config.node_id:
            raise MetaPropertiesError(
                f"Stored node id {other.node_id} doesn't match previous node id {config.node_id} in {path}. If you "
                f"moved your data, make sure your configured node id matches. If you intend to create a new node, "
                f"you should remove all data in your data directories.")
        if other.cluster_id != meta.cluster_id:
            raise MetaPropertiesError(f"Invalid cluster.id in: {path}. Expected {meta.cluster_id}, but read "
                                      f"{other.cluster_id}")
    if meta.version != 1:
        raise MetaPropertiesError(f"{os.path.join(config.metadata_log_dir, META_PROPERTIES)}: version "
                                  f"{meta.version} is a ZooKeeper-era directory; KRaft needs version 1")
    return meta


def election_from(data: QuorumStateData | None) -> ElectionState | None:
    if data is None:
        return None
    voted = None if data.voted_id < 0 else ReplicaKey.of(data.voted_id, data.voted_directory_id)
    return ElectionState(data.leader_epoch, None if data.leader_id < 0 else data.leader_id, voted)


def open_node_storage(config: Any) -> NodeStorage:
    """Lock, check and open the metadata log directory. Raises `StorageError` (and releases the lock)."""
    lock = DirectoryLock(config.metadata_log_dir)
    try:
        meta = check_directories(config)
        store = QuorumStateStore(os.path.join(config.metadata_log_dir, PARTITION_DIR_NAME))
        data = store.load()
        log, report = open_file_log(config.metadata_log_dir, log_config(config), lock=lock)
        # The raft core appends only `bytes` it built or decoded and never touches again: a leader's followers then
        # fetch, and a follower's replay of committed records reads, what was just appended from memory, not by
        # two preads each (the runtime releases what has been read).
        log.keep_appends = True
    except BaseException:
        lock.release()
        raise
    try:
        store.repair()
        if store.repaired:
            _log.warning("repaired %s from its other copy", store.repaired)
    except BaseException:
        log.close()
        lock.release()
        raise
    return NodeStorage(meta, log, report, store, election_from(data), data.data_version if data else 0, lock)


PARTITION_DIR_NAME = "__cluster_metadata-0"

__all__ = ["NodeStorage", "StorageError", "check_directories", "election_from", "open_node_storage", "log_config"]
