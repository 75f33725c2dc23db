"""Admin operations on transactions, as Kafka's Admin does them (its transaction handlers) for kafka-transactions.sh:

- `list_transactions`: ListTransactions v1 to every broker (each lists the ids it coordinates), by broker id;
- `describe_transaction`: FindCoordinator(TRANSACTION) then DescribeTransactions at the coordinator (retried while
  the coordinator is not available or loading);
- `describe_producers`: DescribeProducers at the partition's leader (or a given broker);
- `abort_transaction`: WriteTxnMarkers (ABORT) straight to the partition's leader, as Admin.abortTransaction does
  for a hanging transaction the coordinator no longer knows;
- `find_hanging`: Kafka's FindHangingTransactionsCommand: the open transactions (DescribeProducers) older than the
  longest transaction timeout whose producer's coordinator does not have the partition in an ongoing transaction.
A per-item error is an AdminError with Kafka's code; transport failures are retried until the client's deadline.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kio.schema.describe_producers.v0 import request as dp_req
from kio.schema.describe_transactions.v0 import request as dt_req
from kio.schema.find_coordinator.v4 import request as fc_req
from kio.schema.list_transactions.v1 import request as lt_req
from kio.schema.types import ProducerId, TopicName, TransactionalId
from kio.schema.write_txn_markers.v1 import request as wtm
from kio.static.primitive import i8, i16, i32, i64

from pykraft.protocol.errors import ErrorCode

from .client import AdminClient
from .errors import AdminError

TRANSACTION_KEY_TYPE = 1
RETRY_BACKOFF_S = 0.1
_COORDINATOR_RETRIABLE = frozenset({ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                                    ErrorCode.NOT_COORDINATOR})


@dataclass(frozen=True, slots=True)
class TransactionListing:
    transactional_id: str
    coordinator: int
    producer_id: int
    state: str


@dataclass(frozen=True, slots=True)
class TransactionDescription:
    coordinator: int
    transactional_id: str
    producer_id: int
    producer_epoch: int
    state: str
    timeout_ms: int
    start_time_ms: int  # -1: none
    partitions: tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class ProducerStateRow:
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int  # -1: none
    last_sequence: int
    last_timestamp: int
    txn_start_offset: int  # -1: no open transaction


def _code(value: Any) -> ErrorCode:
    return ErrorCode.of(int(getattr(value, "value", value)))


async def _brokers(client: AdminClient) -> dict[int, tuple[str, int]]:
    metadata = await client.metadata([])
    return {int(b.node_id): (str(b.host), int(b.port)) for b in metadata.brokers}


async def list_transactions(client: AdminClient, duration_ms: int = -1,
                            producer_ids: Iterable[int] = ()) -> dict[int, list[TransactionListing]]:
    request = lt_req.ListTransactionsRequest(state_filters=(), producer_id_filters=tuple(
        ProducerId(p) for p in producer_ids), duration_filter=i64(duration_ms))
    found: dict[int, list[TransactionListing]] = {}
    for broker, address in sorted((await _brokers(client)).items()):
        answer = await client.node_call(address, f"listing the transactions of broker {broker}", request)
        error = _code(answer.error_code)
        if error is not ErrorCode.NONE:
            raise AdminError(error, f"broker {broker} could not list its transactions: {error.name}")
        found[broker] = [TransactionListing(str(t.transactional_id), broker, int(t.producer_id),
                                            str(t.transaction_state)) for t in answer.transaction_states]
    return found


async def find_coordinator(client: AdminClient, transactional_id: str) -> tuple[int, tuple[str, int]]:
    request = fc_req.FindCoordinatorRequest(key_type=i8(TRANSACTION_KEY_TYPE),
                                            coordinator_keys=(str(transactional_id),))
    deadline = time.monotonic() + client.server_timeout_ms() / 1000
    brokers = await _brokers(client)
    while True:
        answer = await client.node_call(next(iter(brokers.values())), "finding the transaction coordinator",
                                        request)
        (found,) = answer.coordinators
        error = _code(found.error_code)
        if error is ErrorCode.NONE:
            return int(found.node_id), (str(found.host), int(found.port))
        if error not in _COORDINATOR_RETRIABLE or time.monotonic() > deadline:
            raise AdminError(error, f"no coordinator for transactional id {transactional_id}: {error.name}")
        await asyncio.sleep(RETRY_BACKOFF_S)


async def describe_transaction(client: AdminClient, transactional_id: str) -> TransactionDescription:
    deadline = time.monotonic() + client.server_timeout_ms() / 1000
    request = dt_req.DescribeTransactionsRequest(transactional_ids=(TransactionalId(transactional_id),))
    while True:
        node, address = await find_coordinator(client, transactional_id)
        answer = await client.node_call(address, f"describing transactional id {transactional_id}", request)
        (state,) = answer.transaction_states
        error = _code(state.error_code)
        if error is ErrorCode.NONE:
            start = int(state.transaction_start_time.timestamp() * 1000)
            return TransactionDescription(
                node, transactional_id, int(state.producer_id), int(state.producer_epoch),
                str(state.transaction_state), int(state.transaction_timeout.total_seconds() * 1000),
                -1 if start < 0 else start,
                tuple((str(t.topic), int(p)) for t in state.topics for p in t.partitions))
        if error not in _COORDINATOR_RETRIABLE or time.monotonic() > deadline:
            raise AdminError(error, f"transactional id {transactional_id}: {error.name}")
        await asyncio.sleep(RETRY_BACKOFF_S)


async def _leader(client: AdminClient, topic: str, partition: int) -> tuple[int, tuple[str, int]]:
    metadata = await client.metadata([topic])
    brokers = {int(b.node_id): (str(b.host), int(b.port)) for b in metadata.brokers}
    for t in metadata.topics:
        for p in t.partitions if str(t.name) == topic else ():
            if int(p.partition_index) == partition and int(p.leader_id) in brokers:
                return int(p.leader_id), brokers[int(p.leader_id)]
    raise AdminError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"no leader known for {topic}-{partition}")


async def describe_producers(client: AdminClient, topic: str, partition: int,
                             broker_id: int | None = None) -> list[ProducerStateRow]:
    if broker_id is None:
        _, address = await _leader(client, topic, partition)
    else:
        brokers = await _brokers(client)
        if broker_id not in brokers:
            raise AdminError(ErrorCode.BROKER_NOT_AVAILABLE, f"broker {broker_id} is not in the cluster")
        address = brokers[broker_id]
    request = dp_req.DescribeProducersRequest(topics=(dp_req.TopicRequest(
        name=TopicName(topic), partition_indexes=(i32(partition),)),))
    answer = await client.node_call(address, f"describing the producers of {topic}-{partition}", request)
    (result,) = [p for t in answer.topics for p in t.partitions]
    error = _code(result.error_code)
    if error is not ErrorCode.NONE:
        raise AdminError(error, result.error_message or error.name)
    return [ProducerStateRow(int(s.producer_id), int(s.producer_epoch), int(s.coordinator_epoch),
                             int(s.last_sequence), int(s.last_timestamp), int(s.current_txn_start_offset))
            for s in result.active_producers]


async def abort_transaction(client: AdminClient, topic: str, partition: int, producer_id: int, producer_epoch: int,
                            coordinator_epoch: int) -> None:
    _, address = await _leader(client, topic, partition)
    request = wtm.WriteTxnMarkersRequest(markers=(wtm.WritableTxnMarker(
        producer_id=ProducerId(producer_id), producer_epoch=i16(producer_epoch), transaction_result=False,
        coordinator_epoch=i32(max(coordinator_epoch, 0)),
        topics=(wtm.WritableTxnMarkerTopic(name=TopicName(topic), partition_indexes=(i32(partition),)),)),))
    answer = await client.node_call(address, f"aborting the transaction of producer {producer_id}", request)
    errors = [_code(p.error_code) for m in answer.markers for t in m.topics for p in t.partitions]
    bad = next((e for e in errors if e is not ErrorCode.NONE), None)
    if bad is not None:
        raise AdminError(bad, f"{topic}-{partition}: {bad.name}")


@dataclass(frozen=True, slots=True)
class OpenTransaction:
    topic: str
    partition: int
    state: ProducerStateRow


async def find_hanging(client: AdminClient, partitions: list[tuple[str, int]], max_timeout_ms: int,
                       now_ms: int, broker_id: int | None = None) -> list[OpenTransaction]:
    candidates = []
    for topic, partition in partitions:
        for state in await describe_producers(client, topic, partition, broker_id):
            if state.txn_start_offset >= 0 and now_ms - state.last_timestamp > max_timeout_ms:
                candidates.append(OpenTransaction(topic, partition, state))
    if not candidates:
        return []
    listed = await list_transactions(client, producer_ids={c.state.producer_id for c in candidates})
    ids = {t.producer_id: t.transactional_id for rows in listed.values() for t in rows}
    hanging = []
    for candidate in candidates:
        transactional_id = ids.get(candidate.state.producer_id)
        description = None
        if transactional_id is not None:
            try:
                description = await describe_transaction(client, transactional_id)
            except AdminError as exc:
                if exc.code is not ErrorCode.TRANSACTIONAL_ID_NOT_FOUND:
                    raise
        if description is None or (candidate.topic, candidate.partition) not in description.partitions:
            hanging.append(candidate)
    return hanging


async def partitions_to_search(client: AdminClient, topic: str | None, partition: int | None,
                               broker_id: int | None) -> list[tuple[str, int]]:
    """find-hanging's scope: one partition, a topic's partitions, or every partition with a replica on a broker."""
    if topic is not None and partition is not None:
        return [(topic, partition)]
    metadata = await client.metadata(None if topic is None else [topic])
    found = []
    for t in metadata.topics:
        for p in t.partitions:
            if broker_id is None or broker_id in [int(r) for r in p.replica_nodes]:
                found.append((str(t.name), int(p.partition_index)))
    return sorted(found)
