"""SnapshotWriter: what `RaftCore.create_snapshot` hands to the state machine.

The content follows Kafka's RecordsSnapshotWriter layout: v2 batches with offsets starting at 0 and the snapshot
id's epoch as partition leader epoch,
1. one control batch: SnapshotHeaderRecord(version 0, LastContainedLogTimestamp), then, at kraft.version >= 1,
   KRaftVersionRecord and the VotersRecord in force at the snapshot's last contained offset (carrying pykraft's
   target tag while a quorum reassignment is in progress there: records/control.py);
2. the data batches the caller appends (opaque values, one batch per `append`);
3. on `freeze`, one control batch with SnapshotFooterRecord(version 0).

Freezing makes the raw snapshot durable and visible, then tells the core (voter history bookkeeping). A writer
that is closed without being frozen is discarded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kio.schema.k_raft_version_record.v0 import KRaftVersionRecord
from kio.schema.snapshot_footer_record.v0 import SnapshotFooterRecord
from kio.schema.snapshot_header_record.v0 import SnapshotHeaderRecord
from kio.static.primitive import i16, i64

from pykraft.raft.log import RawSnapshotWriter, SnapshotId
from pykraft.raft.voter_set import VoterSet
from pykraft.records import SimpleRecord, encode_batch
from pykraft.records.control import VotersRecordWithTarget, encode_control_batch


class SnapshotWriterClosedError(RuntimeError):
    """`append` or `freeze` on a writer that was already frozen or closed (a caller bug)."""


class SnapshotWriter:
    def __init__(
        self,
        raw: RawSnapshotWriter,
        *,
        last_contained_log_time_ms: int,
        now_ms: int,
        kraft_version: int,
        voters: VoterSet | None,
        on_frozen: Callable[[SnapshotId], None],
        target: VoterSet | None = None,
    ) -> None:
        assert raw.size_in_bytes() == 0, "a snapshot writer starts on an empty snapshot"
        self._raw = raw
        self._epoch = raw.snapshot_id.epoch
        self._now_ms = now_ms
        self._next_offset = 0
        self._on_frozen = on_frozen
        self._done = False
        header: list[object] = [
            SnapshotHeaderRecord(version=i16(0), last_contained_log_timestamp=i64(last_contained_log_time_ms))
        ]
        if kraft_version >= 1:
            header.append(KRaftVersionRecord(version=i16(0), k_raft_version=i16(kraft_version)))
            if voters is not None and len(voters) > 0 and target is not None and len(target) > 0:
                header.append(VotersRecordWithTarget(voters.to_voters_record(), target.to_voters_record()))
            elif voters is not None and len(voters) > 0:
                header.append(voters.to_voters_record())
        self._control(header)

    @property
    def snapshot_id(self) -> SnapshotId:
        return self._raw.snapshot_id

    def size_in_bytes(self) -> int:
        return self._raw.size_in_bytes()

    def _control(self, messages: Sequence[object]) -> None:
        self._raw.append(encode_control_batch(
            messages, base_offset=self._next_offset, partition_leader_epoch=self._epoch, timestamp_ms=self._now_ms))
        self._next_offset += len(messages)

    def append(self, values: Sequence[bytes]) -> None:
        """One data batch holding `values` (the state machine's encoded records)."""
        if self._done:
            raise SnapshotWriterClosedError(f"snapshot {self.snapshot_id} is frozen or closed")
        if not values:
            return
        records = [SimpleRecord(value=bytes(v), timestamp_ms=self._now_ms) for v in values]
        self._raw.append(encode_batch(
            records, base_offset=self._next_offset, partition_leader_epoch=self._epoch, timestamp_ms=self._now_ms))
        self._next_offset += len(records)

    def freeze(self) -> None:
        """Write the footer and make the snapshot durable and visible. Returns once the core knows of it."""
        if self._done:
            raise SnapshotWriterClosedError(f"snapshot {self.snapshot_id} is frozen or closed")
        self._control([SnapshotFooterRecord(version=i16(0))])
        self._raw.freeze()
        self._done = True
        self._raw.close()
        self._on_frozen(self.snapshot_id)

    def close(self) -> None:
        """Discard an unfrozen snapshot; harmless after `freeze`."""
        self._done = True
        self._raw.close()

    def __enter__(self) -> SnapshotWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
