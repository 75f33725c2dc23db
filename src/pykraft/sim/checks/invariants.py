"""Safety invariants, after the KRaft TLA+ specs and Kafka's RaftEventSimulationTest. Each has a name used in
reports. Cheap ones run after every event (`check_event`); the ones that read logs run incrementally from hooks
the nodes call (commit, persist, snapshot, ack) or every K events and at the end (`check_full`).

Names:
- SingleLeader: no two leaders in one epoch (persisted election states and live roles).
- MonotonicEpoch: per disk, the persisted epoch never decreases and equals the live core's epoch.
- MonotonicHighWatermark: the newest leader's high watermark never decreases (also across leaders).
- MajorityReachedHighWatermark: a majority of the last or the committed voter set (by key: id and directory id)
  has a log end at or above the newest leader's high watermark. Off in runs that wipe a disk (as Kafka's).
- AtMostOneUncommittedVoterSet: the newest leader has at most one VotersRecord at or above its high watermark.
- TargetSurvivesFailover: once a quorum reassignment target record (pykraft's target tag on a VotersRecord) is
  committed, the one in force at every newer leader's high watermark is it or a later one; where a snapshot covers
  its offset, the same target.
- NoDivergence: every committed batch (offset range, epoch, stored CRC) is the same on every node, and every
  node's log below its high watermark agrees with it; the state after each batch is the same everywhere,
  including states loaded from or written to snapshots (ConsistentCommittedData).
- NoTruncationBelowCommitted: a node's log end never falls below what its state machine applied, and its high
  watermark never exceeds its log end.
- LeaderHasAllAckedValues: the newest leader's log holds every acknowledged value (at or above its log start).
- AckedValueNotLost: every acknowledged value is the committed value at its offset.
- SnapshotAtLogStart: the earliest snapshot is at or after the log start, and exactly at it when the start > 0.
- LeaderNeverLoadSnapshot: a state machine told it leads never loads a snapshot (checked in node.py).
"""

from __future__ import annotations

from collections.abc import Callable

import bisect
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pykraft.raft.effects import LeaderChanged
from pykraft.raft.election import ElectionState
from pykraft.raft.log import SnapshotId
from pykraft.raft.memory_log import MemoryLog
from pykraft.raft.voter_set import VoterSet
from pykraft.records import iter_batches
from pykraft.sim.engine.statemachine import Applied, CommittedBatch, Digest

if TYPE_CHECKING:
    from pykraft.sim.engine.node import SimNode

ALL_INVARIANTS = frozenset({
    "SingleLeader", "MonotonicEpoch", "MonotonicHighWatermark", "MajorityReachedHighWatermark",
    "AtMostOneUncommittedVoterSet", "TargetSurvivesFailover", "NoDivergence", "NoTruncationBelowCommitted", "LeaderHasAllAckedValues",
    "AckedValueNotLost", "SnapshotAtLogStart", "LeaderNeverLoadSnapshot", "ListenerOrder", "SnapshotReadable",
    # checked by the runner and scenarios
    "ProgressWithMajority", "StableLeadership", "Liveness", "Linearizability",
})
# What a deliberate loss of one node's committed data may break (Kafka turns the same ones off; our MonotonicEpoch
# is per disk, so a replaced disk starting again at epoch 0 does not break it).
DATA_LOSS_EXEMPT = frozenset({"MajorityReachedHighWatermark"})
MAJORITY_RECHECK_EVENTS = 16


@dataclass(frozen=True, slots=True)
class Violation:
    invariant: str
    node: int | None
    detail: str
    time_ms: int

    def format(self) -> str:
        where = "" if self.node is None else f" on node {self.node}"
        return f"{self.invariant}{where} at {self.time_ms} ms: {self.detail}"


@dataclass
class Checker:
    nodes: dict[int, SimNode]
    enabled: frozenset[str] = ALL_INVARIANTS
    now_ms: int = 0
    violations: list[Violation] = field(default_factory=list)
    leader_of_epoch: dict[int, int] = field(default_factory=dict)
    persisted_epoch: dict[tuple[int, int], int] = field(default_factory=dict)  # (node, disk generation) -> epoch
    newest_hwm: tuple[int, int] = (-1, -1)  # (epoch, hwm) of the newest leader with a known HWM
    batches: dict[int, CommittedBatch] = field(default_factory=dict)  # base offset -> the first committed copy
    batch_starts: list[int] = field(default_factory=list)  # sorted base offsets of `batches`
    digests: dict[int, Digest] = field(default_factory=dict)  # end offset -> state after it
    committed_values: dict[int, bytes] = field(default_factory=dict)
    acked: list[tuple[int, bytes]] = field(default_factory=list)
    ack_checked: dict[tuple[int, int], int] = field(default_factory=dict)  # (leader, epoch) -> acks verified
    storage_faults: list[str] = field(default_factory=list)
    elections: set[tuple[int, int]] = field(default_factory=set)  # (epoch, leader) seen
    # Checks of the hosts beyond raft (the data plane's, data_invariants.py): after every event, every K events
    event_hooks: list[Callable[[], None]] = field(default_factory=list)
    full_hooks: list[Callable[[], None]] = field(default_factory=list)
    # (offset, target ids or None when cleared) of the newest committed target record any leader held
    committed_target: tuple[int, frozenset[int] | None] | None = None
    _majority_signature: tuple[int, int, int, int] | None = None
    _majority_countdown: int = 0

    def violation(self, invariant: str, node: SimNode | None, detail: str) -> None:
        if invariant in self.enabled:
            self.violations.append(Violation(invariant, None if node is None else node.node_id, detail,
                                             self.now_ms))

    # ---- hooks called by the nodes -----------------------------------------------------------------------------
    def on_persist(self, node: SimNode, state: ElectionState) -> None:
        key = (node.node_id, node.disk.generation)
        previous = self.persisted_epoch.get(key, -1)
        if state.epoch < previous:
            self.violation("MonotonicEpoch", node, f"persisted epoch {state.epoch} after {previous}")
        self.persisted_epoch[key] = state.epoch
        if state.leader_id is not None:
            known = self.leader_of_epoch.setdefault(state.epoch, state.leader_id)
            if known != state.leader_id:
                self.violation("SingleLeader", node, f"epoch {state.epoch} has leaders {known} and {state.leader_id}")
            self.elections.add((state.epoch, state.leader_id))

    def on_commit(self, node: SimNode, applied: list[Applied], batches: list[CommittedBatch]) -> None:
        for batch in batches:
            self._record_batch(node, batch)
        for record in applied:
            known = self.committed_values.setdefault(record.offset, record.value)
            if known != record.value:
                self.violation("NoDivergence", node, f"offset {record.offset} committed as {record.value!r} "
                                                     f"and {known!r}")

    def _record_batch(self, node: SimNode, batch: CommittedBatch) -> None:
        known = self.batches.get(batch.base_offset)
        if known is None:
            index = bisect.bisect_left(self.batch_starts, batch.base_offset)
            if index > 0 and self.batches[self.batch_starts[index - 1]].last_offset >= batch.base_offset:
                self.violation("NoDivergence", node, f"committed batch at {batch.base_offset} inside another one")
            self.batches[batch.base_offset] = batch
            self.batch_starts.insert(index, batch.base_offset)
        elif (known.last_offset, known.epoch, known.crc) != (batch.last_offset, batch.epoch, batch.crc):
            self.violation("NoDivergence", node, f"committed batch at {batch.base_offset} differs: {known} vs {batch}")
        self._record_digest(node, batch.last_offset + 1, batch.digest_after, "after batch")

    def _record_digest(self, node: SimNode, offset: int, digest: Digest, how: str) -> None:
        known = self.digests.setdefault(offset, digest)
        if known != digest:
            self.violation("NoDivergence", node, f"state at offset {offset} ({how}) is {digest}, elsewhere {known}")

    def on_snapshot_taken(self, node: SimNode, snapshot_id: SnapshotId, digest: Digest) -> None:
        self._record_digest(node, snapshot_id.offset, digest, "snapshot written")

    def on_snapshot_loaded(self, node: SimNode, snapshot_id: SnapshotId, digest: Digest) -> None:
        self._record_digest(node, snapshot_id.offset, digest, "snapshot loaded")

    def on_ack(self, node: SimNode, offset: int, value: bytes) -> None:
        self.acked.append((offset, value))

    def on_leader_changed(self, node: SimNode, change: LeaderChanged) -> None:
        pass

    def on_data_loss(self, node: SimNode) -> None:
        """A disk was wiped: from now on the invariants such a loss may break are off (Kafka: for the whole run)."""
        self.enabled = self.enabled - DATA_LOSS_EXEMPT

    def on_storage_fault(self, node: SimNode, detail: str) -> None:
        self.storage_faults.append(f"node {node.node_id}: {detail}")

    # ---- after every event -------------------------------------------------------------------------------------
    def check_event(self) -> None:
        for hook in self.event_hooks:
            hook()
        newest = None
        epochs_led: dict[int, int] = {}
        for node in self.nodes.values():
            core = node.core
            if core is None:
                continue
            epoch = core.quorum.epoch
            stored = node.disk.election
            if stored is None or stored.epoch != epoch:
                self.violation("MonotonicEpoch", node, f"in-memory epoch {epoch}, persisted {stored}")
            log = node.disk.log
            end = log.end_offset()
            hwm = core.high_watermark
            if end < node.machine.next_offset or (hwm is not None and hwm > end):
                self.violation("NoTruncationBelowCommitted", node,
                               f"log end {end}, applied {node.machine.next_offset}, hwm {hwm}")
            self._check_snapshot_at_start(node)
            if core.leader_state() is not None:
                other = epochs_led.setdefault(epoch, node.node_id)
                if other != node.node_id:
                    self.violation("SingleLeader", node, f"nodes {other} and {node.node_id} lead epoch {epoch}")
                if newest is None or newest.core is None or epoch > newest.core.quorum.epoch:
                    newest = node
        if newest is not None and newest.core is not None and newest.core.high_watermark is not None:
            if all(n.core is None or n.core.quorum.epoch <= newest.core.quorum.epoch for n in self.nodes.values()):
                self._check_leader(newest)

    def _check_snapshot_at_start(self, node: SimNode) -> None:
        log = node.disk.log
        earliest = log.earliest_snapshot_id()
        start = log.start_offset()
        if (earliest is None and start > 0) or (earliest is not None and (
                earliest.offset < start or (start > 0 and earliest.offset != start))):
            self.violation("SnapshotAtLogStart", node, f"log start {start}, earliest snapshot {earliest}")

    def _check_leader(self, leader: SimNode) -> None:
        core = leader.core
        assert core is not None
        epoch, hwm = core.quorum.epoch, core.high_watermark
        assert hwm is not None
        last_epoch, last_hwm = self.newest_hwm
        if epoch >= last_epoch:
            if hwm < last_hwm:
                self.violation("MonotonicHighWatermark", leader, f"hwm {hwm} at epoch {epoch} after {last_hwm} "
                                                                 f"at epoch {last_epoch}")
            self.newest_hwm = (epoch, max(hwm, last_hwm) if epoch == last_epoch else hwm)
        last = core.voters()
        # Re-checked when the HWM, the leader or its voters change, and every few events (log ends only fall on a
        # crash or a truncation, which the periodic pass catches a few events later at worst).
        signature = (leader.node_id, epoch, hwm, id(last))
        self._majority_countdown -= 1
        if "MajorityReachedHighWatermark" in self.enabled and (
                signature != self._majority_signature or self._majority_countdown <= 0):
            self._majority_signature, self._majority_countdown = signature, MAJORITY_RECHECK_EVENTS
            committed = core.history.voter_set_at(hwm - 1)
            if not (self._majority_at(last, hwm) or self._majority_at(committed, hwm)):
                self.violation("MajorityReachedHighWatermark", leader,
                               f"hwm {hwm}: log ends {self._log_ends()} voters {sorted(last.ids())}")
        offsets = core.history._voter_offsets  # read-only look at the history (no public count of entries)
        uncommitted = len(offsets) - bisect.bisect_left(offsets, hwm)
        if uncommitted > 1:
            self.violation("AtMostOneUncommittedVoterSet", leader, f"{uncommitted} voter sets at or above {hwm}")
        self._check_target(leader, hwm)
        self._check_acked(leader, epoch)

    def _check_target(self, leader: SimNode, hwm: int) -> None:
        """TargetSurvivesFailover: the target record in force at this leader's committed end is the newest committed
        one any leader held (or newer), or, where a snapshot covers that record, the same target."""
        entry = leader.core.history.target_entry_at(hwm - 1)  # type: ignore[union-attr]
        known = self.committed_target
        if entry is not None and (known is None or entry[0] > known[0]):
            self.committed_target = (entry[0], _ids(entry[1]))
            return
        if known is None:
            return
        log = leader.disk.log
        snapshot = log.latest_snapshot_id()
        covered = known[0] < max(log.start_offset(), snapshot.offset if snapshot is not None else 0)
        in_force = None if entry is None else _ids(entry[1])
        missing = entry is None or entry[0] < known[0]
        if in_force != known[1] or (missing and not covered):
            self.violation("TargetSurvivesFailover", leader, f"the committed target record {known} is lost: the one "
                                                              f"in force at the leader's hwm {hwm} is {entry}")

    def _majority_at(self, voters: VoterSet, hwm: int) -> bool:
        reached = 0
        for key in voters.keys():
            node = self.nodes.get(key.id)
            if node is not None and node.disk.directory_id == key.directory_id and node.disk.log.end_offset() >= hwm:
                reached += 1
        return len(voters) > 0 and reached >= voters.majority()

    def _log_ends(self) -> dict[int, int]:
        return {i: n.disk.log.end_offset() for i, n in sorted(self.nodes.items())}

    def _check_acked(self, leader: SimNode, epoch: int) -> None:
        key = (leader.node_id, epoch)
        done = self.ack_checked.get(key, 0)
        if done == len(self.acked):
            return
        log = leader.disk.log
        for offset, value in self.acked[done:]:
            if offset < log.start_offset() or log.corrupted:
                continue  # covered by a snapshot (its digest is compared instead), or a disk the node cannot read
            found = read_value(log, offset) if offset < log.end_offset() else None
            if found != value:
                self.violation("LeaderHasAllAckedValues", leader, f"acked {value!r} at {offset}, leader has {found!r}")
        self.ack_checked[key] = len(self.acked)

    # ---- every K events and at the end ---------------------------------------------------------------------------
    def check_full(self) -> None:
        for hook in self.full_hooks:
            hook()
        for node in self.nodes.values():
            core = node.core
            if core is None:
                continue
            hwm = core.high_watermark or 0
            log = node.disk.log
            start = log.start_offset()
            if hwm <= start:
                continue
            data = MemoryLog.read(log, start, 2**62).records  # the raw bytes: no CRC check, no fail-stop
            for batch in iter_batches(data, verify_crc=False):
                if batch.last_offset >= hwm:
                    break
                if batch.base_offset in log.corrupted:
                    continue  # a flipped bit the node itself must detect on read
                known = self.batches.get(batch.base_offset)
                if known is not None and (known.last_offset, known.epoch, known.crc) != (
                        batch.last_offset, batch.partition_leader_epoch, batch.crc):
                    self.violation("NoDivergence", node, f"log batch at {batch.base_offset} below hwm {hwm} "
                                                         f"differs from the committed one")
        for offset, value in self.acked:
            if self.committed_values.get(offset) != value:
                self.violation("AckedValueNotLost", None, f"acked {value!r} at {offset}, committed "
                                                          f"{self.committed_values.get(offset)!r}")


def _ids(voters: VoterSet | None) -> frozenset[int] | None:
    return None if voters is None else frozenset(voters.ids())


def read_value(log: object, offset: int) -> bytes | None:
    """The data value at `offset` in a log (None for a control record or nothing there)."""
    fetched = MemoryLog.read(log, offset, 1)  # type: ignore[arg-type]
    for batch in iter_batches(fetched.records, verify_crc=False):
        if batch.base_offset <= offset <= batch.last_offset and not batch.is_control:
            for record in batch.records():
                if record.offset == offset:
                    return bytes(record.value) if record.value is not None else b""
    return None
