"""ListOffsets (v1-v10) and OffsetsForLeaderEpoch (v2-v4) on the partitions this broker leads.

ListOffsets: -2 earliest (the log start), -1 latest (the high watermark: what consumers may read), -3 the record
with the largest timestamp, t >= 0 the first record whose timestamp is >= t (found from batch headers, then one
batch decoded); none found -> offset -1. OffsetsForLeaderEpoch: the end offset of the largest epoch <= the one
asked for, from the leader epoch cache (followers of older versions use it to truncate, KIP-101).
"""

from __future__ import annotations

from typing import Any

from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode
from pykraft.records import RecordsError, iter_batches
from pykraft.storage import FileLog

from pykraft.node.apis.fetch_api import leader_epoch_error
from pykraft.node.hosts.partitions import PartitionHost
from pykraft.node.apis.wire_build import make, response_namespace

EARLIEST, LATEST, MAX_TIMESTAMP = -2, -1, -3
_CHUNK = 1 << 20


def list_offsets(host: PartitionHost, message: Any) -> Any:
    version = int(message.__version__)
    ns = response_namespace(ApiKey.LIST_OFFSETS, version)
    # READ_COMMITTED (v2+): the latest offset is the last stable offset, and timestamps are searched below it.
    committed = int(getattr(message, "isolation_level", 0)) == 1
    topics = []
    for topic in message.topics:
        parts = []
        for p in topic.partitions:
            error, timestamp, offset, epoch = _list_one(host, topic.name, p, committed)
            parts.append(make(ns.ListOffsetsPartitionResponse, partition_index=int(p.partition_index),
                              error_code=error, timestamp=timestamp, offset=offset, leader_epoch=epoch,
                              old_style_offsets=()))
        topics.append(make(ns.ListOffsetsTopicResponse, name=topic.name, partitions=tuple(parts)))
    return make(ns.ListOffsetsResponse, topics=tuple(topics))


def _list_one(host: PartitionHost, name: str, p: Any, committed: bool = False) -> tuple[ErrorCode, int, int, int]:
    found = host.leader_replica(name, int(p.partition_index))
    if isinstance(found, ErrorCode):
        return found, -1, -1, -1
    error = leader_epoch_error(found, int(getattr(p, "current_leader_epoch", -1)))
    if error is not ErrorCode.NONE:
        return error, -1, -1, -1
    log, target = found.log, int(p.timestamp)
    visible = found.producers.last_stable_offset(log.high_watermark()) if committed else log.high_watermark()
    if target == EARLIEST:
        return ErrorCode.NONE, -1, log.start_offset(), found.leader_epoch
    if target == LATEST:
        return ErrorCode.NONE, -1, visible, found.leader_epoch
    hit = find_by_timestamp(log, target, visible)
    if hit is None:
        return ErrorCode.NONE, -1, -1, -1
    timestamp, offset = hit
    return ErrorCode.NONE, timestamp, offset, log.end_offset_for_epoch(_epoch_at(log, offset)).epoch


def _epoch_at(log: FileLog, offset: int) -> int:
    epoch = 0
    for e, start in log.epoch_entries():
        if start <= offset:
            epoch = e
    return epoch


def find_by_timestamp(log: FileLog, target: int, upper: int) -> tuple[int, int] | None:
    """(timestamp, offset) of the first record below `upper` with timestamp >= target (target -3: the record
    with the largest timestamp). Headers only, except for the one batch that holds the answer."""
    best: tuple[int, int] | None = None
    offset = lower = log.start_offset()
    while offset < upper:
        data = log.read(offset, _CHUNK).records
        before = offset
        try:
            for batch in iter_batches(data, verify_crc=False, allow_truncated_tail=True):
                if batch.base_offset >= upper:
                    return best
                offset = batch.last_offset + 1
                if target == MAX_TIMESTAMP:
                    if best is None or batch.max_timestamp > best[0]:
                        best = _record_with(batch, lambda ts, m=batch.max_timestamp: ts == m, upper, lower) or best
                elif batch.max_timestamp >= target:
                    hit = _record_with(batch, lambda ts: ts >= target, upper, lower)
                    if hit is not None:  # a batch the log cleaner emptied keeps its max timestamp
                        return hit
        except RecordsError:
            return best
        if offset == before:
            break
    return best


def _record_with(batch: Any, wanted: Any, upper: int, lower: int) -> tuple[int, int] | None:
    """The first record in [lower, upper) of `batch` whose timestamp is `wanted` (`lower`: the log start, which
    DeleteRecords may have moved into the batch: records below it are gone for clients)."""
    for record in batch.records():
        if lower <= record.offset < upper and wanted(record.timestamp):
            return record.timestamp, record.offset
    return None


def offsets_for_leader_epoch(host: PartitionHost, message: Any) -> Any:
    ns = response_namespace(ApiKey.OFFSET_FOR_LEADER_EPOCH, int(message.__version__))
    topics = []
    for topic in message.topics:
        parts = []
        for p in topic.partitions:
            found = host.leader_replica(topic.topic, int(p.partition))
            error = found if isinstance(found, ErrorCode) else \
                leader_epoch_error(found, int(getattr(p, "current_leader_epoch", -1)))
            if error is not ErrorCode.NONE or isinstance(found, ErrorCode):
                parts.append(make(ns.EpochEndOffset, error_code=error, partition=int(p.partition)))
                continue
            end = found.log.end_offset_for_epoch(int(p.leader_epoch))
            parts.append(make(ns.EpochEndOffset, error_code=ErrorCode.NONE, partition=int(p.partition),
                              leader_epoch=end.epoch, end_offset=end.offset))
        topics.append(make(ns.OffsetForLeaderTopicResult, topic=topic.topic, partitions=tuple(parts)))
    return make(ns.OffsetForLeaderEpochResponse, topics=tuple(topics))

