"""Durable storage: log directories in Apache Kafka's layout and byte formats.

- `open_file_log` / `FileLog`: the raft core's `ReplicatedLog` on segment files, with recovery on open; the
  metadata log and every partition log of a broker (`PartitionLogs`, log_manager.py) are this one class.
- `FlushTicket`: group commit (many appends, one fsync, optionally in a worker thread).
- `QuorumStateStore`: the `quorum-state` file, kept twice with a checksum.
- `MetaProperties`, `DirectoryLock`: `meta.properties` and the `.lock` of a log directory.
- Errors are `StorageError` subclasses; see `errors.py` for the disk-replacement advice they carry.
"""

from .errors import (
    CorruptLogError,
    CorruptSnapshotError,
    LogDirectoryLockedError,
    LogLayoutError,
    MetaPropertiesError,
    QuorumStateCorruptError,
    StorageError,
)
from .file_log import FileLog, LogConfig
from .flush import FlushTicket
from .locking import DirectoryLock
from .log_manager import PartitionLogs
from .log_open import RecoveryReport, open_file_log
from .meta_properties import MetaProperties, read_meta_properties, write_meta_properties
from .quorum_state import QuorumStateData, QuorumStateStore
from .recovery import TornTail
from .retention import maybe_clean

__all__ = [
    "CorruptLogError",
    "CorruptSnapshotError",
    "DirectoryLock",
    "FileLog",
    "FlushTicket",
    "LogConfig",
    "LogDirectoryLockedError",
    "LogLayoutError",
    "MetaProperties",
    "MetaPropertiesError",
    "PartitionLogs",
    "QuorumStateCorruptError",
    "QuorumStateData",
    "QuorumStateStore",
    "RecoveryReport",
    "StorageError",
    "TornTail",
    "maybe_clean",
    "open_file_log",
    "read_meta_properties",
    "write_meta_properties",
]
