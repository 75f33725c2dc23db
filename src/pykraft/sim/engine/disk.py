"""Simulated storage of one node: the metadata log (an in-memory log with fsync semantics) and the stored
election state (`quorum-state`).

Fault model:
- Crash: everything appended after the last completed flush is lost (`MemoryLog.simulate_crash`). Optionally the
  crash tears the write in progress: some unflushed batches reached the platter whole, the next one only in part
  (cut short, or zero-filled at the end). Recovery scans the tail with the batch codec (length and CRC-32C) and
  keeps the whole, valid batches, as a real log recovery would. Surviving unflushed data is legal (it is just
  data that was never acknowledged).
- The quorum-state file is written atomically (temp file + rename), so it is never torn: a persist either
  happened or not. The runtime persists before sending anything, so a crash cannot lose an acknowledged vote.
- Bit flip: one bit of a stored (flushed) batch is flipped, in the bytes the CRC covers (attributes to the end)
  or in the CRC field itself. Header fields the CRC does not cover (offset, length, epoch) are left alone: the
  in-memory log indexes batches by them, a real segment would need its own index rebuild to notice.
  What happens then, honestly: `MemoryLog` itself never checks CRCs, and neither does the core on its hot paths
  (fetch serving, listener). The simulated storage layer is where the check lives: every `read` that returns a
  corrupted batch raises `StorageCorruptionError` (found by recomputing the CRC). The node treats that as a
  fail-stop storage fault: it halts and stays down across restarts (the start-up history scan reads the whole
  log and hits the same batch). It never truncates the bad batch away, which would be unsafe for committed data
  (Protocol-Aware Recovery, FAST'18). The way back is a disk replacement (wipe), after which the node rejoins
  with a new directory id.
- Wipe (disk replacement): an empty log without even the bootstrap snapshot, no election state, a new directory
  id; the node comes back as an observer.
"""

from __future__ import annotations

import random
import uuid
from dataclasses import replace

from pykraft.raft.election import ElectionState
from pykraft.raft.log import LogFetchInfo
from pykraft.raft.memory_log import MemoryLog
from pykraft.records import RecordsError, iter_batches

_CRC_FIELD = 17  # first byte of the stored CRC; bytes before it are not covered by it


class StorageCorruptionError(Exception):
    """A stored batch failed its CRC check on read. The node halts (fail-stop), it does not repair locally."""


class SimLog(MemoryLog):
    """MemoryLog plus the fault hooks. Reads the parent's batch list directly: this is the simulated disk, it
    owns the bytes."""

    def __init__(self) -> None:
        super().__init__()
        self.corrupted: set[int] = set()  # base offsets of batches whose bytes were flipped
        self.torn_recoveries = 0
        # Truncations the core asked for (a follower cutting an uncommitted tail on DivergingEpoch), not the
        # loss of an unflushed tail on a crash: how often the repair-by-truncation path runs, and how deep.
        self.truncations = 0
        self.max_truncated = 0
        self._crashing = False

    def truncate_to(self, offset: int) -> None:
        before = self.end_offset()
        super().truncate_to(offset)
        removed = before - self.end_offset()
        if removed > 0 and not self._crashing:
            self.truncations += 1
            self.max_truncated = max(self.max_truncated, removed)

    def read(self, start_offset: int, max_bytes: int) -> LogFetchInfo:
        fetched = super().read(start_offset, max_bytes)
        if self.corrupted:
            self._verify(fetched.records)
        return fetched

    def _verify(self, records: bytes | memoryview) -> None:
        self.corrupted &= set(self._base_offsets)  # a truncated or cleaned batch is no longer on disk
        try:
            for _ in iter_batches(records, verify_crc=True):
                pass
        except RecordsError as error:
            raise StorageCorruptionError(str(error)) from error

    # ---- faults --------------------------------------------------------------------------------------------
    def flip_bit(self, rng: random.Random) -> int | None:
        """Flip one bit in a flushed batch; returns its base offset, or None when nothing is flushed."""
        flushed = [i for i, b in enumerate(self._batches) if b.last_offset < self._flushed]
        if not flushed:
            return None
        index = rng.choice(flushed)
        batch = self._batches[index]
        data = bytearray(batch.data)
        position = rng.randrange(_CRC_FIELD, len(data))
        data[position] ^= 1 << rng.randrange(8)
        self._batches[index] = replace(batch, data=bytes(data))
        self.corrupted.add(batch.base_offset)
        return batch.base_offset

    def crash(self, rng: random.Random, torn_probability: float) -> None:
        """A hard kill. With `torn_probability`, part of the unflushed tail survives (see the module doc)."""
        if self._flushed < self.end_offset() and rng.random() < torn_probability:
            self._flushed = self._recover_torn_tail(rng)
        self._crashing = True
        try:
            self.simulate_crash()
        finally:
            self._crashing = False
        # Recovery on the next open, as storage/log_open.py does: a snapshot taken of applied state can be ahead
        # of the flushed log (a follower applies what the quorum committed before its own flush), and then the
        # log restarts at that snapshot instead of keeping a tail below what the state machine will load.
        self.truncate_to_latest_snapshot()

    def _recover_torn_tail(self, rng: random.Random) -> int:
        unflushed = [b for b in self._batches if b.base_offset >= self._flushed]
        whole = rng.randrange(len(unflushed))
        torn = bytearray(unflushed[whole].data)
        if rng.random() < 0.5:
            del torn[rng.randrange(1, len(torn)):]  # cut short: the length field gives it away
        else:
            cut = rng.randrange(_CRC_FIELD + 4, len(torn))
            torn[cut:] = bytes(len(torn) - cut)  # zero-filled sectors: only the CRC gives it away
        image = b"".join(b.data for b in unflushed[:whole]) + bytes(torn)
        end = self._flushed
        try:
            for batch in iter_batches(image, verify_crc=True, allow_truncated_tail=True):
                end = batch.last_offset + 1
        except RecordsError:
            pass  # the first bad batch and everything after it are discarded
        self.torn_recoveries += 1
        return end


class SimDisk:
    """What survives a process crash: the log (minus its unflushed tail) and the last persisted election."""

    def __init__(self, directory_id: uuid.UUID, log: SimLog) -> None:
        self.directory_id = directory_id
        self.log = log
        self.election: ElectionState | None = None
        self.generation = 0  # bumped by every wipe (disk replacement)

    def persist(self, state: ElectionState) -> None:
        self.election = state

    def crash(self, rng: random.Random, torn_probability: float) -> None:
        self.log.crash(rng, torn_probability)

    def wipe(self, new_directory_id: uuid.UUID) -> None:
        self.directory_id = new_directory_id
        old, self.log = self.log, SimLog()
        # The counters describe the node's run, not one disk: carried over to the replacement
        self.log.truncations, self.log.max_truncated = old.truncations, old.max_truncated
        self.election = None
        self.generation += 1
