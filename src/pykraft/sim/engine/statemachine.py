"""The replicated state machine of a simulated node: a log of opaque values with a running digest.

Values are short ASCII strings: `s:<n>` sequence numbers appended by the leader, `w:<client>:<n>` client writes,
`r:<client>:<n>` read barriers (a read is linearizable because it goes through the log: its answer is every
client write committed before the barrier). The state is (count of data records, CRC-32 chain over them, the
client writes in order). Snapshots hold exactly that, so two nodes that reach the same offset, one by replaying
batches and one by loading a snapshot, must have identical states; the checker compares them by digest.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

from pykraft.raft.log import RawSnapshotReader
from pykraft.records import iter_batches

SEQUENCE, WRITE, READ = b"s", b"w", b"r"


@dataclass(frozen=True, slots=True)
class Digest:
    """The state at an offset: how many data records were applied and the CRC chain over them."""

    count: int
    crc: int


@dataclass(frozen=True, slots=True)
class Applied:
    """One committed data record as the state machine saw it."""

    offset: int
    value: bytes


@dataclass(frozen=True, slots=True)
class CommittedBatch:
    """A committed batch's identity (its stored CRC covers the records) and the state right after it."""

    base_offset: int
    last_offset: int
    epoch: int
    crc: int
    digest_after: Digest


class SequenceMachine:
    def __init__(self) -> None:
        self.next_offset = 0  # everything below has been applied (or came with a snapshot)
        self.count = 0
        self.crc = 0
        self.writes: list[bytes] = []  # committed client writes, in log order
        self.write_position: dict[bytes, int] = {}  # value -> its index in `writes` (the client-visible offset)
        self.leader_epoch: int | None = None  # set while this node's listener was told it leads this epoch
        self.snapshot_loads = 0

    def digest(self) -> Digest:
        return Digest(self.count, self.crc)

    def apply(self, records: bytes | memoryview) -> tuple[list[Applied], list[CommittedBatch]]:
        """Apply committed batches. Returns the data records and one `CommittedBatch` per batch for the
        cross-node comparison. Control batches advance the offset only."""
        applied: list[Applied] = []
        batches: list[CommittedBatch] = []
        for batch in iter_batches(records, verify_crc=False):
            if not batch.is_control:
                for record in batch.records():
                    value = bytes(record.value) if record.value is not None else b""
                    self.count += 1
                    self.crc = zlib.crc32(value, self.crc)
                    if value[:1] == WRITE:
                        self.write_position[value] = len(self.writes)
                        self.writes.append(value)
                    applied.append(Applied(record.offset, value))
            self.next_offset = batch.last_offset + 1
            batches.append(CommittedBatch(batch.base_offset, batch.last_offset, batch.partition_leader_epoch,
                                          batch.crc, Digest(self.count, self.crc)))
        return applied, batches

    # ---- snapshots -----------------------------------------------------------------------------------------
    def snapshot_values(self) -> list[bytes]:
        return [f"{self.count}:{self.crc}".encode(), *self.writes]

    def load(self, reader: RawSnapshotReader, end_offset: int) -> None:
        values = [bytes(r.value) for b in iter_batches(reader.records(), verify_crc=True) if not b.is_control
                  for r in b.records() if r.value is not None]
        count, crc = values[0].split(b":")
        self.count, self.crc = int(count), int(crc)
        self.writes = values[1:]
        self.write_position = {value: index for index, value in enumerate(self.writes)}
        self.next_offset = end_offset
        self.snapshot_loads += 1
