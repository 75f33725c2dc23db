"""A fake transport and a fake clock for the admin client tests.

The transport decodes every request from the bytes the client built (so the client's encoding is exercised),
hands it to a per-address handler, and encodes the handler's response back to bytes. A handler returns a kio
response, raises a transport error, or returns raw bytes (a malformed answer).
"""

from __future__ import annotations

import datetime
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kio.schema.describe_cluster.v1 import response as dc_resp
from kio.schema.describe_quorum.v2 import response as dq_resp
from kio.schema.errors import ErrorCode as KioErrorCode
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i32, i64, u16

from pykraft.protocol.apis import KRAFT_NODE_APIS, ApiKey
from pykraft.protocol.codec import DecodedRequest, decode_request, encode_response
from pykraft.protocol.error_responses import error_response_for
from pykraft.protocol.errors import ErrorCode

ZERO_MS = datetime.timedelta(0)

Handler = Callable[[DecodedRequest], Any]


@dataclass
class FakeClock:
    now: float = 1000.0
    sleeps: list[float] = field(default_factory=list)

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@dataclass
class FakeTransport:
    handlers: dict[tuple[str, int], Handler] = field(default_factory=dict)
    sent: list[tuple[tuple[str, int], ApiKey]] = field(default_factory=list)
    closed: bool = False

    async def request(self, host: str, port: int, build, *, timeout_ms: int) -> bytes:
        assert timeout_ms > 0
        frame = build(7)
        # The raft APIs (a test may widen them) plus the controller's quorum reassignment APIs.
        apis = KRAFT_NODE_APIS.with_range(ApiKey.ALTER_PARTITION_REASSIGNMENTS, 0, 1).with_range(
            ApiKey.LIST_PARTITION_REASSIGNMENTS, 0, 0)
        decoded = decode_request(frame, apis)
        assert isinstance(decoded, DecodedRequest), decoded
        self.sent.append(((host, port), decoded.api_key))
        handler = self.handlers[(host, port)]
        answer = handler(decoded)
        if isinstance(answer, bytes):
            return answer
        return encode_response(decoded.correlation_id, answer)[4:]

    async def close(self) -> None:
        self.closed = True

    def apis_sent(self) -> list[tuple[tuple[str, int], str]]:
        return [(address, key.name) for address, key in self.sent]


def error(request: DecodedRequest, code: ErrorCode, message: str | None = None) -> Any:
    return error_response_for((request.api_key, request.api_version), code, error_message=message)


def describe_cluster(controller_id: int, controllers: dict[int, tuple[str, int]], cluster_id: str = "CLUSTER-A"):
    return dc_resp.DescribeClusterResponse(
        throttle_time=ZERO_MS, error_code=KioErrorCode.none, endpoint_type=2, cluster_id=cluster_id,
        controller_id=BrokerId(controller_id),
        brokers=tuple(dc_resp.DescribeClusterBroker(broker_id=BrokerId(i), host=h, port=i32(p))
                      for i, (h, p) in controllers.items()))


def replica(node_id: int, leo: int, directory: uuid.UUID | None = None, fetch: int = -1, caught_up: int = -1):
    return dq_resp.ReplicaState(replica_id=BrokerId(node_id), replica_directory_id=directory,
                                log_end_offset=i64(leo), last_fetch_timestamp=i64(fetch),
                                last_caught_up_timestamp=i64(caught_up))


def describe_quorum(leader_id: int, epoch: int, hwm: int, voters: tuple, observers: tuple = (),
                    nodes: dict[int, list[tuple[str, str, int]]] | None = None,
                    code: ErrorCode = ErrorCode.NONE, message: str | None = None):
    partition = dq_resp.PartitionData(
        partition_index=i32(0), error_code=code, error_message=message, leader_id=BrokerId(leader_id),
        leader_epoch=i32(epoch), high_watermark=i64(hwm), current_voters=voters, observers=observers)
    return dq_resp.DescribeQuorumResponse(
        error_code=KioErrorCode.none, error_message=None,
        topics=(dq_resp.TopicData(topic_name=TopicName("__cluster_metadata"), partitions=(partition,)),),
        nodes=tuple(dq_resp.Node(node_id=BrokerId(i), listeners=tuple(
            dq_resp.Listener(name=n, host=h, port=u16(p)) for n, h, p in listeners))
            for i, listeners in (nodes or {}).items()))
