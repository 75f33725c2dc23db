"""Snapshot content as Kafka's `RecordsSnapshotWriter` lays it out, and the bootstrap snapshot.

A snapshot file is a sequence of v2 batches whose offsets start at 0 and whose leader epoch is the snapshot id's
epoch:
1. one control batch: `SnapshotHeaderRecord(version 0, LastContainedLogTimestamp)`, then, at kraft.version >= 1,
   `KRaftVersionRecord` and (when a voter set is known) `VotersRecord`;
2. the data batches;
3. one control batch with `SnapshotFooterRecord(version 0)`.

The bootstrap snapshot `00000000000000000000-0000000000.checkpoint` written by `storage format` for a dynamic
quorum holds only the header batch (with KRaftVersion + Voters) and the footer.
"""

from __future__ import annotations

from collections.abc import Sequence

from kio.schema.k_raft_version_record.v0 import KRaftVersionRecord
from kio.schema.snapshot_footer_record.v0 import SnapshotFooterRecord
from kio.schema.snapshot_header_record.v0 import SnapshotHeaderRecord
from kio.schema.voters_record.v0 import VotersRecord
from kio.static.primitive import i16, i64

from pykraft.raft.log import BOOTSTRAP_SNAPSHOT_ID, RawSnapshotWriter, SnapshotId
from pykraft.records import SimpleRecord, encode_batch
from pykraft.records.control import encode_control_batch


class SnapshotBuilder:
    """Writes header, data batches and footer to a `RawSnapshotWriter`, then freezes it."""

    def __init__(
        self,
        writer: RawSnapshotWriter,
        *,
        last_contained_log_timestamp: int,
        now_ms: int,
        kraft_version: int = 1,
        voters: VotersRecord | None = None,
    ) -> None:
        assert writer.size_in_bytes() == 0, "a snapshot builder starts on an empty snapshot"
        assert kraft_version > 0 or voters is None, "no voter set at kraft.version 0"
        self._writer = writer
        self._epoch = writer.snapshot_id.epoch
        self._now = now_ms
        self._next_offset = 0
        messages: list[object] = [
            SnapshotHeaderRecord(version=i16(0), last_contained_log_timestamp=i64(last_contained_log_timestamp))
        ]
        if kraft_version > 0:
            messages.append(KRaftVersionRecord(version=i16(0), k_raft_version=i16(kraft_version)))
            if voters is not None:
                messages.append(voters)
        self._control(messages)

    def _control(self, messages: Sequence[object]) -> None:
        data = encode_control_batch(
            messages, base_offset=self._next_offset, partition_leader_epoch=self._epoch, timestamp_ms=self._now
        )
        self._writer.append(data)
        self._next_offset += len(messages)

    def append(self, records: Sequence[SimpleRecord]) -> None:
        """One data batch."""
        self._writer.append(
            encode_batch(records, base_offset=self._next_offset, partition_leader_epoch=self._epoch, timestamp_ms=self._now)
        )
        self._next_offset += len(records)

    def freeze(self) -> int:
        self._control([SnapshotFooterRecord(version=i16(0))])
        self._writer.freeze()
        size = self._writer.size_in_bytes()
        self._writer.close()
        return size


def write_bootstrap_snapshot(log: object, voters: VotersRecord, now_ms: int) -> SnapshotId:
    """Write `00000000000000000000-0000000000.checkpoint` with KRaftVersion 1 and the voter set."""
    writer = log.create_new_snapshot_unchecked(BOOTSTRAP_SNAPSHOT_ID)  # type: ignore[attr-defined]
    assert writer is not None, "the bootstrap snapshot already exists"
    SnapshotBuilder(writer, last_contained_log_timestamp=0, now_ms=now_ms, kraft_version=1, voters=voters).freeze()
    return BOOTSTRAP_SNAPSHOT_ID
