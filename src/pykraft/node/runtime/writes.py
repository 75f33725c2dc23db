"""Client writes through the runtime: Produce to `__cluster_metadata`, and the error a write that failed carries.

UpdateFeatures is not here: the controller host answers it (node/roles/controller_host.py), with the controller's rules
for metadata.version and the raft core for kraft.version. A write appends on the leader and answers only once the
high watermark has passed what it wrote (leader_appends.py), or fails with NOT_LEADER_OR_FOLLOWER when this node stops
leading the epoch it wrote in first (Kafka's appendPurgatory completes exceptionally on resignation). Produce is off unless the config has
`pykraft.produce.enable=true`: the metadata log belongs to the controller, and a stray producer must not be able
to write into it by accident; refused writes get TOPIC_AUTHORIZATION_FAILED with a message saying how to enable.
Only acks=-1 is accepted (acks=0 gets no answer, as Kafka never answers those; acks=1 gets INVALID_REQUIRED_ACKS):
an acknowledgement here means committed.

A produced batch is appended as it arrived when it is plain (`plain_batches`: uncompressed, no producer id,
offset deltas 0..n-1, every record at the batch timestamp, as `MetadataLogWriter` and most clients send): the
leader rewrites its header only (raft/accumulator.py) instead of decoding every record and encoding it again, which
was most of the leader's CPU under load. Its records are still checked once here, because every node replays the
metadata log and a record that does not decode must never reach it: walked without building records
(records/simple_scan.py) in the shape `MetadataLogWriter` sends, fully decoded otherwise. Any other batch takes
the old way: its values are re-encoded into the leader's own batch (keys and headers dropped).
"""

from __future__ import annotations

import importlib
from typing import Any, Protocol

from kio.static.primitive import i64

from pykraft.protocol.apis import ApiKey, response_class
from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.throttle import ZERO_THROTTLE
from pykraft.raft.config import METADATA_PARTITION, METADATA_TOPIC
from pykraft.records import RecordBatch, RecordsError, iter_batches
from pykraft.records.simple_scan import NO_VALUE, simple_values


PRODUCE_ENABLE_KEY = "pykraft.produce.enable"


class WriteFailed(Exception):
    """A write that did not commit: carries the error code the client gets."""

    def __init__(self, error: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.error = error


class Writer(Protocol):
    """What the runtime's leader appends offer (leader_appends.py): raises WriteFailed, returns once committed (the
    base offset)."""

    async def append_committed(self, values: list[bytes]) -> int: ...

    async def append_encoded_committed(self, batches: list[tuple[memoryview, int]]) -> int: ...


def produce_enabled(raw: Any) -> bool:
    return str(raw.get(PRODUCE_ENABLE_KEY, "false")).strip().lower() == "true"


def _values(records: bytes | memoryview | None) -> list[bytes]:
    """Record values of the produced batches; raises RecordsError for anything malformed."""
    values: list[bytes] = []
    for batch in iter_batches(records or b""):
        if batch.is_control:
            raise RecordsError("control batches cannot be produced")
        values.extend(bytes(r.value) if r.value is not None else b"" for r in batch.records())
    if not values:
        raise RecordsError("no records")
    return values


def plain_batches(records: bytes | memoryview | None) -> list[tuple[memoryview, int]] | None:
    """(batch, record count) of the produced batches when every one can be appended as it is; None when one
    cannot (the caller re-encodes the values). Raises RecordsError for anything malformed, as `_values` does:
    a bad CRC, a control batch, no records, or records that do not decode."""
    plain: list[tuple[memoryview, int]] = []
    for batch in iter_batches(records or b""):
        if batch.is_control:
            raise RecordsError("control batches cannot be produced")
        if not _is_plain(batch):
            return None
        plain.append((batch.buffer, batch.record_count))
    if not plain:
        raise RecordsError("no records")
    return plain


def _is_plain(batch: RecordBatch) -> bool:
    if batch.attributes != 0 or batch.producer_id != -1 or batch.producer_epoch != -1 or batch.base_sequence != -1:
        return False
    count = batch.record_count
    if count < 1 or batch.last_offset_delta != count - 1:
        return False
    if simple_values(batch, NO_VALUE) is not None:  # the common shape, walked without building records
        return True
    base_offset, timestamp = batch.base_offset, batch.base_timestamp
    expected = base_offset
    for record in batch.records():  # decodes them all: raises RecordsError for a malformed one
        if record.offset != expected or record.timestamp != timestamp:
            return False
        expected += 1
    return True


async def produce(writer: Writer, enabled: bool, request: Any) -> Any | None:
    acks = int(request.acks)
    if acks == 0:
        return None
    # Built at the request's version (9..12 share these fields): lowering a v12 answer field by field
    # (versions.to_request_version) cost more than the rest of the answer.
    ns = importlib.import_module(response_class(ApiKey.PRODUCE, int(request.__version__)).__module__)
    topics = []
    for topic in request.topic_data:
        partitions = []
        for data in topic.partition_data:
            error, message, base = await _produce_partition(writer, enabled, acks, topic.name, data)
            partitions.append(ns.PartitionProduceResponse(
                index=data.index, error_code=error, base_offset=i64(base), record_errors=(), error_message=message))
        topics.append(ns.TopicProduceResponse(name=topic.name, partition_responses=tuple(partitions)))
    return ns.ProduceResponse(responses=tuple(topics), throttle_time=ZERO_THROTTLE)


async def _produce_partition(writer: Writer, enabled: bool, acks: int, topic: str, data: Any
                             ) -> tuple[ErrorCode, str | None, int]:
    if topic != METADATA_TOPIC or int(data.index) != METADATA_PARTITION:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"only {METADATA_TOPIC}-0 exists on a controller", -1
    if not enabled:
        return (ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                f"writes to {METADATA_TOPIC} are disabled; set {PRODUCE_ENABLE_KEY}=true to allow them", -1)
    if acks != -1:
        return ErrorCode.INVALID_REQUIRED_ACKS, "only acks=-1 (all) is supported", -1
    try:
        plain = plain_batches(data.records)
        values = _values(data.records) if plain is None else []
    except RecordsError as exc:
        return ErrorCode.CORRUPT_MESSAGE, f"bad record batch: {exc}", -1
    try:
        if plain is not None:
            return ErrorCode.NONE, None, await writer.append_encoded_committed(plain)
        return ErrorCode.NONE, None, await writer.append_committed(values)
    except WriteFailed as exc:
        return exc.error, str(exc), -1


__all__ = ["WriteFailed", "produce", "produce_enabled"]
