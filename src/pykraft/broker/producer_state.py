"""Idempotent producers, per partition: sequence checks so a retried batch is never written twice.

Kafka's `ProducerStateManager` / `ProducerAppendInfo.checkSequence`, for idempotence only (no transactions):
- a producer id the partition does not know may start at any sequence (its earlier batches may be gone);
- an older producer epoch than the one seen -> INVALID_PRODUCER_EPOCH; a newer epoch must start at sequence 0;
- a batch equal (first and last sequence) to one of the last 5 of that producer is a duplicate: it is not
  appended and the answer carries the offsets it got the first time;
- otherwise the first sequence must follow the last one (mod 2^31) -> OUT_OF_ORDER_SEQUENCE_NUMBER.
Followers and a restarted broker rebuild the same state from the batch headers of their log (`observe`), so a
new leader keeps deduplicating a producer that retries against it. A restarted broker starts from Kafka's producer
snapshot (`entries`/`restore`, producer_snapshot.py), which keeps each producer's last batch only, as Kafka's does.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from pykraft.protocol.errors import ErrorCode

from .producer_snapshot import ProducerSnapshotEntry

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


@dataclass(frozen=True, slots=True)
class SequenceCheck:
    error: ErrorCode = ErrorCode.NONE
    duplicate_of: BatchRecord | None = None  # set: answer with these offsets, append nothing


class ProducerStates:
    def __init__(self) -> None:
        self._producers: dict[int, _Producer] = {}

    def check(self, producer_id: int, epoch: int, first_seq: int, last_seq: int) -> SequenceCheck:
        """Whether an idempotent batch may be appended (see the module docstring). Changes nothing."""
        known = self._producers.get(producer_id)
        if known is None:
            return SequenceCheck()
        if epoch < known.epoch:
            return SequenceCheck(ErrorCode.INVALID_PRODUCER_EPOCH)
        if epoch > known.epoch:
            return SequenceCheck() if first_seq == 0 else SequenceCheck(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
        for batch in known.recent:
            if batch.first_sequence == first_seq and batch.last_sequence == last_seq:
                return SequenceCheck(duplicate_of=batch)
        if not known.recent or first_seq == (known.recent[-1].last_sequence + 1) % _SEQ_MOD:
            return SequenceCheck()
        return SequenceCheck(ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)

    def observe(self, producer_id: int, epoch: int, first_seq: int, last_seq: int, base_offset: int,
                last_offset: int, timestamp: int = -1) -> None:
        """A batch of this producer is in the log (appended as leader or follower, or found on recovery)."""
        if producer_id < 0:
            return
        known = self._producers.get(producer_id)
        if known is None or epoch > known.epoch:
            known = self._producers[producer_id] = _Producer(epoch)
        elif epoch < known.epoch:
            return
        known.recent.append(BatchRecord(first_seq, last_seq, base_offset, last_offset))
        known.last_timestamp = timestamp

    def entries(self) -> list[ProducerSnapshotEntry]:
        """The state to snapshot: each producer's epoch and last batch, in producer id order."""
        found = []
        for producer_id in sorted(self._producers):
            known = self._producers[producer_id]
            last = known.recent[-1] if known.recent else None
            found.append(ProducerSnapshotEntry(
                producer_id, known.epoch, -1 if last is None else last.last_sequence,
                -1 if last is None else last.last_offset, 0 if last is None else last.last_offset - last.base_offset,
                known.last_timestamp))
        return found

    def last_batches(self) -> dict[int, tuple[int, int]]:
        """Each producer's (last offset of its last batch, epoch): the batches the log cleaner keeps (Kafka's
        lastRecordsOfActiveProducers; an expired producer is no longer here, so its batches may go)."""
        return {pid: (known.recent[-1].last_offset, known.epoch) for pid, known in self._producers.items()
                if known.recent}

    def active(self) -> list[tuple[int, int, int, int]]:
        """DescribeProducers: (producer id, epoch, last sequence, last timestamp) of each producer, by id (-1: no
        batch kept)."""
        found = []
        for producer_id in sorted(self._producers):
            known = self._producers[producer_id]
            last = known.recent[-1].last_sequence if known.recent else -1
            found.append((producer_id, known.epoch, last, known.last_timestamp))
        return found

    def restore(self, entries: list[ProducerSnapshotEntry]) -> None:
        """Replace the state by a snapshot's (then `observe` the batches after the snapshot's offset)."""
        self._producers.clear()
        for entry in entries:
            known = self._producers[entry.producer_id] = _Producer(entry.epoch, entry.timestamp)
            if entry.last_offset >= 0:
                known.recent.append(BatchRecord(entry.first_sequence, entry.last_sequence, entry.first_offset,
                                                entry.last_offset))

    def expire(self, now_ms: int, expiration_ms: int) -> int:
        """Kafka's removeExpiredProducers: forget producers whose last batch is `producer.id.expiration.ms` old
        (they would otherwise live forever in the snapshots). Returns how many went."""
        doomed = [pid for pid, known in self._producers.items() if now_ms - known.last_timestamp >= expiration_ms]
        for producer_id in doomed:
            del self._producers[producer_id]
        return len(doomed)

    def clear(self) -> None:
        """Before rebuilding from the log (after a truncation)."""
        self._producers.clear()

    def __len__(self) -> int:
        return len(self._producers)
