"""The bootstrap snapshot, and `SnapshotBuilder`, a thin adapter over the raft core's `SnapshotWriter`.

The snapshot layout (header control batch, data batches numbered from 0, footer control batch) has exactly one
implementation: `pykraft.raft.snapshot_writer.SnapshotWriter`. This module only adapts its inputs: kio's
`VotersRecord` becomes a `VoterSet`, and `SimpleRecord`s become the opaque values the writer takes.

The bootstrap snapshot `00000000000000000000-0000000000.checkpoint` written by `storage format` for a dynamic
quorum holds only the header batch (with KRaftVersion + Voters) and the footer.
"""

from __future__ import annotations

from collections.abc import Sequence

from kio.schema.voters_record.v0 import VotersRecord

from pykraft.raft.log import BOOTSTRAP_SNAPSHOT_ID, RawSnapshotWriter, SnapshotId
from pykraft.raft.snapshot_writer import SnapshotWriter
from pykraft.raft.voter_set import VoterSet
from pykraft.records import SimpleRecord


def _voter_set(voters: VotersRecord | None) -> VoterSet | None:
    if voters is None:
        return None
    voter_set = VoterSet.from_voters_record(voters)
    # Writing a record Kafka would refuse to load (empty, duplicate ids) would make an unbootable directory.
    if voter_set is None:
        raise ValueError(f"unusable voter set for a snapshot: {voters}")
    return voter_set


class SnapshotBuilder:
    """`SnapshotWriter` for callers that hold a kio `VotersRecord` and `SimpleRecord`s (storage tools, tests).

    Only record values are kept: snapshot records carry no keys or headers, and their timestamps are the
    batch's (`now_ms`), as in Kafka's `RecordsSnapshotWriter`."""

    def __init__(
        self,
        writer: RawSnapshotWriter,
        *,
        last_contained_log_timestamp: int,
        now_ms: int,
        kraft_version: int = 1,
        voters: VotersRecord | None = None,
    ) -> None:
        assert kraft_version > 0 or voters is None, "no voter set at kraft.version 0"
        self._raw = writer
        self._writer = SnapshotWriter(
            writer,
            last_contained_log_time_ms=last_contained_log_timestamp,
            now_ms=now_ms,
            kraft_version=kraft_version,
            voters=_voter_set(voters),
            on_frozen=lambda _id: None,  # the raw writer registers the frozen file with its log
        )

    def append(self, records: Sequence[SimpleRecord]) -> None:
        """One data batch."""
        values = [r.value for r in records]
        assert all(v is not None for v in values), "snapshot records have values"
        self._writer.append(values)  # type: ignore[arg-type]

    def freeze(self) -> int:
        """Footer, fsync, rename; returns the snapshot's size in bytes."""
        self._writer.freeze()
        return self._raw.size_in_bytes()


def write_bootstrap_snapshot(log: object, voters: VotersRecord, now_ms: int) -> SnapshotId:
    """Write `00000000000000000000-0000000000.checkpoint` with KRaftVersion 1 and the voter set."""
    writer = log.create_new_snapshot_unchecked(BOOTSTRAP_SNAPSHOT_ID)  # type: ignore[attr-defined]
    assert writer is not None, "the bootstrap snapshot already exists"
    SnapshotBuilder(writer, last_contained_log_timestamp=0, now_ms=now_ms, kraft_version=1, voters=voters).freeze()
    return BOOTSTRAP_SNAPSHOT_ID
