"""A partition replica's idempotent-producer state across restarts: Kafka's ProducerStateManager, I/O side.

The state (broker/producer_state.py) is rebuilt from the latest producer snapshot at or below the log end plus the
batch headers after it, never from the whole log, and it keeps producers whose batches retention deleted:
- `open_producer_state`: on opening a replica. Snapshots outside [log start, log end] are stray (a torn tail was
  cut, retention ran) and go; a snapshot that does not decode (torn by a crash, bad CRC) is deleted with a log line
  and the next older one is tried, down to none (then the whole log is read, as Kafka does);
- `snapshot_producers`: when a segment rolls (`FileLog.on_roll`) and on clean shutdown. The file is written on the
  event loop (it is small) and synced by the log's next flush ticket, in the maintenance worker thread;
- `reload_after_truncation`: a follower's DivergingEpoch truncation already dropped the snapshots above the new end
  (FileLog); the state is reloaded from the latest one left.
Every open is recovery-validated to its end (storage/log_open.py), so the log end is the recovery point.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from pykraft.broker.producer_snapshot import (
    CorruptProducerSnapshotError,
    decode_producer_snapshot,
    encode_producer_snapshot,
)
from pykraft.broker.producer_state import last_sequence
from pykraft.records import RecordsError, iter_batches

if TYPE_CHECKING:
    from pykraft.node.hosts.partitions import Replica

_log = logging.getLogger("pykraft.node.producers")
_REBUILD_CHUNK = 1 << 20


def open_producer_state(replica: Replica) -> int:
    """Attach the roll hook and load the state. Returns how many batch headers were read (the tail's)."""
    replica.log.on_roll = lambda _offset: snapshot_producers(replica)
    files, log = replica.log.producer_snapshots, replica.log
    files.delete_above(log.end_offset())
    files.delete_below(log.start_offset())
    return load_producers(replica)


def load_producers(replica: Replica) -> int:
    """State from the latest readable snapshot at or below the log end, then the batches after it."""
    log, files = replica.log, replica.log.producer_snapshots
    while True:
        offset = files.latest_at_or_below(log.end_offset())
        if offset is None or offset < log.start_offset():
            replica.producers.clear()
            return replay_batches(replica, log.start_offset())
        try:
            entries = decode_producer_snapshot(files.read(offset))
        except (CorruptProducerSnapshotError, OSError) as exc:
            _log.warning("%s-%d: producer snapshot %s is unreadable (%s); deleted, the state is rebuilt from the "
                         "log", replica.topic, replica.partition, files.path(offset), exc)
            files.delete(offset)
            continue
        replica.producers.restore(entries)
        return replay_batches(replica, offset)


def reload_after_truncation(replica: Replica) -> int:
    return load_producers(replica)


def snapshot_producers(replica: Replica) -> None:
    """Kafka's takeSnapshot: the state as of the log end, in `<end offset>.snapshot` (kept if one is there)."""
    files, offset = replica.log.producer_snapshots, replica.log.end_offset()
    if offset in files.offsets:
        return
    try:
        files.write(offset, encode_producer_snapshot(replica.producers.entries()))
    except OSError as exc:  # a missing snapshot costs a longer load later, never the append or the shutdown
        files.delete(offset)
        _log.error("%s-%d: could not write the producer snapshot %s: %s", replica.topic, replica.partition,
                   files.path(offset), exc)


def replay_batches(replica: Replica, offset: int) -> int:
    """`observe` every producer batch header from `offset` to the log end. Returns how many batches were read."""
    log, producers = replica.log, replica.producers
    read = 0
    while offset < log.end_offset():
        data = log.read(offset, _REBUILD_CHUNK).records
        before = offset
        try:
            for batch in iter_batches(data, verify_crc=False, allow_truncated_tail=True):
                read += 1
                if batch.producer_id >= 0 and batch.last_offset >= offset:
                    producers.observe(batch.producer_id, batch.producer_epoch, batch.base_sequence,
                                      last_sequence(batch.base_sequence, batch.last_offset_delta), batch.base_offset,
                                      batch.last_offset, batch.max_timestamp)
                offset = max(offset, batch.last_offset + 1)
        except RecordsError:  # recovery validated the log: only a bug lands here
            _log.error("unreadable batch at offset %d of %s-%d", offset, replica.topic, replica.partition)
            return read
        if offset == before:
            return read
    return read
