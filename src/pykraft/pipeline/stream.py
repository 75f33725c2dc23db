"""`kraft`: a Spark streaming source tailing the committed records of a running cluster's metadata log over
Kafka's protocol. Spark offsets are log offsets ({"offset": N}: everything below N was delivered), so a query
restarted from its checkpoint resumes at the exact record, with no gap and no duplicate.

- The driver asks the quorum (DescribeQuorum through the admin client) for its high watermark: a micro-batch
  ends there, never beyond (only committed records), or `maxRecordsPerTrigger` past its start.
- An executor reads [start, end) with raft Fetch requests to the leader as an observer (replica id -1). It sends
  the leader's current epoch as the last fetched epoch: the leader's log reaches that epoch's end offset (its log
  end), so any committed offset validates without knowing the epoch of the record before it.
- Rows have the `kafka-log` columns with metadata decoding; `file` is `kraft://host:port`.
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


async def _fetch_range(point: QuorumPoint, start: int, end: int) -> list[bytes]:
    transport = default_transport()
    chunks, offset, epoch = [], start, point.leader_epoch
    try:
        while offset < end:
            partition = await _fetch_once(transport, point, offset, epoch)
            snapshot = partition.snapshot_id
            if int(snapshot.end_offset) >= 0:
                # At the log start the leader checks the epoch against its oldest snapshot's (the bootstrap
                # snapshot at offset 0 has epoch 0): fetch again with that one. Below the log start the records
                # are only in a snapshot, which this source does not read.
                if int(snapshot.end_offset) == offset and epoch != int(snapshot.epoch):
                    epoch = int(snapshot.epoch)
                    continue
                raise StreamSourceError(f"offset {offset} is below the leader's log start (now in a snapshot)")
            records = bytes(partition.records or b"")
            if not records:
                raise StreamSourceError(f"the leader returned no records at offset {offset} (below {end})")
            chunks.append(records)
            offset, epoch = _next_offset(records), point.leader_epoch
    finally:
        await transport.close()
    return chunks


async def _fetch_once(transport, point: QuorumPoint, offset: int, epoch: int):  # noqa: ANN001, ANN202
    request = messages.fetch_request(point.cluster_id, None, point.leader_epoch, offset, epoch, 0, 0, FETCH_BYTES)

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
    def __init__(self, point: QuorumPoint, start: int, end: int) -> None:
        super().__init__((start, end))
        self.point, self.start, self.end = point, start, end


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
        return {"offset": max(end, start["offset"])}

    def partitions(self, start: dict, end: dict) -> list[InputPartition]:
        point = self.point or quorum_point(self.bootstrap)
        return [OffsetRange(point, start["offset"], end["offset"])] if end["offset"] > start["offset"] else []

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        r: OffsetRange = partition  # type: ignore[assignment]
        file = LogFile(f"kraft://{r.point.host}:{r.point.port}", NodeIdentity(r.point.cluster_id, r.point.leader_id,
                                                                             None), "__cluster_metadata", 0, r.start)
        for chunk in asyncio.run(_fetch_range(r.point, r.start, r.end)):
            for batch in decode_bytes(chunk, file, metadata=True):
                offsets = batch.column("offset")
                wanted = pc.and_(pc.greater_equal(offsets, r.start), pc.less(offsets, r.end))
                kept = batch.filter(wanted)
                if kept.num_rows:
                    yield kept

    def commit(self, end: dict) -> None:
        """Nothing to acknowledge: the log is not consumed, offsets are positions in it."""


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
