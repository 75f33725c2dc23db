"""Produce v3-v12 to the partitions this broker leads (the data plane's write path).

Per partition: `PartitionHost.append_as_leader` (validation from headers, acks admission, idempotent sequence
check, in-place patch, append). A transaction's first batch in a partition is verified with its coordinator first
(KIP-890 part 1, txn_verification.py), all the request's partitions in one question; from v12 on (a client of
transaction version 2, KIP-890 part 2) the coordinator is asked to add them to the transaction instead, the client
sending no AddPartitionsToTxn of its own. acks=0 gets no answer (Kafka never sends one); acks=1 is answered once the batch is
in the leader's log; acks=all once the high watermark passed it, or REQUEST_TIMED_OUT after the request's
timeout. A Produce naming `__cluster_metadata` goes to the metadata write path (writes.py), as before.
"""

from __future__ import annotations

import asyncio
import datetime
import struct
from collections.abc import Awaitable, Callable
from typing import Any

from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode
from pykraft.raft.config import METADATA_TOPIC

from pykraft.broker import txn_verification
from pykraft.node.hosts.partitions import AppendResult, PartitionHost
from pykraft.node.apis.wire_build import make, response_namespace

_MIN_TIMEOUT_S = 0.001
_PRODUCER = struct.Struct(">qh")  # producer id, producer epoch (at byte 43 of a batch)
_TRANSACTIONAL = 0x10
Verifier = Callable[[str, int, int, list[tuple[str, int]]], Awaitable[dict[tuple[str, int], ErrorCode]]]


async def produce(host: PartitionHost, message: Any, verifier: Verifier | None = None,
                  adder: Verifier | None = None) -> Any | None:
    """`verifier`: asks the transaction coordinator (None: transaction.partition.verification.enable=false);
    `adder`: has it add the partitions (Produce v12+: Kafka's addPartition operation, whatever that setting)."""
    acks = int(message.acks)
    results: list[tuple[str, int, AppendResult]] = []
    version = int(message.__version__)
    ask = adder if version >= txn_verification.ADD_PARTITION_PRODUCE_VERSION and adder is not None else verifier
    guards, refused = await _verify(host, message, ask, version)
    for topic in message.topic_data:
        for data in topic.partition_data:
            key = (topic.name, int(data.index))
            if acks not in (-1, 0, 1):
                results.append((*key, AppendResult(ErrorCode.INVALID_REQUIRED_ACKS)))
                continue
            if key in refused:
                results.append((*key, refused[key]))
                continue
            results.append((*key, host.append_as_leader(topic.name, int(data.index), data.records, acks,
                                                        guards.get(key, txn_verification.SKIP))))
    waiters = [r.waiter for _, _, r in results if r.waiter is not None and not r.waiter.done()]
    if waiters:
        timeout = max(message.timeout.total_seconds(), _MIN_TIMEOUT_S)
        await asyncio.wait(waiters, timeout=timeout)
    if acks == 0:
        return None
    return _response(int(message.__version__), results)


def _final_error(result: AppendResult) -> ErrorCode:
    waiter = result.waiter
    if result.error is not ErrorCode.NONE or waiter is None:
        return result.error
    return waiter.result() if waiter.done() else ErrorCode.REQUEST_TIMED_OUT


def _response(version: int, results: list[tuple[str, int, AppendResult]]) -> Any:
    ns = response_namespace(ApiKey.PRODUCE, version)
    by_topic: dict[str, list[Any]] = {}
    for name, index, result in results:
        error = _final_error(result)
        ok = error is ErrorCode.NONE
        by_topic.setdefault(name, []).append(make(
            ns.PartitionProduceResponse, index=index, error_code=error,
            base_offset=result.base_offset if ok else -1, log_start_offset=result.log_start_offset,
            log_append_time=_timestamp(result.log_append_time_ms) if ok else None,
            record_errors=(), error_message=None if ok else result.message))
    topics = tuple(make(ns.TopicProduceResponse, name=name, partition_responses=tuple(parts))
                   for name, parts in by_topic.items())
    return make(ns.ProduceResponse, responses=topics)


def _timestamp(ms: int) -> datetime.datetime | None:
    """Produce's log_append_time_ms: -1 (None) unless the topic is LogAppendTime."""
    return None if ms < 0 else datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.timezone.utc)


def names_metadata_topic(message: Any) -> bool:
    return any(topic.name == METADATA_TOPIC for topic in message.topic_data)


async def _verify(host: PartitionHost, message: Any, verifier: Verifier | None, version: int,
                  ) -> tuple[dict[tuple[str, int], object], dict[tuple[str, int], AppendResult]]:
    """Guards for the transactional batches that need verifying, and the partitions the coordinator refused."""
    transactional_id = message.transactional_id
    if transactional_id is None or verifier is None:
        return {}, {}
    guards: dict[tuple[str, int], object] = {}
    open_already: dict[tuple[str, int], object] = {}
    producer = None
    for topic in message.topic_data:
        for data in topic.partition_data:
            records = data.records
            if records is None or len(records) < 61 or not memoryview(records)[22] & _TRANSACTIONAL:
                continue
            pid, epoch = _PRODUCER.unpack_from(records, 43)
            found = host.leader_replica(topic.name, int(data.index))
            if isinstance(found, ErrorCode):
                continue
            key = (topic.name, int(data.index))
            if not txn_verification.needs_verification(found, pid, epoch):
                open_already[key] = None  # checked again at the append: a marker may close it meanwhile
                continue
            producer = (pid, epoch)
            guards[key] = txn_verification.start(found, pid, epoch)
    if producer is None:
        return open_already, {}
    errors = await verifier(transactional_id, producer[0], producer[1], list(guards))
    refused = {tp: AppendResult(txn_verification.produce_error(error, version),
                                message=f"transaction verification: {error.name}")
               for tp, error in errors.items() if error is not ErrorCode.NONE}
    return {**open_already, **{tp: g for tp, g in guards.items() if tp not in refused}}, refused
