"""A writer for the metadata log of a quorum whose nodes accept Produce (`pykraft.produce.enable=true`).

This is the write path of `pykraft quickstart`, of the multi-process tests and of the quorum benchmark: each call
sends one Produce (acks=-1) of a batch of values to the raft leader and returns the base offset once the batch is
committed. The leader is found through the admin client's DescribeCluster; NOT_LEADER_OR_FOLLOWER, time-outs and
lost connections are retried with backoff until the deadline.

A retried write may be committed twice (the first attempt can commit after its answer was lost): callers that need
exactly-once must deduplicate by value. `write` therefore reports `attempts`, so a caller can tell which values
may have duplicates.
"""

from __future__ import annotations

import asyncio
import datetime
import time
from collections.abc import Sequence
from dataclasses import dataclass

from kio.schema.produce.v9 import request as produce_req
from kio.schema.types import TopicName
from kio.static.primitive import Records, i16, i32, i32Timedelta

from pykraft.net.commit_probe import PROBE
from pykraft.protocol.codec import decode_response, encode_request
from pykraft.protocol.errors import ErrorCode, ProtocolError
from pykraft.raft.config import METADATA_PARTITION, METADATA_TOPIC
from pykraft.records import encode_values

from .client import AdminClient
from .errors import AdminClientError, AdminError
from .transport import Transport, TransportError, default_transport

Address = tuple[str, int]
RETRIABLE_WRITE = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.REQUEST_TIMED_OUT,
                             ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.NOT_CONTROLLER})


class WriteError(AdminClientError):
    """The write did not commit before the deadline, or was refused (`code` says why when a node answered)."""

    def __init__(self, message: str, code: ErrorCode | None = None) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class WriteResult:
    base_offset: int
    attempts: int  # more than 1: an earlier attempt may also have committed the values


class MetadataLogWriter:
    def __init__(self, bootstrap: Sequence[Address], *, transport: Transport | None = None,
                 request_timeout_ms: int = 10_000, deadline_ms: int = 30_000, retry_backoff_ms: int = 50,
                 retry_backoff_max_ms: int = 1000) -> None:
        self._transport = transport if transport is not None else default_transport()
        self._admin = AdminClient(bootstrap, transport=self._transport, request_timeout_ms=request_timeout_ms,
                                  deadline_ms=deadline_ms, retry_backoff_ms=retry_backoff_ms,
                                  retry_backoff_max_ms=retry_backoff_max_ms)
        self._request_timeout_ms, self._deadline_ms = request_timeout_ms, deadline_ms
        self._backoff_ms, self._backoff_max_ms = retry_backoff_ms, retry_backoff_max_ms
        self._leader: Address | None = None
        self._leader_lookup: asyncio.Lock | None = None

    async def __aenter__(self) -> MetadataLogWriter:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        await self._admin.close()  # closes the shared transport

    async def write(self, values: Sequence[bytes]) -> WriteResult:
        if PROBE is not None:
            PROBE.stamp("c_start")
        batch = encode_values(values, base_offset=0, partition_leader_epoch=-1, timestamp_ms=int(time.time() * 1000))
        message = produce_req.ProduceRequest(
            transactional_id=None, acks=i16(-1),
            timeout=i32Timedelta.parse(datetime.timedelta(milliseconds=self._request_timeout_ms)),
            topic_data=(produce_req.TopicProduceData(name=TopicName(METADATA_TOPIC), partition_data=(
                produce_req.PartitionProduceData(index=i32(METADATA_PARTITION), records=Records(batch)),)),))
        deadline = time.monotonic() + self._deadline_ms / 1000
        backoff, attempts, last = self._backoff_ms, 0, "no attempt"
        while time.monotonic() < deadline:
            attempts += 1
            try:
                return WriteResult(await self._attempt(message), attempts)
            except _Retry as retry:
                last = str(retry)
            await asyncio.sleep(backoff / 1000)
            backoff = min(backoff * 2, self._backoff_max_ms)
        raise WriteError(f"write of {len(values)} values not acknowledged within {self._deadline_ms} ms: {last}")

    async def _attempt(self, message: produce_req.ProduceRequest) -> int:
        address = await self._leader_address()
        try:
            payload = await self._transport.request(*address, lambda correlation_id: _encoded(
                message, correlation_id), timeout_ms=self._request_timeout_ms)
            if PROBE is not None:
                PROBE.stamp("c_recv")
            response = decode_response(payload, int(message.__api_key__), int(message.__version__)).message
        except (TransportError, ProtocolError) as exc:
            self._leader = None
            raise _Retry(f"{address[0]}:{address[1]}: {exc}") from None
        partition = response.responses[0].partition_responses[0]
        code = ErrorCode(int(partition.error_code))
        if code == ErrorCode.NONE:
            if PROBE is not None:
                PROBE.stamp("c_decoded", int(partition.base_offset))
            return int(partition.base_offset)
        if code in RETRIABLE_WRITE:
            self._leader = None
            raise _Retry(f"{address[0]}:{address[1]} answered {code.name}")
        raise WriteError(f"{code.name}: {partition.error_message or ''}".strip(), code)

    async def _leader_address(self) -> Address:
        if self._leader_lookup is None:
            self._leader_lookup = asyncio.Lock()
        async with self._leader_lookup:  # concurrent writers share one DescribeCluster
            if self._leader is None:
                try:
                    info = await self._admin.describe_cluster()
                except AdminError as exc:
                    raise _Retry(str(exc)) from None
                node = info.node(info.controller_id) if info.controller_id >= 0 else None
                if node is None:
                    raise _Retry("no leader is known yet")
                self._leader = (node.host, node.port)
            return self._leader


class _Retry(Exception):
    pass


def _encoded(message: produce_req.ProduceRequest, correlation_id: int) -> bytes:
    frame = encode_request(message, correlation_id=correlation_id, client_id="pykraft-writer")[4:]
    if PROBE is not None:
        PROBE.stamp("c_encoded")
    return frame
