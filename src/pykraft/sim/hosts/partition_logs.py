"""A simulated broker's partition logs: the simulated disk's `SimLog` (the metadata log's in-memory log with fsync
semantics, sim/engine/disk.py) behind the interface the partition host (broker/partition_host.py) uses of the
storage layer's `FileLog`: log-start moves (DeleteRecords and a follower adopting its leader's start, also inside a
batch), `truncate_fully_and_start_at`, `forget_epochs_from_end`; and a container with `PartitionLogs`' verbs.

Fault model, as Kafka's: a partition log is never fsynced by default (durability comes from replication), so what
a crash keeps is a draw per crash (`crash`): a process kill keeps the page cache (everything survives), a machine
crash loses every unflushed batch. A clean stop flushes. A disk loss (`wipe`) loses every partition log.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass
from typing import Any

from pykraft.records import iter_batches
from pykraft.records.txn_markers import decode_txn_marker, is_txn_marker_batch
from pykraft.sim.engine.disk import SimLog


def epochs_from_start(epochs: list[tuple[int, int]], new_start: int) -> list[tuple[int, int]]:
    """The epoch entries once the log starts at `new_start`, as storage/log_start.py cuts a FileLog's: the epoch
    covering the new start stays, moved up to it."""
    kept = [(e, s) for e, s in epochs if s >= new_start]
    covering = [(e, s) for e, s in epochs if s < new_start]
    if covering and (not kept or kept[0][1] > new_start):
        kept.insert(0, (covering[-1][0], new_start))
    return kept


@dataclass(frozen=True, slots=True)
class AbortedRange:
    """An aborted transaction of a log: [first_offset, last_offset] (the ABORT marker's offset)."""

    producer_id: int
    first_offset: int
    last_offset: int


class DerivedTxnIndex:
    """The log's aborted transactions as the `.txnindex` would hold them, derived from its batches on each call (the
    simulated disk has no index files: a truncation or a log-start move cannot leave it stale)."""

    def __init__(self, log: SimPartitionLog) -> None:
        self.log = log

    def all_entries(self) -> list[AbortedRange]:
        firsts: dict[int, int] = {}
        found = []
        for batch in self.log.batches():
            if batch.producer_id < 0 or not batch.is_transactional:
                continue
            if not is_txn_marker_batch(batch):
                firsts.setdefault(batch.producer_id, batch.base_offset)
                continue
            first = firsts.pop(batch.producer_id, batch.base_offset)
            if not decode_txn_marker(batch).commit:
                found.append(AbortedRange(batch.producer_id, first, batch.base_offset))
        return found

    def collect(self, fetch_offset: int, upper_bound: int) -> list[AbortedRange]:
        """Aborted transactions overlapping [fetch_offset, upper_bound), as the file index's `collect`."""
        return [e for e in self.all_entries() if e.last_offset >= fetch_offset and e.first_offset < upper_bound]


class SimPartitionLog(SimLog):
    def __init__(self, key: tuple[str, int]) -> None:
        super().__init__()
        self.key = key
        self.config: Any = None  # a FileLog's LogConfig: nothing rolls in memory
        self.txn_index = DerivedTxnIndex(self)

    def append_as_leader(self, records: bytes | memoryview, epoch: int, *, keep: bool | None = None) -> Any:
        return super().append_as_leader(bytes(records), epoch)

    def append_as_follower(self, records: bytes | memoryview, epoch: int) -> Any:
        return super().append_as_follower(bytes(records), epoch)

    def release_cached_below(self, offset: int) -> None:
        """Nothing is cached apart from the log itself."""

    def increment_log_start(self, new_start: int) -> bool:
        """DeleteRecords or the leader's log start, up to the high watermark (a FileLog raises above it)."""
        if new_start > self.high_watermark():
            raise ValueError(f"log start {new_start} above the high watermark {self.high_watermark()}")
        if new_start <= self._start_offset:
            return False
        drop = 0
        while drop < len(self._batches) and self._batches[drop].last_offset < new_start:
            drop += 1
        del self._batches[:drop]
        del self._base_offsets[:drop]
        self._start_offset = new_start
        self._epochs = epochs_from_start(self._epochs, new_start)
        self._flushed = max(self._flushed, new_start)
        return True

    def truncate_fully_and_start_at(self, offset: int) -> None:
        self._batches.clear()
        self._base_offsets.clear()
        self._epochs.clear()
        self._start_offset = self._high_watermark = self._flushed = offset

    def forget_epochs_from_end(self) -> None:
        end = self.end_offset()
        self._epochs = [(e, s) for e, s in self._epochs if s < end]

    def batches(self) -> list[Any]:
        """Every batch held (the checkers read the logs through this)."""
        if not self._batches:
            return []
        return list(iter_batches(b"".join(b.data for b in self._batches), verify_crc=False))

    def crash_keeping(self, keep_unflushed: bool) -> None:
        if keep_unflushed:
            self.flush()
        self.simulate_crash()
        self._high_watermark = min(self._high_watermark, self._flushed)  # kept in memory only: recovered below


class SimPartitionLogs:
    """`PartitionLogs`' verbs over the logs on one simulated broker's disk (they outlive its processes)."""

    def __init__(self) -> None:
        self._logs: dict[tuple[str, int], SimPartitionLog] = {}
        self.topic_ids: dict[tuple[str, int], uuid.UUID] = {}
        self.log_dirs = ("sim",)
        self.crash_keeps: bool | None = None  # a scenario's choice for the next crash (None: drawn)

    def load(self) -> list[tuple[tuple[str, int], None]]:
        for log in self._logs.values():
            # a restart knows no high watermark until its leader says (Kafka's checkpointed one may lag too)
            log._high_watermark = log.start_offset()
        return [(key, None) for key in sorted(self._logs)]

    def get(self, topic: str, partition: int) -> SimPartitionLog | None:
        return self._logs.get((topic, partition))

    def get_or_create(self, topic: str, partition: int, topic_id: uuid.UUID) -> SimPartitionLog:
        key = (topic, partition)
        if key in self._logs and self.topic_ids[key] != topic_id:
            self.delete(topic, partition)  # a topic deleted and created again under the same name
        if key not in self._logs:
            self._logs[key] = SimPartitionLog(key)
            self.topic_ids[key] = topic_id
        return self._logs[key]

    def delete(self, topic: str, partition: int) -> bool:
        self.topic_ids.pop((topic, partition), None)
        return self._logs.pop((topic, partition), None) is not None

    def dir_of(self, topic: str, partition: int) -> str | None:
        return "sim" if (topic, partition) in self._logs else None

    def checkpoint(self) -> None:
        """The node writes its checkpoint files here; nothing to write in memory."""

    def close(self) -> None:
        for log in self._logs.values():
            log.flush()

    def crash(self, rng: random.Random) -> bool:
        """A crash: a process kill keeps everything (the page cache), a machine crash only what was flushed.
        Returns whether the unflushed batches survived."""
        keep = rng.random() < 0.5 if self.crash_keeps is None else self.crash_keeps
        self.crash_keeps = None
        for log in self._logs.values():
            log.crash_keeping(keep)
        return keep

    def wipe(self) -> None:
        self._logs.clear()
        self.topic_ids.clear()

    def items(self) -> list[tuple[tuple[str, int], SimPartitionLog]]:
        return sorted(self._logs.items())
