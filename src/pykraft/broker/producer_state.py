"""Idempotent and transactional producers, per partition: sequence checks so a retried batch is never written
twice, and the transactions open in the partition (the last stable offset).

Kafka's `ProducerStateManager` / `ProducerAppendInfo.checkSequence`:
- a producer id the partition does not know may start at any sequence (its earlier batches may be gone);
- an older producer epoch than the one seen -> INVALID_PRODUCER_EPOCH; a newer epoch must start at sequence 0;
- a batch equal (first and last sequence) to one of the last 5 of that producer is a duplicate: it is not
  appended and the answer carries the offsets it got the first time;
- otherwise the first sequence must follow the last one (mod 2^31) -> OUT_OF_ORDER_SEQUENCE_NUMBER.
Followers and a restarted broker rebuild the same state from the batch headers of their log (`observe`), so a
new leader keeps deduplicating a producer that retries against it. A restarted broker starts from Kafka's producer
snapshot (`entries`/`restore`, producer_snapshot.py), which keeps each producer's last batch only, as Kafka's does.

Transactions (KIP-98): a transactional batch opens the producer's transaction in this partition at its first
offset unless one is open; a COMMIT/ABORT marker (`observe_marker`) closes it and returns the `CompletedTxn`
(an aborted one goes to the partition's `.txnindex`). A marker of an older producer epoch is
INVALID_PRODUCER_EPOCH, of an older coordinator epoch TRANSACTION_COORDINATOR_FENCED; a plain batch from a producer
whose transaction is open is INVALID_TXN_STATE. The last stable offset is the first offset of the earliest
transaction that is open, or completed by a marker the high watermark has not passed yet, capped by the high
watermark: read_committed consumers read below it only. Producers with an open transaction never expire.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pykraft.protocol.errors import ErrorCode

from .producer_snapshot import ProducerSnapshotEntry

if TYPE_CHECKING:
    from pykraft.records.batch import RecordBatch

RECENT_BATCHES = 5  # Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN (= max.in.flight for idempotence)
_SEQ_MOD = 1 << 31


def last_sequence(base_sequence: int, last_offset_delta: int) -> int:
    """Kafka's RecordBatch.lastSequence: from the last offset delta, not the record count (a cleaned batch keeps
    its offsets but may have lost records), wrapping at 2^31; -1 without a sequence."""
    return -1 if base_sequence < 0 else (base_sequence + last_offset_delta) % _SEQ_MOD


@dataclass(frozen=True, slots=True)
class BatchRecord:
    first_sequence: int
    last_sequence: int
    base_offset: int
    last_offset: int


@dataclass(slots=True)
class _Producer:
    epoch: int
    last_timestamp: int = -1  # max timestamp of its last batch (kept in the snapshot, as Kafka does)
    recent: deque[BatchRecord] = field(default_factory=lambda: deque(maxlen=RECENT_BATCHES))
    coordinator_epoch: int = -1  # of the last marker written for it
    txn_first_offset: int = -1  # first offset of its open transaction here (-1: none)


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """A transaction a marker closed in this partition: [first_offset, last_offset] (the marker's offset)."""

    producer_id: int
    first_offset: int
    last_offset: int
    aborted: bool


@dataclass(frozen=True, slots=True)
class SequenceCheck:
    error: ErrorCode = ErrorCode.NONE
    duplicate_of: BatchRecord | None = None  # set: answer with these offsets, append nothing


class ProducerStates:
    def __init__(self) -> None:
        self._producers: dict[int, _Producer] = {}
        self._ongoing: dict[int, int] = {}  # producer id -> first offset of its open transaction
        self._unreplicated: list[CompletedTxn] = []  # completed, marker not yet below the high watermark

    def check(self, producer_id: int, epoch: int, first_seq: int, last_seq: int,
              transactional: bool = False) -> SequenceCheck:
        """Whether an idempotent batch may be appended (see the module docstring). Changes nothing."""
        known = self._producers.get(producer_id)
        if known is None:
            return SequenceCheck()
        if epoch < known.epoch:
            return SequenceCheck(ErrorCode.INVALID_PRODUCER_EPOCH)
        if not transactional and known.txn_first_offset >= 0:
            return SequenceCheck(ErrorCode.INVALID_TXN_STATE)
        if epoch > known.epoch:
            return SequenceCheck() if first_seq == 0 else SequenceCheck(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
        for batch in known.recent:
            if batch.first_sequence == first_seq and batch.last_sequence == last_seq:
                return SequenceCheck(duplicate_of=batch)
        if not known.recent or first_seq == (known.recent[-1].last_sequence + 1) % _SEQ_MOD:
            return SequenceCheck()
        return SequenceCheck(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)

    def observe_batch(self, batch: RecordBatch) -> None:
        """`observe` of a data batch read from the log (a follower's append, a replay): its header's fields."""
        self.observe(batch.producer_id, batch.producer_epoch, batch.base_sequence,
                     last_sequence(batch.base_sequence, batch.last_offset_delta), batch.base_offset,
                     batch.last_offset, batch.max_timestamp, transactional=batch.is_transactional)

    def observe(self, producer_id: int, epoch: int, first_seq: int, last_seq: int, base_offset: int,
                last_offset: int, timestamp: int = -1, transactional: bool = False) -> None:
        """A batch of this producer is in the log (appended as leader or follower, or found on recovery)."""
        if producer_id < 0:
            return
        known = self._producers.get(producer_id)
        if known is None:
            known = self._producers[producer_id] = _Producer(epoch)
        elif epoch > known.epoch:
            known.epoch = epoch  # a new epoch: sequences start again (its open transaction, if any, stays)
            known.recent.clear()
        elif epoch < known.epoch:
            return
        known.recent.append(BatchRecord(first_seq, last_seq, base_offset, last_offset))
        known.last_timestamp = timestamp
        if transactional and known.txn_first_offset < 0:
            known.txn_first_offset = base_offset
            self._ongoing[producer_id] = base_offset

    # ---- transactions ------------------------------------------------------------------------------------------
    def check_marker(self, producer_id: int, epoch: int, coordinator_epoch: int) -> ErrorCode:
        """May the coordinator's marker for this producer be written? (Kafka's appendEndTxnMarker checks.)"""
        known = self._producers.get(producer_id)
        if known is None:
            return ErrorCode.NONE
        if epoch < known.epoch:
            return ErrorCode.INVALID_PRODUCER_EPOCH
        if coordinator_epoch < known.coordinator_epoch:
            return ErrorCode.TRANSACTION_COORDINATOR_FENCED
        return ErrorCode.NONE

    def observe_marker(self, producer_id: int, epoch: int, coordinator_epoch: int, offset: int, commit: bool,
                       timestamp: int = -1) -> CompletedTxn:
        """A COMMIT/ABORT marker at `offset` is in the log: the producer's transaction here is over. A marker
        without an open transaction completes an empty one at its own offset, as Kafka's does."""
        known = self._producers.get(producer_id)
        if known is None:
            known = self._producers[producer_id] = _Producer(epoch)
        elif epoch > known.epoch:
            known.epoch = epoch
            known.recent.clear()
        first = known.txn_first_offset if known.txn_first_offset >= 0 else offset
        known.txn_first_offset = -1
        known.coordinator_epoch = coordinator_epoch
        known.last_timestamp = timestamp
        self._ongoing.pop(producer_id, None)
        done = CompletedTxn(producer_id, first, offset, not commit)
        self._unreplicated.append(done)
        return done

    def last_stable_offset(self, high_watermark: int) -> int:
        """The first offset a read_committed consumer may not read yet (see the module docstring)."""
        self._unreplicated = [t for t in self._unreplicated if t.last_offset >= high_watermark]
        firsts = [*self._ongoing.values(), *(t.first_offset for t in self._unreplicated)]
        return min(high_watermark, *firsts) if firsts else high_watermark

    def stable_offset_after(self, completed: CompletedTxn) -> int:
        """The LastStableOffset of a `.txnindex` entry: where the next open transaction of another producer starts,
        else just after the marker (Kafka's ProducerStateManager.lastStableOffset(completedTxn))."""
        others = [first for pid, first in self._ongoing.items() if pid != completed.producer_id]
        return min(others) if others else completed.last_offset + 1

    def next_sequence(self, producer_id: int, epoch: int) -> int:
        """The sequence a coordinator's own batch for this producer takes (a TxnOffsetCommit's offsets)."""
        known = self._producers.get(producer_id)
        if known is None or known.epoch != epoch or not known.recent:
            return 0
        return (known.recent[-1].last_sequence + 1) % _SEQ_MOD

    def epoch_of(self, producer_id: int) -> int:
        known = self._producers.get(producer_id)
        return -1 if known is None else known.epoch

    def open_transactions(self) -> dict[int, int]:
        """Producer id -> first offset of each transaction open in this partition."""
        return dict(self._ongoing)

    def entries(self) -> list[ProducerSnapshotEntry]:
        """The state to snapshot: each producer's epoch and last batch, in producer id order."""
        found = []
        for producer_id in sorted(self._producers):
            known = self._producers[producer_id]
            last = known.recent[-1] if known.recent else None
            found.append(ProducerSnapshotEntry(
                producer_id, known.epoch, -1 if last is None else last.last_sequence,
                -1 if last is None else last.last_offset, 0 if last is None else last.last_offset - last.base_offset,
                known.last_timestamp, known.coordinator_epoch, known.txn_first_offset))
        return found

    def last_batches(self) -> dict[int, tuple[int, int]]:
        """Each producer's (last offset of its last batch, epoch): the batches the log cleaner keeps (Kafka's
        lastRecordsOfActiveProducers; an expired producer is no longer here, so its batches may go)."""
        return {pid: (known.recent[-1].last_offset, known.epoch) for pid, known in self._producers.items()
                if known.recent}

    def active(self) -> list[tuple[int, int, int, int, int, int]]:
        """DescribeProducers: (producer id, epoch, last sequence, last timestamp, coordinator epoch, first offset of
        its open transaction) of each producer, by id (-1: no batch kept, no transaction open)."""
        found = []
        for producer_id in sorted(self._producers):
            known = self._producers[producer_id]
            last = known.recent[-1].last_sequence if known.recent else -1
            found.append((producer_id, known.epoch, last, known.last_timestamp, known.coordinator_epoch,
                          known.txn_first_offset))
        return found

    def restore(self, entries: list[ProducerSnapshotEntry]) -> None:
        """Replace the state by a snapshot's (then `observe` the batches after the snapshot's offset)."""
        self.clear()
        for entry in entries:
            known = self._producers[entry.producer_id] = _Producer(entry.epoch, entry.timestamp)
            known.coordinator_epoch = entry.coordinator_epoch
            if entry.current_txn_first_offset >= 0:
                known.txn_first_offset = entry.current_txn_first_offset
                self._ongoing[entry.producer_id] = entry.current_txn_first_offset
            if entry.last_offset >= 0:
                known.recent.append(BatchRecord(entry.first_sequence, entry.last_sequence, entry.first_offset,
                                                entry.last_offset))

    def expire(self, now_ms: int, expiration_ms: int) -> int:
        """Kafka's removeExpiredProducers: forget producers whose last batch is `producer.id.expiration.ms` old
        (they would otherwise live forever in the snapshots); never one with an open transaction. Returns how many
        went."""
        doomed = [pid for pid, known in self._producers.items()
                  if known.txn_first_offset < 0 and now_ms - known.last_timestamp >= expiration_ms]
        for producer_id in doomed:
            del self._producers[producer_id]
        return len(doomed)

    def clear(self) -> None:
        """Before rebuilding from the log (after a truncation)."""
        self._producers.clear()
        self._ongoing.clear()
        self._unreplicated.clear()

    def __len__(self) -> int:
        return len(self._producers)
