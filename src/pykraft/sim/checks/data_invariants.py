"""Invariants of the data plane, over the simulated brokers' partition logs and the producers' acknowledgements.

Names:
- HighWatermarkMonotonic (after every event): a leader replica's high watermark never moves backwards within its
  leader epoch.
- ReplicasAgreeBelowHwm (every K events and at the end): two replicas of a partition hold the same batches (same
  offsets, epoch and CRC) below the smaller of their high watermarks.
- NoDuplicateSequence (same): no log holds two batches of one (producer id, epoch, base sequence).
- AckedRecordNotLost (same): every record acknowledged with acks=all is in the log of the partition's current
  leader at the offset it was acknowledged at (unless DeleteRecords removed it), while at most
  RF - min.insync.replicas replicas failed (`loss_allowed` turns it off for scenarios that go beyond: unclean
  elections).
- AckedRecordConsumable (at the end, once converged): every record acknowledged with acks=all and not deleted is
  read back by a consumer's Fetch (broker/fetch_answers.py, replica id -1) from the leader, below its high
  watermark.
- GroupOffsetMonotonic (after every event): in the current coordinator of each `__consumer_offsets` partition (the
  highest leader epoch; a deposed one that has not heard yet holds a stale memory nobody may act on), a group's
  committed offset of a partition never moves backwards within a generation, and is never below an OffsetCommit
  acknowledged in that generation (a coordinator failover must not lose one).
KIP-841 (fenced or shutting-down brokers never in an ISR or leading) is the metadata checker's FencedNotInIsr, on
every committed image of every node.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pykraft.broker.fetch_answers import CONSUMER, PartitionFetch, answer_partition
from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.framing import FileRegion
from pykraft.records import iter_batches

if TYPE_CHECKING:
    from pykraft.sim.engine.world import World

DATA_INVARIANTS = frozenset({"HighWatermarkMonotonic", "ReplicasAgreeBelowHwm", "NoDuplicateSequence",
                             "AckedRecordNotLost", "AckedRecordConsumable", "FollowerAppend", "GroupOffsetMonotonic"})


@dataclass(frozen=True, slots=True)
class Acked:
    topic: str
    partition: int
    offset: int
    value: bytes
    acks: int
    idempotent: bool


class DataChecker:
    def __init__(self, world: World, *, loss_allowed: bool = False) -> None:
        self.world = world
        self.loss_allowed = loss_allowed
        self.acked: list[Acked] = []
        self.sent_unacknowledged = 0  # acks=0 records: nothing is promised
        self.deleted: dict[tuple[str, int], int] = {}  # the log start DeleteRecords moved each partition to
        self.hwms: dict[tuple[str, int, int], int] = {}  # (topic, partition, leader epoch) -> leader's hwm
        # (group, generation) -> tp -> the highest offset committed (acknowledged, or seen in a coordinator)
        self.group_floors: dict[tuple[str, int], dict[tuple[str, int], int]] = {}
        self.group_commits = 0
        self.full_checks = 0
        self.consumed = 0
        world.checker.enabled = world.checker.enabled | DATA_INVARIANTS
        world.checker.event_hooks.append(self.check_event)
        world.checker.full_hooks.append(self.check_full)

    def violation(self, name: str, node: Any, detail: str) -> None:
        self.world.checker.violation(name, node, detail)

    # ---- what the workload reports ------------------------------------------------------------------------------
    def on_acked(self, topic: str, partition: int, base_offset: int, values: list[bytes], acks: int,
                 idempotent: bool) -> None:
        for index, value in enumerate(values):
            self.acked.append(Acked(topic, partition, base_offset + index, value, acks, idempotent))

    def on_sent(self, topic: str, partition: int, values: list[bytes]) -> None:
        self.sent_unacknowledged += len(values)

    def on_group_commit(self, group: str, generation: int, offsets: dict[tuple[str, int], int]) -> None:
        self.group_commits += 1
        floors = self.group_floors.setdefault((group, generation), {})
        for tp, offset in offsets.items():
            floors[tp] = max(floors.get(tp, -1), offset)

    def on_deleted(self, topic: str, partition: int, offset: int) -> None:
        """A DeleteRecords was sent: it may take effect even if its answer never comes (the leader moves its log
        start at once and answers only once every replica followed), so from now on nothing below is promised."""
        key = (topic, partition)
        self.deleted[key] = max(self.deleted.get(key, 0), offset)

    def on_disk_lost(self, node_id: int) -> None:
        """A broker's disk was replaced: its replicas start empty (its leader epochs are the controller's)."""
        self.hwms = {k: v for k, v in self.hwms.items()}

    def deletable_offset(self, topic: str, partition: int) -> int | None:
        """An offset for DeleteRecords: halfway through the acknowledged acks=all records of the partition."""
        offsets = sorted(a.offset for a in self.acked if (a.topic, a.partition) == (topic, partition) and a.acks == -1)
        return offsets[len(offsets) // 2] if offsets else None

    # ---- the replicas -----------------------------------------------------------------------------------------
    def _brokers(self) -> list[Any]:
        return [n for _, n in sorted(self.world.nodes.items()) if hasattr(n, "partition_logs")]

    def _leaders(self) -> dict[tuple[str, int], Any]:
        """Each partition's replica leading the highest epoch among the live brokers' open data planes."""
        best: dict[tuple[str, int], Any] = {}
        for broker in self._brokers():
            data = broker.data
            if data is None or not data.open:
                continue
            for key, replica in data.host.replicas.items():
                if replica.leading is not None and (key not in best or replica.leader_epoch > best[key].leader_epoch):
                    best[key] = replica
        return best

    def check_event(self) -> None:
        self._check_groups()
        for broker in self._brokers():
            data = broker.data
            if data is None or not data.open:
                continue
            for (topic, partition), replica in data.host.replicas.items():
                if replica.leading is None:
                    continue
                key = (topic, partition, replica.leader_epoch)
                hwm = replica.log.high_watermark()
                before = self.hwms.get(key, -1)
                if hwm < before:
                    self.violation("HighWatermarkMonotonic", broker, f"{topic}-{partition} epoch "
                                                                     f"{replica.leader_epoch}: hwm {hwm} after {before}")
                self.hwms[key] = max(before, hwm)

    def _check_groups(self) -> None:
        for broker, coordinator in self._current_coordinators():
            for group in coordinator.groups.values():
                floors = self.group_floors.setdefault((group.group_id, group.generation), {})
                for tp, floor in floors.items():
                    entry = group.offsets.get(tp)
                    if entry is None or entry.offset < floor:
                        self.violation("GroupOffsetMonotonic", broker, f"group {group.group_id} generation "
                                                                       f"{group.generation} {tp[0]}-{tp[1]}: "
                                                                       f"committed {entry and entry.offset} after "
                                                                       f"{floor}")
                        return
                for tp, entry in group.offsets.items():
                    floors[tp] = max(floors.get(tp, -1), entry.offset)

    def _current_coordinators(self) -> list[tuple[Any, Any]]:
        """Per `__consumer_offsets` partition, the coordinator of the highest leader epoch among the live brokers:
        a deposed one that has not heard of it yet keeps a stale memory that nobody may act on (its writes cannot
        commit), the group's committed offsets are the current coordinator's."""
        best: dict[int, tuple[int, Any, Any]] = {}
        for broker in self._brokers():
            groups = getattr(broker, "groups", None)
            data = broker.data
            if groups is None or data is None or not data.open:
                continue
            for partition, coordinator in groups.coordinators.items():
                replica = data.host.replicas.get(("__consumer_offsets", partition))
                epoch = -1 if replica is None else replica.leader_epoch
                if partition not in best or epoch > best[partition][0]:
                    best[partition] = (epoch, broker, coordinator)
        return [(broker, coordinator) for _, broker, coordinator in best.values()]

    def check_full(self) -> None:
        self.full_checks += 1
        logs: dict[tuple[str, int], list[tuple[Any, Any, dict[int, tuple[int, int, int]]]]] = {}
        for broker in self._brokers():
            for key, log in broker.partition_logs.items():
                batches = log.batches()
                self._check_sequences(broker, key, batches)
                logs.setdefault(key, []).append((broker, log, {b.base_offset: (b.last_offset,
                                                                               b.partition_leader_epoch, b.crc)
                                                               for b in batches}))
        if not self.loss_allowed:
            for replicas in logs.values():
                self._check_agreement(replicas)
            self._check_acked_kept()

    def _check_sequences(self, broker: Any, key: tuple[str, int], batches: list[Any]) -> None:
        seen: set[tuple[int, int, int]] = set()
        for batch in batches:
            if batch.producer_id < 0 or batch.is_control:  # a transaction marker has no sequence
                continue
            ident = (batch.producer_id, batch.producer_epoch, batch.base_sequence)
            if ident in seen:
                self.violation("NoDuplicateSequence", broker, f"{key[0]}-{key[1]}: producer {ident[0]} epoch "
                                                              f"{ident[1]} sequence {ident[2]} twice")
            seen.add(ident)

    def _check_agreement(self, replicas: list[tuple[Any, Any, dict[int, tuple[int, int, int]]]]) -> None:
        for i, (a, log_a, batches_a) in enumerate(replicas):
            for b, log_b, batches_b in replicas[i + 1:]:
                low = max(log_a.start_offset(), log_b.start_offset())
                high = min(log_a.high_watermark(), log_b.high_watermark())
                for base, shape in batches_a.items():
                    if low <= base and shape[0] < high and batches_b.get(base, shape) != shape:
                        self.violation("ReplicasAgreeBelowHwm", a, f"{log_a.key[0]}-{log_a.key[1]}: the batch at "
                                                                   f"{base} differs on broker {b.node_id} below hwm "
                                                                   f"{high}")
                        return

    def _check_acked_kept(self) -> None:
        leaders = self._leaders()
        values: dict[tuple[str, int], dict[int, bytes]] = {}
        for acked in self.acked:
            key = (acked.topic, acked.partition)
            replica = leaders.get(key)
            if acked.acks != -1 or replica is None or acked.offset < max(replica.log.start_offset(),
                                                                         self.deleted.get(key, 0)):
                continue
            if key not in values:
                values[key] = _values(replica.log, replica.log.start_offset(), replica.log.end_offset())
            found = values[key].get(acked.offset)
            if found != acked.value:
                self.violation("AckedRecordNotLost", None, f"{acked.value!r} acknowledged at {acked.topic}-"
                                                           f"{acked.partition}@{acked.offset}, the leader (epoch "
                                                           f"{replica.leader_epoch}) has {found!r}")
                return

    # ---- at the end ------------------------------------------------------------------------------------------
    def gaps(self) -> list[str]:
        """Liveness: every partition led, with its high watermark at its log end and every live broker's replica
        caught up with it."""
        gaps = []
        leaders = self._leaders()
        for key, replica in sorted(leaders.items()):
            if replica.log.high_watermark() < replica.log.end_offset():
                gaps.append(f"{key[0]}-{key[1]} hwm {replica.log.high_watermark()} < end {replica.log.end_offset()}")
        for broker in self._brokers():
            data = broker.data
            if data is None or not data.open:
                gaps.append(f"broker {broker.node_id}'s partition logs are not open")
                continue
            for key, replica in sorted(data.host.replicas.items()):
                leader = leaders.get(key)
                if leader is not None and replica.log.end_offset() < leader.log.end_offset():
                    gaps.append(f"{key[0]}-{key[1]} on broker {broker.node_id} ends at {replica.log.end_offset()} "
                                f"< {leader.log.end_offset()}")
        return gaps

    def check_consumable(self) -> None:
        """A consumer reads every partition from its leader (the Fetch path of broker/fetch_answers.py)."""
        leaders = self._leaders()
        brokers = {id(r): b for b in self._brokers() if b.data is not None for r in b.data.host.replicas.values()}
        read: dict[tuple[str, int], dict[int, bytes]] = {}
        for key, replica in leaders.items():
            host = brokers[id(replica)].data.host
            read[key] = _consume(host, key, replica.log.start_offset())
        for acked in self.acked:
            key = (acked.topic, acked.partition)
            if acked.acks != -1 or acked.offset < self.deleted.get(key, 0):
                continue
            if self.loss_allowed:
                continue
            found = read.get(key, {}).get(acked.offset)
            if found != acked.value:
                self.violation("AckedRecordConsumable", None, f"{acked.value!r} acknowledged at {acked.topic}-"
                                                              f"{acked.partition}@{acked.offset}, consumed {found!r}")
                return
            self.consumed += 1

    def stats(self) -> dict[str, Any]:
        return {"group_commits": self.group_commits, "acked_records": len(self.acked), "acked_all": sum(a.acks == -1 for a in self.acked),
                "acks0_sent": self.sent_unacknowledged, "consumed_checked": self.consumed,
                "data_full_checks": self.full_checks, "deleted_to": dict(sorted(
                    (f"{t}-{p}", o) for (t, p), o in self.deleted.items()))}


def _values(log: Any, start: int, end: int) -> dict[int, bytes]:
    found: dict[int, bytes] = {}
    if end <= start:
        return found
    for batch in iter_batches(log.read(start, 1 << 62).records, verify_crc=False):
        for record in batch.records():
            found[record.offset] = b"" if record.value is None else bytes(record.value)
    return found


def _consume(host: Any, key: tuple[str, int], start: int) -> dict[int, bytes]:
    found: dict[int, bytes] = {}
    offset = start
    while True:
        answer = answer_partition(host, key[0], ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                  PartitionFetch(key[1], offset, max_bytes=1 << 16), CONSUMER, -1, 0)
        if answer.error is not ErrorCode.NONE or not len(answer.records):
            return found
        assert not isinstance(answer.records, FileRegion), "the simulated log has no files"
        for batch in iter_batches(answer.records, verify_crc=True):
            for record in batch.records():
                if record.offset >= offset:
                    found[record.offset] = b"" if record.value is None else bytes(record.value)
            offset = max(offset, batch.last_offset + 1)
