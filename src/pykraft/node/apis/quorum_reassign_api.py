"""AlterPartitionReassignments and ListPartitionReassignments naming `__cluster_metadata` partition 0: quorum
reassignment as KIP-642 designs it. This module is the I/O side; every decision is the raft core's
(raft/handlers/reassign_voters.py), handed a `ReassignVotersRequest` on the core task like any raft request.

The seam with partition reassignment of user topics (KIP-455, the controller's): `RaftQuorumReassignments` answers
the `__cluster_metadata` entries, with the two methods of the `QuorumReassignments` protocol the controller's
handler calls for them (`alter(topics, timeout_ms)` -> [(topic name, [partition answers])], `ongoing(requested)`
-> [OngoingTopicReassignment]); that handler splits the request, runs the rest on the controller and joins the
answers, lifting a NOT_CONTROLLER partition answer to the top level (`join_alter_answers` here does) so that the
client retries on the active controller. Until the controller has such a handler, `QuorumReassignApi.handlers()`
serves both APIs on a controller (brokers forward them), answering other topics as a controller that never
reassigns their partitions: nothing listed, a cancellation NO_REASSIGNMENT_IN_PROGRESS, an unknown topic or
partition UNKNOWN_TOPIC_OR_PARTITION, and a new assignment INVALID_REQUEST ("not supported yet").

What the core needs beyond its own state comes from the controller's image: the registered controllers
(ControllerRegistration: endpoints and supported kraft.version, `VoterCandidate`) and the registered brokers (only
to say that a broker cannot be a voter). The answer's errors: INVALID_REPLICA_ASSIGNMENT for a target the leader
cannot reach (with the reason), REQUEST_TIMED_OUT when the request's TimeoutMs passed first (the reassignment
goes on), NO_REASSIGNMENT_IN_PROGRESS for a cancellation with nothing to cancel, REASSIGNMENT_IN_PROGRESS when a
newer target replaced this one, UNKNOWN_TOPIC_OR_PARTITION for a partition other than 0, and NOT_CONTROLLER at the
top level when this node is not the raft leader (the client looks for the active controller and retries).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from pykraft.controller.features import KRAFT_VERSION
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.error_responses import error_response_for
from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.lazy_schema import schema_module
from pykraft.protocol.throttle import ZERO_THROTTLE
from pykraft.raft.config import METADATA_PARTITION, METADATA_TOPIC
from pykraft.raft.voter_change import ReassignVotersRequest, ReassignVotersResult, VoterCandidate
from pykraft.raft.voter_set import Endpoint, Endpoints, SupportedVersionRange

from pykraft.node.apis.versions import to_request_version

if TYPE_CHECKING:
    from pykraft.protocol.codec import DecodedRequest

NodeRuntime = Any  # node/runtime's NodeRuntime (apis/ sits below runtime/ in node's stack: not imported)

alter_resp = schema_module("kio.schema.alter_partition_reassignments.v1.response")
list_resp = schema_module("kio.schema.list_partition_reassignments.v0.response")

# The versions served (kio has both; Kafka 4.1 added v1's AllowReplicationFactorChange, KIP-1101).
QUORUM_REASSIGN_APIS = {ApiKey.ALTER_PARTITION_REASSIGNMENTS: (0, 1), ApiKey.LIST_PARTITION_REASSIGNMENTS: (0, 0)}
FORWARD_MARGIN_MS = 5000  # a broker forwarding AlterPartitionReassignments waits the request's TimeoutMs and this


def forward_timeout_ms(message: Any) -> int | None:
    """How long a broker waits for the controller's answer to a forwarded request of these APIs: the controller
    holds AlterPartitionReassignments until the target is reached or its TimeoutMs passed (None: the default)."""
    if int(message.__api_key__) != ApiKey.ALTER_PARTITION_REASSIGNMENTS:
        return None
    return max(0, int(message.timeout.total_seconds() * 1000)) + FORWARD_MARGIN_MS


# ---- the seam ----------------------------------------------------------------------------------------------------
def split_metadata_topic(topics: Iterable[Any] | None) -> tuple[list[Any], list[Any]]:
    """(the entries naming `__cluster_metadata`, every other entry) of a request's topic list."""
    metadata, others = [], []
    for topic in topics or ():
        (metadata if topic.name == METADATA_TOPIC else others).append(topic)
    return metadata, others


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


def join_alter_answers(message: Any, topics: list[Any]) -> Any:
    """The AlterPartitionReassignments answer of per-topic answers, at the request's version; NOT_CONTROLLER from
    any part becomes the top-level error (the client then retries the whole request on the active controller)."""
    version = int(message.__version__)
    for topic in topics:
        for partition in topic.partitions:
            if partition.error_code == ErrorCode.NOT_CONTROLLER:
                return to_request_version(error_response_for(message, ErrorCode.NOT_CONTROLLER,
                                                             error_message=partition.error_message), version)
    response = alter_resp.AlterPartitionReassignmentsResponse(
        throttle_time=ZERO_THROTTLE, error_code=ErrorCode.NONE, error_message=None, responses=tuple(topics))
    return to_request_version(response, version)


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


# ---- the handlers a controller serves until the controller's own take over ----------------------------------------
class QuorumReassignApi:
    """The two APIs on a controller node: `__cluster_metadata` through the raft core; other topics as a controller
    that reassigns none of their partitions (see the module docstring)."""

    def __init__(self, runtime_of: Callable[[], NodeRuntime | None], image_of: Callable[[], Any]) -> None:
        self._runtime_of = runtime_of
        self._image_of = image_of
        self.quorum = RaftQuorumReassignments(runtime_of, image_of)

    def handlers(self) -> dict[int, Any]:
        return {int(ApiKey.ALTER_PARTITION_REASSIGNMENTS): self.alter,
                int(ApiKey.LIST_PARTITION_REASSIGNMENTS): self.list}

    async def alter(self, decoded: DecodedRequest) -> Any:
        message, runtime = decoded.message, self._runtime_of()
        if runtime is None:
            return to_request_version(error_response_for(message, ErrorCode.NOT_CONTROLLER), int(message.__version__))
        metadata, others = split_metadata_topic(message.topics)
        timeout_ms = max(0, int(message.timeout.total_seconds() * 1000))
        allow = bool(getattr(message, "allow_replication_factor_change", True))
        answers = [alter_resp.ReassignableTopicResponse(name=name, partitions=tuple(parts))
                   for name, parts in await self.quorum.alter(metadata, timeout_ms, allow)]
        answers += [_user_topic(self._image_of(), topic) for topic in others]
        return join_alter_answers(message, answers)

    async def list(self, decoded: DecodedRequest) -> Any:
        message, runtime = decoded.message, self._runtime_of()
        core = None if runtime is None else runtime.core
        if core is None or core.leader_state() is None or core.high_watermark is None:
            return error_response_for(message, ErrorCode.NOT_CONTROLLER, error_message="not the active controller")
        return list_resp.ListPartitionReassignmentsResponse(
            throttle_time=ZERO_THROTTLE, error_code=ErrorCode.NONE, error_message=None,
            topics=tuple(self.quorum.ongoing(message.topics)))


def _user_topic(image: Any, topic: Any) -> Any:
    """A user topic's entry while this node reassigns no user-topic partitions (see the module docstring)."""
    replication = image.replication
    topic_id = replication.topics_by_name.get(topic.name)
    answers = []
    for p in topic.partitions:
        if topic_id is None or replication.partition(topic_id, int(p.partition_index)) is None:
            error, text = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{topic.name}-{p.partition_index} does not exist"
        elif p.replicas is None:
            error, text = ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, "no reassignment is in progress"
        else:
            error, text = ErrorCode.INVALID_REQUEST, (
                "reassigning the partitions of a topic other than __cluster_metadata is not supported yet")
        answers.append(alter_resp.ReassignablePartitionResponse(partition_index=p.partition_index, error_code=error,
                                                                error_message=text))
    return alter_resp.ReassignableTopicResponse(name=topic.name, partitions=tuple(answers))
