"""The leader's append buffer: records wait up to `append.linger.ms` (or until a batch is full) and are then
encoded as one batch with offsets assigned at append time. A batch a client encoded itself (Produce) skips the
buffer: it is appended as it arrived, after what is buffered, with only its header rewritten (`append_encoded`)."""

from __future__ import annotations

from collections.abc import Sequence

from pykraft.records import SimpleRecord, encode_batch, restamp_batch
from pykraft.records.control import encode_control_batch

_RECORD_OVERHEAD = 21  # upper bound of a record's varint framing; sizes only need to be conservative
_BATCH_OVERHEAD = 61


class RecordBatchTooLargeError(ValueError):
    """A single append larger than the maximum batch size."""


class BatchAccumulator:
    def __init__(self, epoch: int, next_offset: int, linger_ms: int, max_batch_size: int) -> None:
        self.epoch = epoch
        self.next_offset = next_offset
        self._linger_ms = linger_ms
        self._max_batch_size = max_batch_size
        self._pending: list[SimpleRecord] = []
        self._pending_base = next_offset
        self._pending_size = _BATCH_OVERHEAD
        self._pending_since_ms: int | None = None
        self._completed: list[bytes | bytearray] = []

    def append(self, values: Sequence[bytes], now_ms: int) -> int:
        """Buffer data records; returns the offset of the last one."""
        size = sum(len(v) + _RECORD_OVERHEAD for v in values)
        if not values:
            raise ValueError("append of no records")
        if size + _BATCH_OVERHEAD > self._max_batch_size:
            raise RecordBatchTooLargeError(f"{size} bytes exceed the maximum batch size {self._max_batch_size}")
        if self._pending_size + size > self._max_batch_size:
            self._complete_pending(now_ms)
        if self._pending_since_ms is None:
            self._pending_since_ms = now_ms
            self._pending_base = self.next_offset
        self._pending.extend(SimpleRecord(value=bytes(v), timestamp_ms=now_ms) for v in values)
        self._pending_size += size
        self.next_offset += len(values)
        return self.next_offset - 1

    def check_encoded_size(self, size: int) -> None:
        """Raises RecordBatchTooLargeError for an encoded batch of `size` bytes above the maximum batch size."""
        if size > self._max_batch_size:
            raise RecordBatchTooLargeError(f"{size} bytes exceed the maximum batch size {self._max_batch_size}")

    def append_encoded(self, batch: bytes | memoryview, record_count: int, now_ms: int) -> int:
        """A batch of `record_count` data records a client encoded, appended as it is after everything buffered
        so far (order is kept): no record is decoded or encoded again, only the header's base offset, leader epoch
        and timestamps are rewritten (the append time, as `append` stamps its records) and the CRC computed again.
        The caller has checked the batch (node/runtime/writes.py): CRC, decodable records, offset deltas 0..n-1, every
        record at timestamp delta 0, no producer id, no compression. Returns the offset of its last record."""
        self.check_encoded_size(len(batch))
        self._complete_pending(now_ms)
        out = bytearray(batch)
        restamp_batch(out, base_offset=self.next_offset, partition_leader_epoch=self.epoch, timestamp_ms=now_ms)
        self._completed.append(out)
        self.next_offset += record_count
        return self.next_offset - 1

    def append_control(self, messages: Sequence[object], now_ms: int) -> int:
        """Control records go in their own batch, after everything buffered so far. Returns its base offset."""
        self._complete_pending(now_ms)
        base = self.next_offset
        self._completed.append(
            encode_control_batch(messages, base_offset=base, partition_leader_epoch=self.epoch, timestamp_ms=now_ms)
        )
        self.next_offset += len(messages)
        return base

    def _complete_pending(self, now_ms: int) -> None:
        if not self._pending:
            return
        self._completed.append(encode_batch(
            self._pending, base_offset=self._pending_base, partition_leader_epoch=self.epoch, timestamp_ms=now_ms
        ))
        self._pending = []
        self._pending_size = _BATCH_OVERHEAD
        self._pending_since_ms = None

    def drain_deadline_ms(self) -> int | None:
        if self._completed:
            return 0
        if self._pending_since_ms is None:
            return None
        return self._pending_since_ms + self._linger_ms

    def drain(self, now_ms: int, force: bool = False) -> list[bytes | bytearray]:
        """Completed batches, plus the pending one if its linger expired (or `force`)."""
        deadline = self._pending_since_ms
        if self._pending and (force or (deadline is not None and now_ms >= deadline + self._linger_ms)):
            self._complete_pending(now_ms)
        batches, self._completed = self._completed, []
        return batches

    def is_empty(self) -> bool:
        return not self._pending and not self._completed
