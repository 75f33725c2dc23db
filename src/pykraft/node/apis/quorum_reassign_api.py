"""AlterPartitionReassignments and ListPartitionReassignments naming `__cluster_metadata` partition 0: quorum
reassignment as KIP-642 designs it. This module is the I/O side; every decision is the raft core's
(raft/handlers/reassign_voters.py), handed a `ReassignVotersRequest` on the core task like any raft request.

`RaftQuorumReassignments` sits behind the controller's seam for these entries (node/roles/reassignment_requests.py,
`QuorumReassignments`: the controller's handler splits the request, runs the partition entries on the controller and
joins the answers): `alter(topics, timeout_ms, allow_replication_factor_change)` -> [(topic name, [partition
answers])], `ongoing(requested)` -> [OngoingTopicReassignment]. Brokers forward both APIs to the active controller,
waiting an AlterPartitionReassignments' TimeoutMs (`forward_timeout_ms`).

What the core needs beyond its own state comes from the controller's image: the registered controllers
(ControllerRegistration: endpoints and supported kraft.version, `VoterCandidate`) and the registered brokers (only
to say that a broker cannot be a voter). The answer's errors: INVALID_REPLICA_ASSIGNMENT for a target the leader
cannot reach (with the reason), REQUEST_TIMED_OUT when the request's TimeoutMs passed first (the reassignment
goes on), NO_REASSIGNMENT_IN_PROGRESS for a cancellation with nothing to cancel, REASSIGNMENT_IN_PROGRESS when a
newer target replaced this one, UNKNOWN_TOPIC_OR_PARTITION for a partition other than 0, INVALID_REQUEST for
partition 0 named twice, INVALID_REPLICATION_FACTOR for another voter count with AllowReplicationFactorChange
false, and NOT_CONTROLLER when this node is not the raft leader (the seam makes it the answer's top-level error).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from pykraft.controller.features import KRAFT_VERSION
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.lazy_schema import schema_module
from pykraft.raft.config import METADATA_PARTITION, METADATA_TOPIC
from pykraft.raft.voter_change import ReassignVotersRequest, ReassignVotersResult, VoterCandidate
from pykraft.raft.voter_set import Endpoint, Endpoints, SupportedVersionRange

NodeRuntime = Any  # node/runtime's NodeRuntime (apis/ sits below runtime/ in node's stack: not imported)

alter_resp = schema_module("kio.schema.alter_partition_reassignments.v1.response")
list_resp = schema_module("kio.schema.list_partition_reassignments.v0.response")

FORWARD_MARGIN_MS = 5000  # a broker forwarding AlterPartitionReassignments waits the request's TimeoutMs and this


def forward_timeout_ms(message: Any) -> int | None:
    """How long a broker waits for the controller's answer to a forwarded request of these APIs: the controller
    holds AlterPartitionReassignments until the target is reached or its TimeoutMs passed (None: the default)."""
    if int(message.__api_key__) != ApiKey.ALTER_PARTITION_REASSIGNMENTS:
        return None
    return max(0, int(message.timeout.total_seconds() * 1000)) + FORWARD_MARGIN_MS


def candidates_of(image: Any) -> tuple[dict[int, VoterCandidate], frozenset[int]]:
    """(registered controllers as voter candidates, registered broker ids) from a controller's image."""
    cluster = image.cluster
    found = {}
    for node_id, registration in cluster.controllers.items():
        kraft = registration.supported(KRAFT_VERSION)
        found[node_id] = VoterCandidate(
            Endpoints.of(Endpoint(e.name, e.host, e.port) for e in registration.listeners),
            SupportedVersionRange(kraft.min_version, kraft.max_version) if kraft else SupportedVersionRange(0, 0))
    return found, frozenset(cluster.brokers)


async def alter_metadata_topic(runtime: NodeRuntime, image: Any, topic: Any, timeout_ms: int,
                               allow_replication_factor_change: bool = True) -> Any:
    """The ReassignableTopicResponse for the `__cluster_metadata` entry of an AlterPartitionReassignments."""
    answers, seen = [], set()
    text: str | None
    for partition in topic.partitions:
        index = int(partition.partition_index)
        if index != METADATA_PARTITION:
            error, text = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{METADATA_TOPIC} has only partition 0"
        elif index in seen:
            error, text = ErrorCode.INVALID_REQUEST, f"partition {index} is named more than once"
        else:
            error, text = await _alter(runtime, image, partition.replicas, timeout_ms, allow_replication_factor_change)
        seen.add(index)
        answers.append(alter_resp.ReassignablePartitionResponse(partition_index=partition.partition_index,
                                                                error_code=error, error_message=text))
    return alter_resp.ReassignableTopicResponse(name=topic.name, partitions=tuple(answers))


async def _alter(runtime: NodeRuntime, image: Any, replicas: Sequence[int] | None, timeout_ms: int,
                 allow_size_change: bool) -> tuple[ErrorCode, str | None]:
    core = runtime.core
    if replicas is not None and not allow_size_change and len(set(replicas)) != len(core.voters()):
        return ErrorCode.INVALID_REPLICATION_FACTOR, (
            f"the target has {len(set(replicas))} voters, the quorum {len(core.voters())}, and "
            "AllowReplicationFactorChange is false")
    candidates, brokers = candidates_of(image)
    request = ReassignVotersRequest(None if replicas is None else tuple(int(r) for r in replicas), timeout_ms,
                                    candidates, brokers)
    result: ReassignVotersResult | None = await runtime.core_request(request)
    if result is None:
        return ErrorCode.NOT_CONTROLLER, "the node is stopping"
    if result.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER:
        return ErrorCode.NOT_CONTROLLER, result.message
    return result.error_code, result.message


def list_metadata_topic(runtime: NodeRuntime, requested: Iterable[Any] | None) -> Any | None:
    """The OngoingTopicReassignment of `__cluster_metadata` while the quorum is being reassigned and `requested`
    (the request's topics; None: all) names it; None otherwise. As Kafka, a partition without a reassignment in
    progress is left out."""
    if requested is not None:
        wanted = {int(i) for t in requested if t.name == METADATA_TOPIC for i in t.partition_indexes}
        if METADATA_PARTITION not in wanted:
            return None
    progress = runtime.core.quorum_reassignment()
    if progress is None:
        return None
    voters, target = progress
    now, goal = set(voters.ids()), set(target.ids())
    partition = list_resp.OngoingPartitionReassignment(
        partition_index=METADATA_PARTITION, replicas=tuple(sorted(now | goal)),
        adding_replicas=tuple(sorted(goal - now)), removing_replicas=tuple(sorted(now - goal)))
    return list_resp.OngoingTopicReassignment(name=METADATA_TOPIC, partitions=(partition,))


class RaftQuorumReassignments:
    """The `__cluster_metadata` entries of both APIs, through the raft core (the controller's QuorumReassignments
    seam: see the module docstring). `runtime_of()` None (not started) answers NOT_CONTROLLER."""

    def __init__(self, runtime_of: Callable[[], NodeRuntime | None], image_of: Callable[[], Any]) -> None:
        self._runtime_of = runtime_of
        self._image_of = image_of

    async def alter(self, topics: Iterable[Any], timeout_ms: int,
                    allow_replication_factor_change: bool = True) -> list[tuple[str, list[Any]]]:
        runtime = self._runtime_of()
        answers = []
        for topic in topics:
            if runtime is None:
                answer = _every_partition(topic, ErrorCode.NOT_CONTROLLER, "the node is not running")
            else:
                answer = await alter_metadata_topic(runtime, self._image_of(), topic, timeout_ms,
                                                    allow_replication_factor_change)
            answers.append((answer.name, list(answer.partitions)))
        return answers

    def ongoing(self, requested: Iterable[Any] | None) -> list[Any]:
        runtime = self._runtime_of()
        found = None if runtime is None else list_metadata_topic(runtime, requested)
        return [] if found is None else [found]


def _every_partition(topic: Any, error: ErrorCode, text: str) -> Any:
    return alter_resp.ReassignableTopicResponse(name=topic.name, partitions=tuple(
        alter_resp.ReassignablePartitionResponse(partition_index=p.partition_index, error_code=error,
                                                 error_message=text) for p in topic.partitions))
