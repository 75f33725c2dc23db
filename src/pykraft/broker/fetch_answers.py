"""One partition of a Fetch answer from the partitions this broker leads, pure over the partition host
(broker/partition_host.py): the node's Fetch handler (node/apis/fetch_api.py: long polls, the wire answer) and
the simulated brokers both answer with it.

- A consumer (replica id -1) reads whole batches up to the high watermark; a follower (replica id >= 0) reads up to
  the log end, and its fetch offset is its progress (`on_follower_fetch`). A follower whose (fetch offset, last
  fetched epoch) is not in our history gets DivergingEpoch and no records: it truncates and fetches again.
- Partition errors: NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION / UNKNOWN_TOPIC_ID, FENCED_LEADER_EPOCH /
  UNKNOWN_LEADER_EPOCH against the request's current leader epoch, OFFSET_OUT_OF_RANGE.
- A read_uncommitted consumer's batches are, where the log offers it (storage's FileLog), a region of the segment
  file (protocol/framing.py's FileRegion) that the server sends from the file's pages: zero-copy, as Kafka's FileRecords.
  Followers keep the bytes path: they read mostly the tail the leader holds in memory (tail_cache.py), and the
  in-process harnesses (tests/broker) hand a leader's answer straight to a follower's append.
- READ_COMMITTED: a consumer reads below the last stable offset only, and gets the aborted transactions
  overlapping what it read (from the log's `.txnindex`), so it drops their records; every answer carries the
  partition's last stable offset. READ_UNCOMMITTED answers carry a null list, as Kafka's do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.framing import FileRegion
from pykraft.raft.log import ValidationKind

if TYPE_CHECKING:
    from .partition_host import PartitionCore, Replica

CONSUMER = -1


@dataclass(frozen=True, slots=True)
class PartitionAnswer:
    index: int
    error: ErrorCode
    high_watermark: int = -1
    log_start_offset: int = -1
    records: bytes | memoryview | FileRegion = b""  # a region: a consumer's batches, sent from the segment file
    diverging: tuple[int, int] | None = None  # (epoch, end offset)
    last_stable_offset: int = -1
    aborted: tuple[tuple[int, int], ...] | None = None  # read_committed: (producer id, first offset)


@dataclass(frozen=True, slots=True)
class PartitionFetch:
    """One partition of a Fetch request, as the answer needs it."""

    index: int
    fetch_offset: int
    current_leader_epoch: int = -1
    last_fetched_epoch: int = -1
    max_bytes: int = 1 << 20
    log_start_offset: int = -1  # a follower's, reported for DeleteRecords' low watermark
    read_committed: bool = False  # a consumer's IsolationLevel READ_COMMITTED


def leader_epoch_error(replica: Replica, current_leader_epoch: int) -> ErrorCode:
    if current_leader_epoch < 0 or current_leader_epoch == replica.leader_epoch:
        return ErrorCode.NONE
    return ErrorCode.FENCED_LEADER_EPOCH if current_leader_epoch < replica.leader_epoch \
        else ErrorCode.UNKNOWN_LEADER_EPOCH


def answer_partition(host: PartitionCore, name: str | None, unknown: ErrorCode, p: PartitionFetch, replica_id: int,
                     broker_epoch: int, now_ms: int) -> PartitionAnswer:
    index = p.index
    found = unknown if name is None else host.leader_replica(name, index)
    if isinstance(found, ErrorCode):
        return PartitionAnswer(index, found)
    replica, log = found, found.log
    error = leader_epoch_error(replica, p.current_leader_epoch)
    if error is not ErrorCode.NONE:
        return PartitionAnswer(index, error)
    offset = p.fetch_offset
    hwm, start, end = log.high_watermark(), log.start_offset(), log.end_offset()
    if replica_id >= 0 and p.last_fetched_epoch >= 0 and offset > start:
        check = log.validate_offset_and_epoch(offset, p.last_fetched_epoch)
        if check.kind is ValidationKind.DIVERGING:
            diverging = check.offset_and_epoch
            return PartitionAnswer(index, ErrorCode.NONE, hwm, start, b"", (diverging.epoch, diverging.offset))
    if offset < start or offset > end:
        return PartitionAnswer(index, ErrorCode.OFFSET_OUT_OF_RANGE, hwm, start)
    if replica_id >= 0:
        host.on_follower_fetch(replica, replica_id, offset, broker_epoch, now_ms, p.log_start_offset)
        hwm = log.high_watermark()
    lso = replica.producers.last_stable_offset(hwm)
    committed = replica_id < 0 and p.read_committed
    upper = end if replica_id >= 0 else (lso if committed else hwm)
    if replica_id < 0 and not committed:  # the one answer that may be a region of a segment file
        records = _consumer_read(log, offset, p.max_bytes, upper) if offset < upper else b""
        return PartitionAnswer(index, ErrorCode.NONE, hwm, start, records, last_stable_offset=lso)
    read = trim(log.read(offset, max(p.max_bytes, 1)).records, upper) if offset < upper else b""
    aborted = None
    if committed:
        read_end = end_of_batches(read, offset)
        aborted = tuple((a.producer_id, a.first_offset) for a in log.txn_index.collect(offset, read_end)) \
            if read_end > offset else ()
    return PartitionAnswer(index, ErrorCode.NONE, hwm, start, read, last_stable_offset=lso, aborted=aborted)


def _consumer_read(log: Any, offset: int, max_bytes: int, upper: int) -> bytes | memoryview | FileRegion:
    """A read_uncommitted consumer's batches: a region of the segment file where the log offers one (storage's
    FileLog.read_region: the bytes go from the file to the socket without entering Python), else read and trimmed.
    A read_committed one needs the batches' bytes (the aborted transactions they overlap), as do followers (whose
    reads are mostly of the tail the leader still holds in memory)."""
    read_region = getattr(log, "read_region", None)
    if read_region is None:  # the simulator's in-memory log
        return trim(log.read(offset, max(max_bytes, 1)).records, upper)
    found = read_region(offset, max(max_bytes, 1), upper)
    return found if type(found) is FileRegion else trim(found, upper)


def end_of_batches(records: bytes | memoryview, offset: int) -> int:
    """The offset after the last batch of `records` (`offset` when there is none)."""
    view = memoryview(records)
    pos, end = 0, offset
    while pos + 27 <= len(view):
        base = int.from_bytes(view[pos:pos + 8], "big", signed=True)
        length = int.from_bytes(view[pos + 8:pos + 12], "big")
        end = base + int.from_bytes(view[pos + 23:pos + 27], "big", signed=True) + 1
        pos += 12 + length
    return end


def trim(records: bytes | memoryview, upper: int) -> bytes | memoryview:
    """Only batches that end below `upper` (a consumer never sees past the high watermark)."""
    view = memoryview(records)
    pos = 0
    while pos + 27 <= len(view):
        base = int.from_bytes(view[pos:pos + 8], "big", signed=True)
        length = int.from_bytes(view[pos + 8:pos + 12], "big")
        delta = int.from_bytes(view[pos + 23:pos + 27], "big", signed=True)
        if base + delta >= upper or pos + 12 + length > len(view):
            break
        pos += 12 + length
    return view[:pos] if pos < len(view) else records
