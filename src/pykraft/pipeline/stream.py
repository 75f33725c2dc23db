"""`kraft`: a Spark streaming source tailing the committed records of a running cluster's metadata log over
Kafka's protocol. Spark offsets are log offsets ({"offset": N}: everything below N was delivered), so a query
restarted from its checkpoint resumes at the exact record, with no gap and no duplicate.

- The driver asks the quorum (DescribeQuorum through the admin client) for its high watermark: a micro-batch
  ends there, never beyond (only committed records), or `maxRecordsPerTrigger` past its start.
- An executor reads [start, end) with raft Fetch requests to the leader as an observer (replica id -1). It sends
  the leader's current epoch as the last fetched epoch: the leader's log reaches that epoch's end offset (its log
  end), so any committed offset validates without knowing the epoch of the record before it.
- Rows have the `kafka-log` columns with metadata decoding; `file` is `kraft://host:port`.
- A start offset below the leader's log start (the records were cleaned after a snapshot) is answered by the
  leader with its latest snapshot's id: that micro-batch then reaches at least the snapshot's end offset, and
  the executor downloads the snapshot (FetchSnapshot) and yields its records first, each at offset end - 1 with
  `file` naming the snapshot, then the log from the snapshot's end. A stream started late still gets a complete
  image.
Options: `bootstrap` (a controller's host:port; required), `startingOffset` (default 0), `maxRecordsPerTrigger`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow

from pykraft.admin.connect import make_client
from pykraft.admin.transport import default_transport
from pykraft.protocol import decode_response, encode_request
from pykraft.raft import messages
from pykraft.raft.log import OffsetAndEpoch

from .decode import decode_bytes, spark_ddl
from .layout import LogFile, NodeIdentity

FETCH_BYTES = 8 * 1024 * 1024
TIMEOUT_MS = 30_000


class StreamSourceError(RuntimeError):
    """The quorum cannot be reached, or its log no longer holds the records asked for."""


@dataclass(frozen=True, slots=True)
class QuorumPoint:
    cluster_id: str
    leader_id: int
    leader_epoch: int
    high_watermark: int
    host: str
    port: int


async def _quorum(bootstrap: str) -> QuorumPoint:
    async with make_client(bootstrap, None, {}, deadline_ms=TIMEOUT_MS) as client:
        cluster = await client.describe_cluster()
        quorum = await client.describe_quorum()
    endpoints = quorum.nodes.get(quorum.leader_id) or ()
    node = cluster.node(quorum.leader_id)
    host, port = (endpoints[0].host, endpoints[0].port) if endpoints else (node.host, node.port)  # type: ignore
    return QuorumPoint(cluster.cluster_id, quorum.leader_id, quorum.leader_epoch, quorum.high_watermark, host, port)


def quorum_point(bootstrap: str) -> QuorumPoint:
    try:
        return asyncio.run(_quorum(bootstrap))
    except Exception as exc:  # the admin client's errors: one line for the caller
        raise StreamSourceError(f"cannot describe the quorum at {bootstrap}: {exc}") from None


async def _fetch_range(point: QuorumPoint, start: int, end: int,
                       snapshot: tuple[int, int] | None = None) -> list[tuple[tuple[int, int] | None, bytes]]:
    """(snapshot id or None, bytes) chunks covering [start, end): the snapshot `snapshot` (planned by the driver
    because `start` is below the leader's log start) first, then log records from its end offset."""
    transport = default_transport()
    chunks: list[tuple[tuple[int, int] | None, bytes]] = []
    offset, epoch = start, point.leader_epoch
    try:
        if snapshot is not None and start < snapshot[0]:
            chunks.append((snapshot, await _fetch_snapshot(transport, point, snapshot)))
            offset = snapshot[0]
        while offset < end:
            partition = await _fetch_once(transport, point, offset, epoch)
            snapshot_id = partition.snapshot_id
            if int(snapshot_id.end_offset) >= 0:
                # At the log start the leader checks the epoch against its oldest snapshot's (the bootstrap
                # snapshot at offset 0 has epoch 0): fetch again with that one.
                if int(snapshot_id.end_offset) == offset and epoch != int(snapshot_id.epoch):
                    epoch = int(snapshot_id.epoch)
                    continue
                raise StreamSourceError(f"offset {offset} is below the leader's log start (now in snapshot "
                                        f"{int(snapshot_id.end_offset)}), and the batch was planned without it")
            records = bytes(partition.records or b"")
            if not records:
                raise StreamSourceError(f"the leader returned no records at offset {offset} (below {end})")
            chunks.append((None, records))
            offset, epoch = _next_offset(records), point.leader_epoch
    finally:
        await transport.close()
    return chunks


async def _snapshot_below(point: QuorumPoint, offset: int) -> tuple[int, int] | None:
    """The (end offset, epoch) of the leader's latest snapshot when `offset` is below its log start: a Fetch there
    is answered with that snapshot's id instead of records."""
    transport = default_transport()
    try:
        partition = await _fetch_once(transport, point, offset, point.leader_epoch, max_bytes=1)
    finally:
        await transport.close()
    end, epoch = int(partition.snapshot_id.end_offset), int(partition.snapshot_id.epoch)
    return (end, epoch) if end > offset else None


def snapshot_below(point: QuorumPoint, offset: int) -> tuple[int, int] | None:
    try:
        return asyncio.run(_snapshot_below(point, offset))
    except StreamSourceError:
        raise
    except Exception as exc:  # the transport's errors: one line for the caller
        raise StreamSourceError(f"cannot fetch from {point.host}:{point.port}: {exc}") from None


async def _fetch_snapshot(transport, point: QuorumPoint, snapshot: tuple[int, int]) -> bytes:
    """The whole snapshot file, chunk by chunk (FetchSnapshot, as a follower downloads it)."""
    data = bytearray()
    size = None
    while size is None or len(data) < size:
        request = messages.fetch_snapshot_request(point.cluster_id, None, point.leader_epoch,
                                                  OffsetAndEpoch(*snapshot), len(data), FETCH_BYTES)

        def build(correlation_id: int, request=request) -> bytes:
            return encode_request(request, correlation_id=correlation_id, client_id="pykraft-stream")[4:]

        payload = await transport.request(point.host, point.port, build, timeout_ms=TIMEOUT_MS)
        response = decode_response(payload, int(request.__api_key__), int(request.__version__)).message
        partition = response.topics[0].partitions[0] if response.topics and response.topics[0].partitions else None
        error = int(response.error_code) or (int(partition.error_code) if partition is not None else -1)
        chunk = bytes(partition.unaligned_records or b"") if partition is not None else b""
        if error or not chunk:
            raise StreamSourceError(f"FetchSnapshot of snapshot {snapshot} at byte {len(data)} from "
                                    f"{point.host}:{point.port}: error code {error}")
        assert partition is not None  # (error is -1 without one)
        size = int(partition.size)
        data += chunk
    return bytes(data)


async def _fetch_once(transport, point: QuorumPoint, offset: int, epoch: int,
                      max_bytes: int = FETCH_BYTES):
    request = messages.fetch_request(point.cluster_id, None, point.leader_epoch, offset, epoch, 0, 0, max_bytes)

    def build(correlation_id: int) -> bytes:
        return encode_request(request, correlation_id=correlation_id, client_id="pykraft-stream")[4:]

    payload = await transport.request(point.host, point.port, build, timeout_ms=TIMEOUT_MS)
    response = decode_response(payload, 1, int(request.__version__)).message
    partition = response.responses[0].partitions[0]
    error = int(response.error_code) or int(partition.error_code)
    if error:
        raise StreamSourceError(f"Fetch at offset {offset} from {point.host}:{point.port}: error code {error}")
    return partition


def _next_offset(records: bytes) -> int:
    from pykraft.records import iter_batches

    last = -1
    for batch in iter_batches(records, verify_crc=False, allow_truncated_tail=True):
        last = batch.next_offset
    return last


class OffsetRange(InputPartition):
    def __init__(self, point: QuorumPoint, start: int, end: int, snapshot: tuple[int, int] | None = None) -> None:
        super().__init__((start, end))
        self.point, self.start, self.end, self.snapshot = point, start, end, snapshot


class KraftStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, bootstrap: str, starting: int, max_records: int | None) -> None:
        self.bootstrap = bootstrap
        self.starting = starting
        self.max_records = max_records
        self.target: int | None = None  # availableNow: the HWM when the query started
        self.point: QuorumPoint | None = None

    def initialOffset(self) -> dict:
        return {"offset": self.starting}

    def prepareForTriggerAvailableNow(self) -> None:
        self.target = quorum_point(self.bootstrap).high_watermark

    def latestOffset(self, start: dict, limit=None) -> dict:
        self.point = quorum_point(self.bootstrap)
        end = self.point.high_watermark if self.target is None else min(self.target, self.point.high_watermark)
        if self.max_records:
            end = min(end, start["offset"] + self.max_records)
        snapshot = snapshot_below(self.point, start["offset"])
        if snapshot is not None:
            end = max(end, snapshot[0])  # the whole snapshot in one micro-batch, then the log after it
        return {"offset": max(end, start["offset"])}

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        if end["offset"] <= start["offset"]:
            return []
        point = self.point or quorum_point(self.bootstrap)
        snapshot = snapshot_below(point, start["offset"])
        if snapshot is not None and snapshot[0] > end["offset"]:
            raise StreamSourceError(f"offsets {start['offset']}..{end['offset']} are below the leader's log start "
                                    f"{snapshot[0]}: the records are only in a snapshot beyond this batch's end")
        return [OffsetRange(point, start["offset"], end["offset"], snapshot)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        r: OffsetRange = partition  # type: ignore[assignment]
        file = LogFile(f"kraft://{r.point.host}:{r.point.port}", NodeIdentity(r.point.cluster_id, r.point.leader_id,
                                                                             None), "__cluster_metadata", 0, r.start)
        for snapshot, chunk in asyncio.run(_fetch_range(r.point, r.start, r.end, r.snapshot)):
            batches = decode_bytes(chunk, file, metadata=True) if snapshot is None else _snapshot_rows(chunk, r,
                                                                                                       snapshot)
            for batch in batches:
                offsets = batch.column("offset")
                wanted = pc.and_(pc.greater_equal(offsets, r.start), pc.less(offsets, r.end))
                kept = batch.filter(wanted)
                if kept.num_rows:
                    yield kept

    def commit(self, end: dict) -> None:
        """Nothing to acknowledge: the log is not consumed, offsets are positions in it."""


def _snapshot_rows(data: bytes, r: OffsetRange, snapshot: tuple[int, int]) -> Iterator[pa.RecordBatch]:
    """A snapshot's records as stream rows: every one stands at offset end - 1 (the image there, as the batch
    tables' replay takes them), in the order written (`position`), `file` naming the snapshot."""
    end, epoch = snapshot
    file = LogFile(f"kraft://{r.point.host}:{r.point.port}/{end:020d}-{epoch:010d}.checkpoint",
                   NodeIdentity(r.point.cluster_id, r.point.leader_id, None), "__cluster_metadata", 0, end)
    for batch in decode_bytes(data, file, metadata=True):
        at_end = pa.array([end - 1] * batch.num_rows, pa.int64())
        index = batch.schema.get_field_index("offset")
        yield batch.set_column(index, batch.schema.field(index), at_end)  # the field, NOT NULL as declared


class KraftDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "kraft"

    def schema(self) -> str:
        return spark_ddl(metadata=True)

    def streamReader(self, schema) -> DataSourceStreamReader:
        if not self.options.get("bootstrap"):
            raise ValueError("the kraft source needs option bootstrap=host:port (a controller)")
        max_records = self.options.get("maxRecordsPerTrigger")
        return KraftStreamReader(self.options["bootstrap"], int(self.options.get("startingOffset", 0)),
                                 int(max_records) if max_records else None)
