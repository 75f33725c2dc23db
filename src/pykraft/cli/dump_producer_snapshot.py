"""`pykraft dump-log` of a partition's producer snapshot (`<20-digit offset>.snapshot`), as Kafka's DumpLogSegments
prints one (`dumpProducerIdSnapshot`), one line per producer:

    producerId: 7 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong.empty lastTimestamp: 556
    firstSequence: 5 lastSequence: 9 lastOffset: 114 offsetDelta: 4 timestamp: 556        (on the same line)

The batch part is absent for a producer known only by its epoch. A snapshot that fails its checks (CRC, length,
version) is reported with the reason and the command exits non-zero (Kafka prints the reason only). --json prints
one object per producer with the snapshot's field names.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TextIO

from pykraft.broker.producer_snapshot import CorruptProducerSnapshotError, ProducerSnapshotEntry, decode_producer_snapshot

PRODUCER_SNAPSHOT_SUFFIX = ".snapshot"


def entry_line(e: ProducerSnapshotEntry) -> str:
    txn = f"OptionalLong[{e.current_txn_first_offset}]" if e.current_txn_first_offset >= 0 else "OptionalLong.empty"
    line = (f"producerId: {e.producer_id} producerEpoch: {e.epoch} coordinatorEpoch: {e.coordinator_epoch} "
            f"currentTxnFirstOffset: {txn} lastTimestamp: {e.timestamp}")
    if e.last_offset >= 0:
        line += (f" firstSequence: {e.first_sequence} lastSequence: {e.last_sequence} lastOffset: {e.last_offset} "
                 f"offsetDelta: {e.offset_delta} timestamp: {e.timestamp}")
    return line


def dump_producer_snapshot_file(path: Path, as_json: bool, out: TextIO) -> list[str]:
    """Print one producer snapshot; return the problems found."""
    if not as_json:
        print(f"Dumping {path}", file=out)
    try:
        entries = decode_producer_snapshot(path.read_bytes())
    except CorruptProducerSnapshotError as exc:
        return [f"{path}: not a valid producer snapshot: {exc}"]
    for e in entries:
        if as_json:
            print(json.dumps({"file": str(path), "producer_id": e.producer_id, "epoch": e.epoch,
                              "last_sequence": e.last_sequence, "last_offset": e.last_offset,
                              "offset_delta": e.offset_delta, "timestamp": e.timestamp,
                              "coordinator_epoch": e.coordinator_epoch,
                              "current_txn_first_offset": e.current_txn_first_offset}), file=out)
        else:
            print(entry_line(e), file=out)
    return []
