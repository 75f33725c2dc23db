"""Producer-id blocks (KIP-730): the controller hands brokers blocks of ids for InitProducerId.

AllocateProducerIds(broker id, broker epoch) from a registered, unfenced broker whose epoch matches gets the next
block of `BLOCK_SIZE` ids, recorded as a ProducerIdsRecord whose NextProducerId is the first id after the block;
every replica replays it, so a new active controller continues after the last block ever handed out and no id is
given twice. Errors: an unknown broker -> BROKER_ID_NOT_REGISTERED, another epoch -> STALE_BROKER_EPOCH.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from kio.static.primitive import i32, i64

from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.lazy_schema import schema_module
from pykraft.protocol.throttle import ZERO_THROTTLE
from pykraft.records.metadata.schema.producer_ids_record import ProducerIdsRecordV0

from .cluster import ClusterControl
from .result import ControllerResult

apr = schema_module("kio.schema.allocate_producer_ids.v0.response")

PRODUCER_IDS_RECORD = 15
BLOCK_SIZE = 1000  # Kafka's ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE


class ProducerIdControl:
    def __init__(self) -> None:
        self.next_producer_id = 0
        self._last: ProducerIdsRecordV0 | None = None

    def replay(self, record: ProducerIdsRecordV0) -> None:
        self.next_producer_id = max(self.next_producer_id, int(record.next_producer_id))
        self._last = record

    def snapshot_records(self) -> Iterator[Any]:
        if self._last is not None:
            yield self._last

    def handle_allocate(self, request: Any, cluster: ClusterControl) -> ControllerResult:
        broker_id, epoch = int(request.broker_id), int(request.broker_epoch)
        registered = cluster.broker_epoch(broker_id)
        if registered is None:
            return ControllerResult(response=_answer(ErrorCode.BROKER_ID_NOT_REGISTERED, -1, 0))
        if epoch != registered:
            return ControllerResult(response=_answer(ErrorCode.STALE_BROKER_EPOCH, -1, 0))
        start = self.next_producer_id
        record = ProducerIdsRecordV0(broker_id=request.broker_id, broker_epoch=i64(epoch),
                                     next_producer_id=i64(start + BLOCK_SIZE))
        return ControllerResult((record,), _answer(ErrorCode.NONE, start, BLOCK_SIZE))


def _answer(error: ErrorCode, start: int, length: int) -> Any:
    return apr.AllocateProducerIdsResponse(throttle_time=ZERO_THROTTLE, error_code=error,
                                           producer_id_start=i64(start), producer_id_len=i32(length))
