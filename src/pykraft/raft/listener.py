"""Delivery to the state machine listener, in order (§1.11): a snapshot load when the listener is behind the log
start (never on an active leader), then committed batches up to the HWM, and a leader change once the listener
has caught up to the new leader's epoch start offset (immediately for other leaders)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pykraft.raft.effects import CommitBatches, LeaderChanged, LoadSnapshot
from pykraft.raft.log import BOOTSTRAP_SNAPSHOT_ID
from pykraft.records import iter_batches

if TYPE_CHECKING:
    from pykraft.raft.client import RaftCore


class ListenerProgress:
    def __init__(self) -> None:
        self.next_offset = 0
        self.notified: tuple[int | None, int] | None = None
        self.skipped_snapshot_loads = 0

    def deliver(self, core: RaftCore, now_ms: int) -> None:
        log = core.log
        leader = core.leader_state()
        snapshot_id = log.latest_snapshot_id()
        behind = self.next_offset < log.start_offset() or (
            self.next_offset == 0 and snapshot_id is not None and snapshot_id != BOOTSTRAP_SNAPSHOT_ID)
        if behind and snapshot_id is not None and snapshot_id.offset > self.next_offset:
            if leader is not None and self.notified == (leader.local_key.id, leader.epoch):
                # LeaderNeverLoadSnapshot: once the state machine acts as leader it never reloads. A new leader
                # whose listener is still catching up (not yet told of its leadership) may load one.
                self.skipped_snapshot_loads += 1
            else:
                core.emit(LoadSnapshot(snapshot_id))
                self.next_offset = snapshot_id.offset
        hwm = core.high_watermark
        if hwm is not None and self.next_offset < hwm and self.next_offset >= log.start_offset():
            fetched = log.read(self.next_offset, 2**62)
            self._commit_batches(core, fetched.records, hwm)
        self._maybe_leader_change(core)

    def _commit_batches(self, core: RaftCore, records: bytes | memoryview, hwm: int) -> None:
        view = memoryview(records)
        start = end = 0
        first = last = -1
        for batch in iter_batches(view, verify_crc=False):
            if batch.last_offset >= hwm:
                break  # a batch is committed only as a whole
            if first < 0:
                first = batch.base_offset
            last = batch.last_offset
            end += batch.size_in_bytes
        if last >= 0:
            core.emit(CommitBatches(bytes(view[start:end]), first, last))
            self.next_offset = last + 1

    def _maybe_leader_change(self, core: RaftCore) -> None:
        epoch = core.quorum.epoch
        leader_id = core.quorum.leader_id()
        current = (leader_id, epoch)
        if current == self.notified:
            return
        leader = core.leader_state()
        if leader is not None and self.next_offset < leader.epoch_start_offset:
            return  # the local leader is announced once the listener has replayed everything before its epoch
        self.notified = current
        core.emit(LeaderChanged(leader_id, epoch))
