"""A deterministic, seeded world of transactions over the real pure parts: the transaction coordinator
(broker/txn_coordinator.py), the partitions' producer state (broker/producer_state.py) and the pending transactional
offsets (broker/txn_offsets.py). The simulator's brokers do not run the data plane yet, so this harness hosts these
parts itself, with an event queue, message delays, lost answers, coordinator failovers and zombie producers:

- a coordinator for every transactional id, its state log (what it wrote durably); a failover replaces it by a
  new one (next coordinator epoch) loaded from that log, which sends the markers of prepared transactions again;
- three data partitions and one `__consumer_offsets` partition, each a log of records and markers with its
  producer state; a marker completes the producer's transaction there (and commits or drops pending offsets);
- producers run transactions: InitProducerId, AddPartitionsToTxn, writes verified as KIP-890 does (the partition
  asks the coordinator unless the producer's transaction is open there), TxnOffsetCommit, EndTxn; a second
  instance of a transactional id may start at any time (fencing the first, which carries on as a zombie);
- transactions left open are aborted by the coordinator's timeout.
`run(seed)` returns what the invariants (sim/checks/txn_invariants.py) need; `check(seed)` their violations.
"""

from __future__ import annotations

import heapq
import itertools
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from pykraft.broker.group_state import OffsetEntry
from pykraft.broker.producer_state import ProducerStates
from pykraft.broker.txn_coordinator import NEED_PRODUCER_ID, MarkerSend, TxnCoordinator, TxnWrite
from pykraft.broker.txn_offsets import PendingTxnOffsets
from pykraft.broker.txn_state import TxnMetadata, TxnState
from pykraft.protocol.errors import ErrorCode
from pykraft.sim.checks.txn_invariants import (
    WrittenRecord, atomicity_violations, fencing_violations, offset_violations, visible_violations,
)

DATA_PARTITIONS = 3
OFFSETS = ("__consumer_offsets", 0)
TIMEOUT_MS = 400


@dataclass(slots=True)
class _Partition:
    name: tuple[str, int]
    producers: ProducerStates = field(default_factory=ProducerStates)
    log: list[tuple[str, int, object]] = field(default_factory=list)  # (kind, producer id, record id or commit)
    pending: PendingTxnOffsets = field(default_factory=PendingTxnOffsets)
    committed: dict[tuple[str, int], int] = field(default_factory=dict)

    def read_committed(self) -> list[str]:
        """What a read_committed consumer reads: below the last stable offset, aborted ranges dropped."""
        end = self.producers.last_stable_offset(len(self.log))
        aborted: dict[int, list[tuple[int, int]]] = {}
        firsts: dict[int, int] = {}
        for offset, (kind, pid, value) in enumerate(self.log):
            if kind == "data":
                firsts.setdefault(pid, offset)
            elif kind == "marker":
                if value is False:
                    aborted.setdefault(pid, []).append((firsts.get(pid, offset), offset))
                firsts.pop(pid, None)
        return [str(value) for offset, (kind, pid, value) in enumerate(self.log[:end]) if kind == "data"
                and not any(a <= offset <= b for a, b in aborted.get(pid, ()))]


@dataclass(slots=True)
class _Client:
    transactional_id: str
    instance: int
    producer_id: int = -1
    epoch: int = -1
    sequences: dict[tuple[str, int], int] = field(default_factory=dict)
    transactions: int = 0
    in_txn: bool = False  # between its AddPartitionsToTxn and its EndTxn: the only time a client writes


class TxnWorld:
    def __init__(self, seed: int, transactions: int = 12) -> None:
        self.rng = random.Random(seed)
        self.now = 0
        self._queue: list[tuple[int, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self._pids = itertools.count(1000)
        self.coordinator = TxnCoordinator(0, 0, max_timeout_ms=60_000)
        self.state_log: list[tuple[str, TxnMetadata | None]] = []
        self.partitions = {("t", i): _Partition(("t", i)) for i in range(DATA_PARTITIONS)}
        self.partitions[OFFSETS] = _Partition(OFFSETS)
        self.records: dict[str, WrittenRecord] = {}
        self.outcome_of: dict[str, str] = {}
        self._undecided: dict[str, list[str]] = {}  # transactional id -> records of its current transaction
        self.txn_offsets: list[tuple[tuple[str, int], int, str]] = []
        self._offsets_undecided: dict[str, list[tuple[tuple[str, int], int]]] = {}
        self.transactions = transactions
        self.early_violations: list[str] = []
        self.clients: dict[tuple[str, int], _Client] = {}
        self._zombie_started = False

    # ---- the event queue ---------------------------------------------------------------------------------------
    def after(self, delay: int, action: Callable[..., None]) -> None:  # (lambdas binding loop values as defaults)
        heapq.heappush(self._queue, (self.now + delay, next(self._seq), action))

    def delay(self) -> int:
        return self.rng.randint(1, 30)

    def run(self) -> None:
        for n, txn_id in enumerate(("alpha", "beta")):
            self.after(n, lambda t=txn_id: self.init(_Client(t, 0)))
        self.after(self.rng.randint(50, 400), self.second_instance)
        for _ in range(self.rng.randint(0, 3)):
            self.after(self.rng.randint(20, 900), self.failover)
        self.after(TIMEOUT_MS, self.tick)
        steps = 0
        while self._queue and steps < 50_000:
            self.now, _, action = heapq.heappop(self._queue)
            action()
            steps += 1
            if steps % 25 == 0:
                self.early_violations += visible_violations(self.visible(), self.outcome_of, self.records)

    def tick(self) -> None:
        """The coordinator's periodic abort of timed-out transactions, while anything may still be open."""
        for write in self.coordinator.timed_out(self.now):
            self.write(self.coordinator, write, lambda _d: None)
        if any(m.state in (TxnState.ONGOING, TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT) or m.pending
               for m in self.coordinator.txns.values()) or len(self._queue) > 0:
            self.after(TIMEOUT_MS // 2, self.tick)

    # ---- the coordinator and its state log ---------------------------------------------------------------------
    def write(self, coordinator: TxnCoordinator, write: TxnWrite, then: Callable[[ErrorCode], None]) -> None:
        """Append the transit (if still the coordinator), maybe lose the answer, then apply it."""
        def done() -> None:
            current = coordinator is self.coordinator
            durable = current and self.rng.random() < 0.95
            if durable:
                self.log_state(write)
            answered = durable and self.rng.random() < 0.95
            error = ErrorCode.NONE if answered else ErrorCode.COORDINATOR_NOT_AVAILABLE
            if not current:
                then(ErrorCode.NOT_COORDINATOR)
                return
            if error is ErrorCode.NONE and write.transit.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
                self.decide(write.transactional_id, write.transit.state is TxnState.PREPARE_COMMIT)
            result = coordinator.written(write, error, self.now)
            if result.markers is not None:
                self.send_markers(coordinator, result.markers)
            if result.then is not None:
                self.write(coordinator, result.then, lambda _e: None)
            if result.retry:
                self.after(self.delay(), lambda: self.write(coordinator, write, lambda _e: None))
            then(result.answer)
        self.after(self.delay(), done)

    def log_state(self, write: TxnWrite) -> None:
        t = write.transit
        self.state_log.append((write.transactional_id, None if write.tombstone else TxnMetadata(
            write.transactional_id, t.producer_id, t.producer_epoch, t.timeout_ms, t.state, set(t.partitions),
            t.start_ms, t.last_update_ms)))

    def decide(self, transactional_id: str, commit: bool) -> None:
        """The ground truth: the coordinator acts on a PrepareCommit/PrepareAbort (its write answered, or found by a
        load), so the markers it sends end the records written in that transaction. (A prepare written but not
        answered decides nothing: the coordinator forgets it, and a later state overrides it in the log.)"""
        outcome = "commit" if commit else "abort"
        for record_id in self._undecided.pop(transactional_id, []):
            self.outcome_of[record_id] = outcome
        for tp, offset in self._offsets_undecided.pop(transactional_id, []):
            self.txn_offsets.append((tp, offset, outcome))

    def failover(self) -> None:
        """The coordinator's partition gets a new leader: a new coordinator loaded from the state log."""
        loaded: dict[str, TxnMetadata] = {}
        for transactional_id, meta in self.state_log:
            if meta is None:
                loaded.pop(transactional_id, None)
            else:
                loaded[transactional_id] = meta.copy()
        self.coordinator = TxnCoordinator(0, self.coordinator.epoch + 1, max_timeout_ms=60_000)
        for transactional_id, meta in loaded.items():
            if meta.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
                self.decide(transactional_id, meta.state is TxnState.PREPARE_COMMIT)
        for follow in self.coordinator.load(loaded, self.now):
            if isinstance(follow, TxnWrite):
                self.write(self.coordinator, follow, lambda _e: None)
            else:
                self.send_markers(self.coordinator, follow)

    # ---- markers -----------------------------------------------------------------------------------------------
    def send_markers(self, coordinator: TxnCoordinator, markers: MarkerSend) -> None:
        for tp in sorted(markers.partitions):
            self.after(self.delay(), lambda tp=tp: self.deliver_marker(coordinator, markers, tp))

    def deliver_marker(self, coordinator: TxnCoordinator, markers: MarkerSend, tp: tuple[str, int]) -> None:
        if coordinator is not self.coordinator:
            return  # the new coordinator sends them again
        partition = self.partitions[tp]
        error = ErrorCode.NOT_LEADER_OR_FOLLOWER if self.rng.random() < 0.1 else partition.producers.check_marker(
            markers.producer_id, markers.producer_epoch, markers.coordinator_epoch)
        if error is ErrorCode.NONE:
            partition.log.append(("marker", markers.producer_id, markers.commit))
            partition.producers.observe_marker(markers.producer_id, markers.producer_epoch, markers.coordinator_epoch,
                                               len(partition.log) - 1, markers.commit)
            if tp == OFFSETS:
                for group, offsets in partition.pending.complete(markers.producer_id, markers.commit).items():
                    partition.committed.update({k: v.offset for k, v in offsets.items()})
        outcome = coordinator.marker_result(markers.transactional_id, tp, error)
        if outcome is True:
            self.after(self.delay(), lambda: self.deliver_marker(coordinator, markers, tp))
        elif isinstance(outcome, TxnWrite):
            self.write(coordinator, outcome, lambda _e: None)

    # ---- producers ---------------------------------------------------------------------------------------------
    def call(self, client: _Client, step: Callable[[TxnCoordinator], object], then: Callable[[ErrorCode], None]) -> None:
        """A client request to the coordinator: answered at once or after its write."""
        def send() -> None:
            coordinator = self.coordinator
            result = step(coordinator)
            if result is NEED_PRODUCER_ID:  # a new id: the broker fetches a producer id and asks again
                result = coordinator.init_producer_id(client.transactional_id, TIMEOUT_MS, None, self.now,
                                                      next(self._pids))
            if isinstance(result, ErrorCode):
                self.after(self.delay(), lambda: then(result))
            else:
                self.write(coordinator, result, then)  # type: ignore[arg-type]

        self.after(self.delay(), send)

    def second_instance(self) -> None:
        """A new instance of "alpha" starts (InitProducerId fences the first)."""
        self.init(_Client("alpha", 1))

    def zombie_writes(self) -> None:
        """Once fenced, the first instance of "alpha" still writes (it does not know yet): a zombie. A write
        that arrives before the abort marker joins its aborted transaction; after it, its old epoch is refused."""
        zombie = self.clients.get(("alpha", 0))
        for tp in sorted(self.partitions) if zombie is not None and zombie.in_txn else ():
            assert zombie is not None
            for _ in range(2):
                # Only inside its transaction: a client that sent EndTxn writes nothing until its next one (a late
                # write after EndTxn is what transaction.version 2 guards against, not this coordinator).
                self.after(self.rng.randint(0, 60),
                           lambda tp=tp: self.write_record(zombie, tp) if zombie.in_txn else None)

    def init(self, client: _Client) -> None:
        self.clients[(client.transactional_id, client.instance)] = client
        def answered(error: ErrorCode) -> None:
            meta = self.coordinator.txns.get(client.transactional_id)
            if error is ErrorCode.NONE and meta is not None:
                client.producer_id, client.epoch = meta.producer_id, meta.producer_epoch
                client.sequences.clear()

                self.after(self.delay(), lambda: self.begin(client))
            else:
                zombie = self.clients.get((client.transactional_id, 0))
                if client.instance > 0 and zombie is not None and not self._zombie_started and meta is not None \
                        and meta.producer_epoch > zombie.epoch:
                    self._zombie_started = True  # the old instance was fenced just now: its writes race the markers
                    self.zombie_writes()
                self.after(self.delay() * 3, lambda: self.init(client))
        self.call(client, lambda c: c.init_producer_id(client.transactional_id, TIMEOUT_MS, None, self.now), answered)

    def begin(self, client: _Client) -> None:
        if client.transactions >= self.transactions:
            return
        parts = self.rng.sample(sorted(self.partitions), self.rng.randint(1, 3))

        def added(error: ErrorCode) -> None:
            if error is ErrorCode.NONE:
                client.transactions += 1
                client.in_txn = True
                self.produce(client, parts, 0)
            elif error not in (ErrorCode.PRODUCER_FENCED, ErrorCode.INVALID_PRODUCER_ID_MAPPING):
                self.after(self.delay() * 2, lambda: self.begin(client))  # markers still out, or a failover
        self.call(client, lambda c: c.add_partitions(client.transactional_id, client.producer_id, client.epoch,
                                                     parts, self.now), added)

    def produce(self, client: _Client, parts: list[tuple[str, int]], n: int) -> None:
        if n == len(parts):
            self.after(self.delay(), lambda: self.end(client, self.rng.random() < 0.6))
            return
        self.write_record(client, parts[n])
        self.after(self.delay(), lambda: self.produce(client, parts, n + 1))

    def write_record(self, client: _Client, tp: tuple[str, int]) -> None:
        """One transactional write: KIP-890 verification unless the producer's transaction is open there."""
        partition = self.partitions[tp]
        verified = partition.producers.open_transactions().get(client.producer_id) is not None and \
            partition.producers.epoch_of(client.producer_id) == client.epoch
        if not verified:
            errors = self.coordinator.verify_partitions(client.transactional_id, client.producer_id, client.epoch,
                                                        [tp])
            verified = errors[tp] is ErrorCode.NONE
        seq = client.sequences.get(tp, 0)
        check = partition.producers.check(client.producer_id, client.epoch, seq, seq, transactional=True)
        if verified and check.error is ErrorCode.NONE and check.duplicate_of is None:
            self.append(client, partition, seq)
            client.sequences[tp] = seq + 1

    def append(self, client: _Client, partition: _Partition, seq: int) -> None:
        # Fenced: the coordinator's durable state has moved to another producer id or epoch. (An epoch bumped in
        # memory only, by a fence whose write was lost, is forgotten by a failover: that producer was not fenced.)
        durable = next((m for t, m in reversed(self.state_log) if t == client.transactional_id and m is not None),
                       None)
        fenced = durable is not None and (durable.producer_id, durable.producer_epoch) != (client.producer_id,
                                                                                          client.epoch)
        offset = len(partition.log)
        if partition.name == OFFSETS:
            record_id = f"offsets-{client.transactional_id}-{offset}"
            key = (f"in-{client.transactional_id}", 0)  # each id's own input: its commits are ordered
            partition.pending.add(client.producer_id, "group", {key: OffsetEntry(offset, -1, "", self.now)})
            if not fenced:
                self._offsets_undecided.setdefault(client.transactional_id, []).append((key, offset))
        else:
            record_id = f"{client.transactional_id}#{client.instance}@{partition.name[1]}:{offset}"
            self.records[record_id] = WrittenRecord(record_id, partition.name[1], (
                client.transactional_id, client.producer_id, client.epoch, client.transactions), fenced)
            if fenced:
                self.outcome_of[record_id] = "fenced"
            else:
                self._undecided.setdefault(client.transactional_id, []).append(record_id)
        partition.log.append(("data", client.producer_id, record_id))
        partition.producers.observe(client.producer_id, client.epoch, seq, seq, offset, offset, self.now, True)

    def end(self, client: _Client, commit: bool) -> None:
        client.in_txn = False
        def answered(error: ErrorCode) -> None:
            if error in (ErrorCode.NONE, ErrorCode.INVALID_TXN_STATE):
                self.after(self.delay(), lambda: self.begin(client))
            elif error in (ErrorCode.PRODUCER_FENCED, ErrorCode.INVALID_PRODUCER_ID_MAPPING):
                return  # a zombie stops
            else:
                self.after(self.delay() * 2, lambda: self.end(client, commit))
        self.call(client, lambda c: c.end_txn(client.transactional_id, client.producer_id, client.epoch, commit,
                                              self.now), answered)

    # ---- what the invariants read ------------------------------------------------------------------------------
    def visible(self) -> dict[int, list[str]]:
        return {tp[1]: p.read_committed() for tp, p in self.partitions.items() if tp != OFFSETS}


def check(seed: int) -> list[str]:
    """Run one seed to its end and return every invariant violation (empty: all hold)."""
    world = TxnWorld(seed)
    world.run()
    visible = world.visible()
    return [*world.early_violations, *visible_violations(visible, world.outcome_of, world.records),
            *atomicity_violations(visible, world.outcome_of, world.records),
            *offset_violations(world.partitions[OFFSETS].committed, world.txn_offsets),
            *fencing_violations(world.outcome_of, world.records)]


__all__ = ["TxnWorld", "check"]
