"""The state machine of a metadata node in the simulator: the committed metadata image, replayed from committed
batches and loaded from snapshots, in place of the raft-only scenarios' SequenceMachine (same interface, so
SimNode drives both alike).

`image` is any replica that replays metadata records: a `QuorumController` that is never activated (controllers)
or the broker's `MetadataCache` (brokers). It is fed committed records only, so it IS the committed image the
invariants look at, and the snapshots a node writes are `image.snapshot_records()` encoded with
`encode_metadata_record`. A controller node's active controller (which also replays its own uncommitted
records) is a separate object the node feeds through `on_records` / `on_snapshot`. `on_records(decoded, last)`
runs after every commit, with `last` the last committed offset (as the node runtime's CommitBatches.last_offset)
even when the batches held no metadata record (a LeaderChange control batch alone).

The digest of the state at an offset is (number of snapshot records, CRC-32 over their encodings), so the
checker's per-offset comparison (NoDivergence) and the metadata checker's ImageAgreement compare whole images
across every node, brokers included. It is recomputed only after a record that is not a NoOpRecord: most
committed batches are the controller's NoOps, and encoding the image after each would dominate the run time.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Any

from pykraft.controller.log_replay import decode_value, metadata_records
from pykraft.raft.log import BufferSnapshotReader
from pykraft.records import iter_batches
from pykraft.records.metadata.frame import encode_metadata_record
from pykraft.sim.engine.statemachine import Applied, CommittedBatch, Digest

NO_OP_RECORD = 20
Decoded = list[tuple[int, Any]]  # (offset, metadata record object) in log order


class MetadataMachine:
    def __init__(self, image: Any, on_records: Callable[[Decoded, int], None] | None = None,
                 on_snapshot: Callable[[list[Any], int], None] | None = None,
                 on_changed: Callable[[MetadataMachine, int], None] | None = None) -> None:
        self.image = image
        self.on_records = on_records
        self.on_snapshot = on_snapshot
        self.on_changed = on_changed  # (machine, next offset) after the image changed: the invariant checks
        self.next_offset = 0
        self.leader_epoch: int | None = None
        self.snapshot_loads = 0
        self.undecodable = 0
        self.writes: list[bytes] = []  # SequenceMachine's client-write list: metadata runs have no clients
        self.write_position: dict[bytes, int] = {}
        self._digest = Digest(0, 0)
        self._dirty = True

    def digest(self) -> Digest:
        if self._dirty:
            records = self.encoded_image()
            crc = 0
            for value in records:
                crc = zlib.crc32(value, crc)
            self._digest = Digest(len(records), crc)
            self._dirty = False
        return self._digest

    def encoded_image(self) -> list[bytes]:
        return [encode_metadata_record(r) for r in self.image.snapshot_records()]

    def apply(self, records: bytes | memoryview) -> tuple[list[Applied], list[CommittedBatch]]:
        applied: list[Applied] = []
        batches: list[CommittedBatch] = []
        decoded: Decoded = []
        changed = False
        for batch in iter_batches(records, verify_crc=False):
            if not batch.is_control:
                for record in batch.records():
                    value = bytes(record.value) if record.value is not None else b""
                    applied.append(Applied(record.offset, value))
                    item = decode_value(value)
                    if item is None:
                        self._count_undecodable()
                        continue
                    self.image.replay(item, record.offset)
                    decoded.append((record.offset, item))
                    if int(item.__api_key__) != NO_OP_RECORD:
                        self._dirty = changed = True
            self.next_offset = batch.last_offset + 1
            batches.append(CommittedBatch(batch.base_offset, batch.last_offset, batch.partition_leader_epoch,
                                          batch.crc, self.digest()))
        if batches and self.on_records is not None:
            # Every commit, control batches alone included: a controller's committed offset is the end of the
            # committed log, not its last metadata record (a snapshot may end after a trailing LeaderChange).
            self.on_records(decoded, self.next_offset - 1)
        if changed and self.on_changed is not None:
            self.on_changed(self, self.next_offset)
        return applied, batches

    def _count_undecodable(self, count: int = 1) -> None:
        self.undecodable += count  # a record that is not metadata would be a bug of the writer: counted

    # ---- snapshots ---------------------------------------------------------------------------------------------
    def snapshot_values(self) -> list[bytes]:
        return self.encoded_image()

    def load(self, reader: BufferSnapshotReader, end_offset: int) -> None:
        objects = [item for _, item in metadata_records(reader.records(), on_undecodable=self._count_undecodable)]
        self.image.load_snapshot(objects, end_offset - 1)
        self.next_offset = end_offset
        self.snapshot_loads += 1
        self._dirty = True
        if self.on_snapshot is not None:
            self.on_snapshot(objects, end_offset - 1)
        if self.on_changed is not None:
            self.on_changed(self, end_offset)

