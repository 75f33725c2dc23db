"""Errors of the storage layer.

Every problem with a file on disk surfaces as a `StorageError` subclass whose message names the file, and for
log data the byte position and offset, plus what the operator can do about it. Storage never "repairs" data
that may have been committed by throwing it away: it refuses to start instead (Protocol-Aware Recovery, FAST'18:
truncating a corrupted committed entry lets a faulty node help elect a leader that overwrites committed data).
"""

from __future__ import annotations

import os

# The way out for an unrecoverable metadata log directory: KIP-853's disk replacement flow. The node rejoins
# under a fresh directory id, so the quorum never counts the lost promises of the old directory.
DISK_REPLACEMENT_ADVICE = (
    "This node cannot safely repair this on its own. Replace the directory: stop the node, move the metadata log "
    "directory aside, run `pykraft storage format` with a NEW directory id (never reuse the old one), start the "
    "node as an observer and add it back with `pykraft metadata-quorum add-controller` after removing the old "
    "replica key with `remove-controller` (KIP-853 disk replacement)."
)


# A partition log (not the metadata log) is recovered from its leader instead (Kafka's way too).
PARTITION_REPLACEMENT_ADVICE = (
    "Stop the broker and move this partition directory aside; on restart the broker fetches the partition again "
    "from its leader (data that only this replica held is lost, so first check that another in-sync replica exists)."
)


def _advice_for(path: str) -> str:
    directory = os.path.basename(os.path.dirname(path))
    return DISK_REPLACEMENT_ADVICE if directory.startswith("__cluster_metadata-") else PARTITION_REPLACEMENT_ADVICE


class StorageError(Exception):
    """Base class of every storage failure."""


class CorruptLogError(StorageError):
    """A batch before the tail of the log failed its CRC, framing or offset checks."""

    def __init__(self, path: str, position: int, offset: int | None, reason: str) -> None:
        where = f"offset {offset}" if offset is not None else "unknown offset"
        super().__init__(
            f"corrupt {'metadata ' if _advice_for(path) is DISK_REPLACEMENT_ADVICE else 'partition '}log: {path} at "
            f"byte position {position} ({where}): {reason}. This is not a torn write at the tail, so committed "
            f"data may be affected and nothing was truncated. {_advice_for(path)}"
        )
        self.path = path
        self.position = position
        self.offset = offset
        self.reason = reason


class CorruptSnapshotError(StorageError):
    """A frozen `.checkpoint` file whose batches fail their checks (frozen snapshots are never torn)."""

    def __init__(self, path: str, position: int, reason: str) -> None:
        super().__init__(
            f"corrupt snapshot {path} at byte position {position}: {reason}. {DISK_REPLACEMENT_ADVICE}"
        )
        self.path = path
        self.position = position


class QuorumStateCorruptError(StorageError):
    """Both copies of the quorum state are unreadable: the node would forget its vote or epoch."""


class MetaPropertiesError(StorageError):
    """`meta.properties` is missing a key, has an unsupported version, or does not match the expected node."""


class LogDirectoryLockedError(StorageError):
    """Another process (or another open in this process) holds the directory lock."""


class LogLayoutError(StorageError):
    """Files in the partition directory that do not fit together (gaps between segments, bad names)."""
