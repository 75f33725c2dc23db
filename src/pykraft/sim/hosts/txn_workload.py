"""Transactions as a data-plane workload (issue 31): transactional producers and a read_committed consumer against
the simulated brokers' real partition host (broker/partition_host.py, broker/fetch_answers.py), with the
transaction coordinator played by this harness, not by the brokers:

- the harness coordinator keeps, per transactional id, the producer id, its epoch and the open transaction (its
  partitions and records); EndTxn decides commit or abort and the harness writes the COMMIT/ABORT markers through
  the partition leaders (`MarkerRequest`, sim/hosts/txn_markers.py: the producer state's checks, acks=all),
  retried until written; a coordinator failover bumps the coordinator epoch and sends the unwritten markers again;
- each producer runs transactions over both partitions of the topic: one transactional batch per partition
  (acks=all, sequences per partition, retried as they are), then EndTxn; a write the leader refuses for good
  makes the transaction abort;
- a second instance of "alpha" fences the first: its epoch bumps, its open transaction aborts with markers of
  the new epoch, and the old instance carries on as a zombie for a moment, writing with its old epoch;
- the consumer fetches each partition with isolation_level=read_committed and drops aborted transactions as
  Kafka's client does (the answer's aborted transactions, control batches skipped).
Not modelled: the coordinator on brokers over `__transaction_state`, KIP-890 verification (writes skip it, as with
transaction.partition.verification.enable=false), TxnOffsetCommit.

Invariants (sim/checks/txn_invariants.py's, on what the consumer read): TxnReadCommittedClean at every record read
(never one of an aborted or still open transaction), TxnFencedNeverCommits (no write of a fenced epoch is ever
read committed), and TxnAtomicCommit at the end (every record of a committed transaction whose markers were
written is read, in every partition).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pykraft.broker.fetch_answers import PartitionFetch
from pykraft.protocol.errors import ErrorCode
from pykraft.records import SimpleRecord, encode_batch, iter_batches
from pykraft.records.batch import ATTR_TRANSACTIONAL, CRC_START
from pykraft.records.crc import crc32c
from pykraft.records.txn_markers import decode_txn_marker, is_txn_marker_batch
from pykraft.sim.checks.txn_invariants import (
    WrittenRecord, atomicity_violations, fencing_violations, visible_violations,
)
from pykraft.sim.hosts.data_wire import FetchRequest, FetchResponse, ProduceRequest, ProduceResponse
from pykraft.sim.hosts.txn_markers import MarkerRequest, MarkerResponse
from pykraft.sim.scenarios.data_workload import RETRIABLE, leader_of

if TYPE_CHECKING:
    from pykraft.sim.engine.world import World

TXN_TOPIC = "txn"
TXN_PARTITIONS = 2
DRIVER_ID = 4000
TXN_INVARIANTS = frozenset({"TxnReadCommittedClean", "TxnAtomicCommit", "TxnFencedNeverCommits"})
REQUEST_TIMEOUT_MS = 1500
BACKOFF_MS = 50
FETCH_EVERY_MS = 30
FENCED = frozenset({ErrorCode.PRODUCER_FENCED, ErrorCode.INVALID_PRODUCER_EPOCH})


def txn_batch(values: list[bytes], producer_id: int, epoch: int, sequence: int, now_ms: int) -> bytes:
    """A transactional producer's batch: producer id, epoch, base sequence and the transactional attribute."""
    out = bytearray(encode_batch([SimpleRecord(value=v) for v in values], base_offset=0, partition_leader_epoch=-1,
                                 timestamp_ms=now_ms))
    attributes = struct.unpack_from(">h", out, 21)[0]
    struct.pack_into(">h", out, 21, attributes | ATTR_TRANSACTIONAL)
    struct.pack_into(">qhi", out, 43, producer_id, epoch, sequence)
    struct.pack_into(">I", out, 17, crc32c(memoryview(out)[CRC_START:]))
    return bytes(out)


@dataclass
class _Txn:
    """The harness coordinator's state of one transactional id."""

    producer_id: int
    epoch: int = 0
    state: str = "empty"  # empty | ongoing | prepare (markers out) | complete
    records: list[str] = field(default_factory=list)
    commit: bool = False
    unwritten: set[int] = field(default_factory=set)  # partitions whose marker is not written yet
    marker_offsets: dict[int, int] = field(default_factory=dict)
    then: Any = None  # called once the markers are written


@dataclass
class _Producer:
    transactional_id: str
    instance: int
    epoch: int
    sequences: dict[int, int] = field(default_factory=dict)
    pending: set[int] = field(default_factory=set)
    failed: bool = False
    fenced: bool = False
    transactions: int = 0

    @property
    def name(self) -> str:
        return f"{self.transactional_id}#{self.instance}"


class TxnDriver:
    """The harness: coordinator, producers and read_committed consumer, one network endpoint."""

    def __init__(self, world: World, until_ms: int) -> None:
        self.world, self.until_ms, self.id = world, until_ms, DRIVER_ID
        self.rng = world.stream("txn-driver")
        world.endpoints[self.id] = self
        world.checker.enabled = world.checker.enabled | TXN_INVARIANTS
        self.coordinator_epoch = 0
        self.txns = {tid: _Txn(900 + n) for n, tid in enumerate(("alpha", "beta"))}
        self.producers = [_Producer(tid, 0, 0) for tid in self.txns]
        self.records: dict[str, WrittenRecord] = {}
        self.outcome_of: dict[str, str] = {}
        self.done: list[tuple[str, bool, dict[int, int], list[str]]] = []  # completed transactions
        self.positions = {p: 0 for p in range(TXN_PARTITIONS)}
        self.seen: dict[int, list[str]] = {p: [] for p in range(TXN_PARTITIONS)}
        self._waiting: dict[int, Any] = {}  # request id -> its answer's handler
        self._next_request = 0
        self.stats = {"commits": 0, "aborts": 0, "fenced_writes_refused": 0, "marker_sends": 0, "read": 0,
                      "failovers": 0}
        self.errors: dict[str, int] = {}  # transactional writes refused for good, by error

    # ---- requests ----------------------------------------------------------------------------------------------
    def _call(self, partition: int, make: Any, handle: Any) -> None:
        """Send make(request id) to the partition's leader; handle(answer) gets the answer or None (no leader known,
        or no answer within REQUEST_TIMEOUT_MS)."""
        leader = leader_of(self.world, self.rng, TXN_TOPIC, partition)
        if leader is None:
            self.world.scheduler.after(BACKOFF_MS, handle, None)
            return
        self._next_request += 1
        request_id = self._next_request
        self._waiting[request_id] = handle
        payload = make(request_id)
        self.world.send(self.id, leader, payload, type(payload).__name__)
        self.world.scheduler.after(REQUEST_TIMEOUT_MS, self._expire, request_id)

    def _expire(self, request_id: int) -> None:
        handle = self._waiting.pop(request_id, None)
        if handle is not None:
            handle(None)

    def deliver(self, envelope: Any) -> Any:
        if not self.world.network.admit(envelope):
            return None
        handle = self._waiting.pop(getattr(envelope.payload, "request_id", -1), None)
        if handle is not None:
            handle(envelope.payload)
        return None

    # ---- producers ---------------------------------------------------------------------------------------------
    def start(self, world: World | None = None) -> Any:
        for producer in self.producers:
            self.world.scheduler.after(self.rng.randint(1, 50), self._begin, producer)
        self.world.scheduler.after(FETCH_EVERY_MS, self._consume)
        return self.id, "txn-start", f"{len(self.producers)} transactional producers"

    def _begin(self, producer: _Producer) -> None:
        txn = self.txns[producer.transactional_id]
        if producer.fenced or self.world.scheduler.now_ms >= self.until_ms:
            return
        if producer.epoch != txn.epoch:  # AddPartitionsToTxn refused: PRODUCER_FENCED
            producer.fenced = True
            return
        producer.transactions += 1
        txn.state, txn.records, producer.failed = "ongoing", [], False
        for partition in range(TXN_PARTITIONS):
            self._write(producer, partition, fenced=False)

    def _write(self, producer: _Producer, partition: int, fenced: bool) -> None:
        txn = self.txns[producer.transactional_id]
        seq = producer.sequences.get(partition, 0)
        ids = [f"{producer.name}e{producer.epoch}@{partition}:{producer.transactions}.{seq + k}" for k in range(2)]
        producer.sequences[partition] = seq + len(ids)
        for record_id in ids:
            self.records[record_id] = WrittenRecord(record_id, partition, (
                producer.transactional_id, txn.producer_id, producer.epoch, producer.transactions), fenced)
            if fenced:
                self.outcome_of[record_id] = "fenced"
            else:
                txn.records.append(record_id)
        batch = txn_batch([i.encode() for i in ids], txn.producer_id, producer.epoch, seq, self.world.scheduler.now_ms)
        if not fenced:
            producer.pending.add(partition)
        self._send_write(producer, partition, batch, fenced)

    def _send_write(self, producer: _Producer, partition: int, batch: bytes, fenced: bool) -> None:
        def answered(answer: ProduceResponse | None) -> None:
            error = ErrorCode.REQUEST_TIMED_OUT if answer is None else answer.error
            if fenced:  # a zombie's write after the fence: nobody waits for it
                self.stats["fenced_writes_refused"] += error in FENCED
                return
            if error is ErrorCode.NONE or error in FENCED or error not in RETRIABLE:
                producer.pending.discard(partition)
                producer.fenced |= error in FENCED
                producer.failed |= error is not ErrorCode.NONE
                if error is not ErrorCode.NONE:
                    self.errors[error.name] = self.errors.get(error.name, 0) + 1
                if not producer.pending and not producer.fenced:
                    self.world.scheduler.after(self.rng.randint(1, 20), self._end, producer)
                return
            self.world.scheduler.after(BACKOFF_MS, self._send_write, producer, partition, batch, fenced)

        self._call(partition, lambda rid: ProduceRequest(rid, TXN_TOPIC, partition, batch, -1), answered)

    def _end(self, producer: _Producer) -> None:
        """EndTxn: refused to a fenced epoch; else the decision, then the markers."""
        txn = self.txns[producer.transactional_id]
        if producer.epoch != txn.epoch or txn.state != "ongoing":
            producer.fenced = True
            return
        commit = not producer.failed and self.rng.random() < 0.6
        self._decide(txn, commit, lambda: self.world.scheduler.after(self.rng.randint(5, 60), self._begin, producer))

    # ---- the coordinator: decisions and markers ----------------------------------------------------------------
    def _decide(self, txn: _Txn, commit: bool, then: Any) -> None:
        txn.state, txn.commit, txn.then = "prepare", commit, then
        for record_id in txn.records:
            self.outcome_of[record_id] = "commit" if commit else "abort"
        self.stats["commits" if commit else "aborts"] += 1
        txn.unwritten, txn.marker_offsets = set(range(TXN_PARTITIONS)), {}
        for partition in sorted(txn.unwritten):
            self._send_marker(txn, partition, self.coordinator_epoch)

    def _send_marker(self, txn: _Txn, partition: int, coordinator_epoch: int) -> None:
        if coordinator_epoch != self.coordinator_epoch or partition not in txn.unwritten:
            return  # a failover sent it again with the new coordinator epoch
        self.stats["marker_sends"] += 1
        epoch = txn.epoch

        def answered(answer: MarkerResponse | None) -> None:
            if answer is not None and answer.error is ErrorCode.NONE and partition in txn.unwritten:
                txn.unwritten.discard(partition)
                txn.marker_offsets[partition] = answer.offset
                if not txn.unwritten:
                    self._complete(txn)
            elif answer is None or answer.error not in (ErrorCode.INVALID_PRODUCER_EPOCH,
                                                         ErrorCode.TRANSACTION_COORDINATOR_FENCED):
                self.world.scheduler.after(BACKOFF_MS, self._send_marker, txn, partition, coordinator_epoch)

        self._call(partition, lambda rid: MarkerRequest(rid, TXN_TOPIC, partition, txn.producer_id, epoch,
                                                        coordinator_epoch, txn.commit), answered)

    def _complete(self, txn: _Txn) -> None:
        txn.state = "complete"
        self.done.append(("commit" if txn.commit else "abort", txn.commit, dict(txn.marker_offsets),
                          list(txn.records)))
        then, txn.then = txn.then, None
        if then is not None:
            then()

    def failover(self, world: World | None = None) -> Any:
        """The coordinator moves: a new coordinator epoch; the markers not written yet go again with it."""
        self.coordinator_epoch += 1
        self.stats["failovers"] += 1
        for txn in self.txns.values():
            for partition in sorted(txn.unwritten):
                self._send_marker(txn, partition, self.coordinator_epoch)
        return self.id, "txn-coordinator-failover", f"coordinator epoch {self.coordinator_epoch}"

    def fence(self, world: World | None = None) -> Any:
        """A second instance of "alpha" calls InitProducerId: the epoch bumps, an open transaction aborts with
        markers of the new epoch; the first instance goes on as a zombie. Waits while markers are out (Kafka
        answers CONCURRENT_TRANSACTIONS)."""
        txn = self.txns["alpha"]
        if txn.state == "prepare":
            self.world.scheduler.after(BACKOFF_MS, self.fence)
            return self.id, "txn-fence", "markers out: later"
        zombie = next(p for p in self.producers if p.transactional_id == "alpha" and not p.fenced)
        txn.epoch += 1
        successor = _Producer("alpha", zombie.instance + 1, txn.epoch)
        self.producers.append(successor)
        start = lambda: self.world.scheduler.after(self.rng.randint(1, 50), self._begin, successor)
        if txn.state != "ongoing":
            start()  # between transactions: the zombie's next AddPartitionsToTxn is refused, it writes nothing more
            return self.id, "txn-fence", f"alpha epoch {txn.epoch}"
        self._decide(txn, False, start)
        # Inside its transaction (its partitions added), the zombie writes on with its old epoch for a moment.
        for partition in range(TXN_PARTITIONS):
            self.world.scheduler.after(self.rng.randint(0, 80), self._write, zombie, partition, True)
        return self.id, "txn-fence", f"alpha epoch {txn.epoch}"

    # ---- the read_committed consumer ---------------------------------------------------------------------------
    def _consume(self) -> None:
        self.world.scheduler.after(FETCH_EVERY_MS, self._consume)
        partition = self.rng.randrange(TXN_PARTITIONS)
        position = self.positions[partition]
        part = PartitionFetch(partition, position, max_bytes=1 << 14, read_committed=True)
        self._call(partition, lambda rid: FetchRequest(rid, -1, -1, ((TXN_TOPIC, part),)),
                   lambda answer: self._fetched(partition, position, answer))

    def _fetched(self, partition: int, position: int, answer: FetchResponse | None) -> None:
        if answer is None or position != self.positions[partition]:
            return
        for _, part in answer.partitions:
            if part.error is ErrorCode.NONE and len(part.records):
                self.positions[partition] = self._read(partition, part.records, part.aborted or ())

    def _read(self, partition: int, records: Any, aborted: Any) -> int:
        """Kafka's client: an aborted transaction's producer is skipped from its first offset to its ABORT marker."""
        queue = sorted(aborted, key=lambda a: a[1])
        skipping: set[int] = set()
        position = self.positions[partition]
        for batch in iter_batches(records, verify_crc=True):
            if batch.last_offset < position:
                continue
            while queue and queue[0][1] <= batch.last_offset:
                skipping.add(queue.pop(0)[0])
            if batch.is_control:
                if is_txn_marker_batch(batch) and not decode_txn_marker(batch).commit:
                    skipping.discard(batch.producer_id)
            elif not (batch.is_transactional and batch.producer_id in skipping):
                for record in batch.records():
                    if record.offset >= position:
                        self._seen(partition, bytes(record.value or b"").decode())
            position = batch.last_offset + 1
        return position

    def _seen(self, partition: int, record_id: str) -> None:
        self.seen[partition].append(record_id)
        self.stats["read"] += 1
        checker = self.world.checker
        record = self.records.get(record_id)
        if record is not None:  # read committed: its transaction committed, as far as this reader can tell
            for line in fencing_violations({record_id: "commit"}, {record_id: record}):
                checker.violation("TxnFencedNeverCommits", None, line)
        for line in visible_violations({partition: [record_id]}, self.outcome_of, self.records):
            checker.violation("TxnReadCommittedClean", None, line)

    # ---- the end -----------------------------------------------------------------------------------------------
    def gaps(self) -> list[str]:
        found = [f"{p.name} waits for {sorted(p.pending)}" for p in self.producers if p.pending and not p.fenced]
        found += [f"markers of {tid} unwritten in {sorted(t.unwritten)}" for tid, t in self.txns.items() if t.unwritten]
        for partition in range(TXN_PARTITIONS):
            last = max((offsets[partition] for *_, offsets, _ in self.done if partition in offsets), default=-1)
            if self.positions[partition] <= last:
                found.append(f"read_committed consumer at {partition}:{self.positions[partition]}, a marker at {last}")
        return found

    def check_atomic(self) -> None:
        """Every record of a committed transaction whose markers were written is read (the consumer has caught up:
        `gaps` held the run until then)."""
        written = {record_id for _, commit, _, ids in self.done if commit for record_id in ids}
        outcome = {k: v for k, v in self.outcome_of.items() if k in written}
        for line in atomicity_violations(self.seen, outcome, self.records):
            self.world.checker.violation("TxnAtomicCommit", None, line)

    def describe(self) -> dict[str, Any]:
        return {"txn": dict(self.stats), "txn_write_errors": dict(self.errors), "txn_producers": ", ".join(
            f"{p.name}: {p.transactions}{' fenced' if p.fenced else ''}" for p in self.producers)}
