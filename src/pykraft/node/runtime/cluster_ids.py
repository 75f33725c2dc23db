"""Saying why a node is kept out of the quorum when its cluster id is not the quorum's.

A node formatted with another cluster id sends raft requests that every voter refuses with INCONSISTENT_CLUSTER_ID;
it keeps running (as Kafka's KafkaRaftClient does: the error fails that request, which is retried after a backoff)
but can never join. Kafka logs the refused side at ERROR on every such answer ("Unexpected error
INCONSISTENT_CLUSTER_ID in FETCH response") and nothing on the refusing side. Here both sides say it, once per
peer and cluster id, with both ids, at the default log level:
- the refusing node (WARNING): which node sent what with which cluster id, and its own;
- the refused node (ERROR, Kafka's level): which node refused it, its own cluster id, and the peer's, which the
  answer does not carry: it is asked for once with DescribeCluster (`lookup`), "unknown" if that fails.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from kio.schema.describe_cluster.v1 import request as dc_req
from kio.static.primitive import i8

from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode

__all__ = ["ClusterIdMismatchLog", "requester_id"]

_log = logging.getLogger("pykraft.node")
CONTROLLERS_ENDPOINT_TYPE = 2
LOOKUP_ATTEMPTS, LOOKUP_BACKOFF_S = 3, 0.5
_ADVICE = ("The two nodes were formatted for different clusters; a node whose cluster id is not the quorum's "
           "cannot join it: reformat that node with the quorum's cluster id")

# (host, port, request) -> the peer's answer, or None when it could not be had
Lookup = Callable[[str, int, Any], Awaitable[Any | None]]


def _refused(response: Any) -> bool:
    return getattr(response, "error_code", None) == ErrorCode.INCONSISTENT_CLUSTER_ID


def _api_name(message: Any) -> str:
    try:
        return ApiKey(int(message.__api_key__)).name
    except (AttributeError, ValueError):
        return type(message).__name__


def requester_id(request: Any) -> int | None:
    """The id of the node that sent a raft request (Fetch's replica, Vote's candidate, the leader of a
    Begin/EndQuorumEpoch, the voter of a voter change); None when it does not say."""
    state = getattr(request, "replica_state", None)
    if state is not None:
        return int(state.replica_id)
    if getattr(request, "replica_id", None) is not None:
        return int(request.replica_id)
    topics = getattr(request, "topics", None) or ()
    partitions = (getattr(topics[0], "partitions", None) or ()) if topics else ()
    for name in ("replica_id", "leader_id"):
        if partitions and getattr(partitions[0], name, None) is not None:
            return int(getattr(partitions[0], name))
    voter = getattr(request, "voter_id", None)
    return None if voter is None else int(voter)


class ClusterIdMismatchLog:
    def __init__(self, local_cluster_id: str, lookup: Lookup) -> None:
        self.local = local_cluster_id
        self._lookup = lookup
        self._logged: set[tuple[object, ...]] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    def _first(self, *key: object) -> bool:
        fresh = key not in self._logged
        self._logged.add(key)
        return fresh

    def check_refusal(self, request: Any, response: Any) -> None:
        """After this node answered a raft request: log a cluster id refusal, once per peer and id."""
        if not _refused(response):
            return
        peer, theirs = requester_id(request), getattr(request, "cluster_id", None)
        if self._first("refusing", peer, theirs):
            _log.warning("refused %s from node %s: its cluster id %s is not ours, %s (INCONSISTENT_CLUSTER_ID). %s",
                         _api_name(request), "unknown" if peer is None else peer, theirs, self.local, _ADVICE)

    def check_answer(self, node_id: int, host: str, port: int, request: Any, response: Any) -> None:
        """After a peer answered one of our raft requests: log its cluster id refusal, once per peer."""
        if not _refused(response) or not self._first("refused", node_id, (host, port)):
            return
        task = asyncio.get_running_loop().create_task(self._log_refused(node_id, host, port, _api_name(request)))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _log_refused(self, node_id: int, host: str, port: int, api: str) -> None:
        theirs = await self._peer_cluster_id(host, port)
        _log.error("node %s at %s:%s refused our %s with INCONSISTENT_CLUSTER_ID: its cluster id is %s, ours is %s. %s",
                   node_id, host, port, api, theirs, self.local, _ADVICE)

    async def _peer_cluster_id(self, host: str, port: int) -> str:
        request = dc_req.DescribeClusterRequest(include_cluster_authorized_operations=False,
                                                endpoint_type=i8(CONTROLLERS_ENDPOINT_TYPE))
        for attempt in range(LOOKUP_ATTEMPTS):  # the connection may be in its reconnect backoff
            try:
                answer = await self._lookup(host, port, request)
            except Exception as exc:  # the log line matters more than the peer's id
                _log.debug("asking %s:%s for its cluster id failed: %r", host, port, exc)
                answer = None
            if answer is not None and getattr(answer, "cluster_id", None):
                return str(answer.cluster_id)
            if attempt + 1 < LOOKUP_ATTEMPTS:
                await asyncio.sleep(LOOKUP_BACKOFF_S)
        return "unknown"
