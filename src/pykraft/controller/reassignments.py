"""Partition reassignment (KIP-455): AlterPartitionReassignments v0-v1 (KIP-860) and ListPartitionReassignments v0.

A reassignment lives only in the partition's registration (replicas, addingReplicas, removingReplicas), so every
controller replica, a snapshot and the broker's metadata cache carry it, and a new active controller simply goes on
from the log. The algorithm (Kafka's ReplicationControlManager.changePartitionReassignment):

 1. A target for a partition: replicas = target + (current replicas not in the target, ascending), adding =
    target - current, removing = current - target (both ascending). "Current" is the replica list as it stands,
    so a new target replaces an ongoing one: an adding replica the new target drops becomes a removing one.
    Adding or removing lists the computation leaves empty keep their current value (Kafka sets only non-empty
    ones). One PartitionChangeRecord, or none when nothing differs.
 2. The new replicas' brokers create the replica and follow the leader; the leader proposes them for the ISR
    (AlterPartition, KIP-497) once caught up, and only if eligible (KIP-841: registered, unfenced, not shutting
    down).
 3. The first change whose ISR, without the removing replicas, holds every target replica completes it:
    replicas = target, ISR without the removing replicas, adding/removing cleared, the leader re-elected if it
    was removed (PartitionChangeBuilder, partition_change.py, applies this to every change, whatever wrote it).
    A reassignment whose ISR already qualifies (a reorder, a shrink) completes in the record of step 1.
Cancelling (a null replica list) reverts to the original replicas (replicas and ISR without the adding ones); if
no ISR member would be left it takes the first original replica, an unclean election that only a topic with
unclean.leader.election.enable may do. Cancelling a partition with nothing in progress is NO_REASSIGNMENT_IN_PROGRESS.

Per-partition errors, in Kafka's order: UNKNOWN_TOPIC_OR_PARTITION (topic, then partition); for a target:
INVALID_REPLICA_ASSIGNMENT (empty list, an unregistered id - negative ones included -, a repeated id), then
INVALID_REPLICATION_FACTOR when v1's AllowReplicationFactorChange is false and the target's size differs from the
ongoing target (or the replica count when idle). A broker that is registered but fenced is accepted, as by Kafka:
its replica joins the ISR only once it is unfenced.

Entries naming `__cluster_metadata` are quorum reassignments (KIP-642), not partition ones: `split_quorum_topics`
is the one place they are taken apart from the rest, and `quorum_reassignment_unsupported` answers them until the
quorum planner serves them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i32

from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.lazy_schema import schema_module
from pykraft.protocol.throttle import ZERO_THROTTLE

from .eligibility import BrokerEligibility
from .partition_change import Election, PartitionChangeBuilder
from .partitions import PartitionRegistration
from .result import ControllerResult
from .topics import MAX_RECORDS_PER_USER_OP, check_manual_replicas

alter_response = schema_module("kio.schema.alter_partition_reassignments.v1.response")
list_response = schema_module("kio.schema.list_partition_reassignments.v0.response")

if TYPE_CHECKING:
    from .replication import ReplicationControl

ALTER_PARTITION_REASSIGNMENTS = 45
LIST_PARTITION_REASSIGNMENTS = 46
QUORUM_TOPIC = "__cluster_metadata"  # KIP-642: the metadata partition is reassigned through the raft layer
QUORUM_UNSUPPORTED = ("Reassigning the metadata partition __cluster_metadata-0 (KIP-642 quorum reassignment) is not "
                      "supported by this controller yet; use AddRaftVoter/RemoveRaftVoter")


@dataclass(frozen=True, slots=True)
class Refusal:
    code: ErrorCode
    message: str | None = None


def reassignment_replicas(current: tuple[int, ...],
                          target: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """(replicas, adding, removing) of step 1 (Kafka's PartitionReassignmentReplicas)."""
    removing = tuple(sorted(set(current) - set(target)))
    adding = tuple(sorted(set(target) - set(current)))
    return tuple(target) + removing, adding, removing


def revert(partition: PartitionRegistration) -> tuple[tuple[int, ...], tuple[int, ...], bool] | Refusal:
    """(replicas, isr, unclean) after cancelling (Kafka's PartitionReassignmentRevert)."""
    adding = set(partition.adding_replicas)
    replicas = tuple(r for r in partition.replicas if r not in adding)
    isr = tuple(r for r in partition.isr if r not in adding)
    if isr:
        return replicas, isr, False
    if not replicas:
        return Refusal(ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                       "Invalid replica assignment: addingReplicas contains all replicas.")
    return replicas, (replicas[0],), True


def ongoing_target_size(partition: PartitionRegistration) -> int:
    """The replication factor a reassignment leads to (the replica count when none is in progress)."""
    removing = set(partition.removing_replicas)
    return len({r for r in (*partition.replicas, *partition.adding_replicas) if r not in removing})


# ---- AlterPartitionReassignments ---------------------------------------------------------------------------------
def alter_partition_reassignments(control: ReplicationControl, request: Any,
                                  brokers: BrokerEligibility) -> ControllerResult:
    """Every partition of the request, in order; its records are one atomic batch. Each entry is judged against the
    partition as the earlier entries of the same request leave it (a partition named twice behaves as two
    requests in a row would)."""
    allow_rf_change = bool(getattr(request, "allow_replication_factor_change", True))
    user_request, quorum_topics = split_quorum_topics(request)
    records: list[Any] = []
    pending: dict[tuple[Any, int], PartitionRegistration] = {}
    answers: dict[str, list[Any]] = {}
    for topic in user_request.topics:
        for target in topic.partitions:
            refusal = _alter_one(control, topic.name, target, brokers, allow_rf_change, records, pending)
            answers.setdefault(topic.name, []).append(_partition_answer(int(target.partition_index), refusal))
    quorum = dict(quorum_reassignment_unsupported(quorum_topics))
    response = alter_response.AlterPartitionReassignmentsResponse(
        throttle_time=ZERO_THROTTLE, error_code=ErrorCode.NONE, error_message=None,
        allow_replication_factor_change=allow_rf_change,
        responses=merged_topic_answers(request, answers, quorum))
    return ControllerResult(records=tuple(records), response=response)


def _alter_one(control: ReplicationControl, topic_name: str, target: Any, brokers: BrokerEligibility,
               allow_rf_change: bool, records: list[Any],
               pending: dict[tuple[Any, int], PartitionRegistration]) -> Refusal | None:
    topic_id = control.topics_by_name.get(topic_name)
    if topic_id is None:
        return Refusal(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find a topic named {topic_name}.")
    index = int(target.partition_index)
    partition = pending.get((topic_id, index)) or control.partition(topic_id, index)
    if partition is None:
        return Refusal(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find partition {topic_name}:{index}.")
    unclean = control.unclean_election_enabled(topic_name)
    if target.replicas is None:
        outcome = _cancel(partition, topic_id, index, topic_name, brokers, unclean)
    else:
        outcome = _change(partition, topic_id, index, tuple(int(b) for b in target.replicas), brokers,
                          allow_rf_change)
    if isinstance(outcome, Refusal):
        return outcome
    if outcome is not None:
        if len(records) >= MAX_RECORDS_PER_USER_OP:
            # Kafka's BoundedList refuses the record; UNKNOWN_SERVER_ERROR goes out without a message (ApiError)
            return Refusal(ErrorCode.UNKNOWN_SERVER_ERROR)
        records.append(outcome)
        pending[(topic_id, index)] = partition.merge(outcome)
    return None


def _change(partition: PartitionRegistration, topic_id: Any, index: int, target: tuple[int, ...],
            brokers: BrokerEligibility, allow_rf_change: bool) -> Any:
    """Step 1 for one partition: its record (None: nothing to change) or a Refusal."""
    invalid = check_manual_replicas(target, {}, brokers)
    if invalid is not None:
        return Refusal(invalid.code, invalid.message)
    if not allow_rf_change and ongoing_target_size(partition) != len(target):
        return Refusal(ErrorCode.INVALID_REPLICATION_FACTOR, f"The replication factor is changed from "
                                                             f"{ongoing_target_size(partition)} to {len(target)}")
    replicas, adding, removing = reassignment_replicas(partition.replicas, target)
    return PartitionChangeBuilder(
        partition, topic_id, index, brokers.is_active,
        target_replicas=replicas if replicas != partition.replicas else None,
        target_removing=removing or None, target_adding=adding or None).build()


def _cancel(partition: PartitionRegistration, topic_id: Any, index: int, topic_name: str,
            brokers: BrokerEligibility, unclean_enabled: bool) -> Any:
    if not partition.is_reassigning:
        # Kafka throws it with the code's own text, which ApiError then leaves out of the answer
        return Refusal(ErrorCode.NO_REASSIGNMENT_IN_PROGRESS)
    reverted = revert(partition)
    if isinstance(reverted, Refusal):
        return reverted
    replicas, isr, unclean = reverted
    if unclean and not unclean_enabled:
        return Refusal(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"Unable to revert partition assignment for "
                                                             f"{topic_name}:{index} because it would require an "
                                                             f"unclean leader election.")
    return PartitionChangeBuilder(
        partition, topic_id, index, brokers.is_active,
        election=Election.UNCLEAN if unclean_enabled else Election.ONLINE,
        target_isr=isr, target_replicas=replicas, target_removing=(), target_adding=()).build()


def _partition_answer(index: int, refusal: Refusal | None) -> Any:
    code, message = (ErrorCode.NONE, None) if refusal is None else (refusal.code, refusal.message)
    return alter_response.ReassignablePartitionResponse(partition_index=i32(index), error_code=code,
                                                        error_message=message)


# ---- the KIP-642 dispatch point ----------------------------------------------------------------------------------
def split_quorum_topics(request: Any) -> tuple[Any, tuple[Any, ...]]:
    """THE place where quorum reassignments (KIP-642, entries naming `__cluster_metadata`) leave the partition
    path: (the request without them, their ReassignableTopic entries). The partition side never sees them; the
    quorum side answers them (`quorum_reassignment_unsupported` until the raft planner does), and
    `merged_topic_answers` puts both answers back in the request's order."""
    quorum = tuple(t for t in request.topics if t.name == QUORUM_TOPIC)
    if not quorum:
        return request, ()
    return replace(request, topics=tuple(t for t in request.topics if t.name != QUORUM_TOPIC)), quorum


def quorum_reassignment_unsupported(quorum_topics: tuple[Any, ...]) -> list[tuple[str, list[Any]]]:
    """INVALID_REQUEST, naming the missing support, for every partition of the quorum entries."""
    return [(t.name, [_partition_answer(int(p.partition_index), Refusal(ErrorCode.INVALID_REQUEST,
                                                                        QUORUM_UNSUPPORTED))
                      for p in t.partitions]) for t in quorum_topics]


def merged_topic_answers(request: Any, answers: dict[str, list[Any]],
                         quorum: dict[str, list[Any]]) -> tuple[Any, ...]:
    """One ReassignableTopicResponse per topic entry of `request`, in its order (a topic listed twice is answered
    twice, each with its own partitions, as Kafka's loop over the request does)."""
    taken: dict[str, int] = {}
    topics = []
    for topic in request.topics:
        source = quorum if topic.name == QUORUM_TOPIC else answers
        start = taken.get(topic.name, 0)
        parts = source.get(topic.name, [])[start:start + len(topic.partitions)]
        taken[topic.name] = start + len(topic.partitions)
        topics.append(alter_response.ReassignableTopicResponse(name=TopicName(topic.name), partitions=tuple(parts)))
    return tuple(topics)


# ---- ListPartitionReassignments ----------------------------------------------------------------------------------
def list_partition_reassignments(control: ReplicationControl, request: Any) -> ControllerResult:
    """Every reassigning partition (Topics null), or those of the named topics and partitions; unknown topics
    and partitions, and partitions with nothing in progress, are left out (Kafka's answer). Sorted by topic name
    and partition when listing all."""
    if request.topics is None:
        wanted = [(t.name, sorted(t.partitions)) for t in sorted(control.topics.values(), key=lambda t: t.name)]
    else:
        wanted = [(str(t.name), [int(p) for p in t.partition_indexes]) for t in request.topics]
    topics = []
    for name, indexes in wanted:
        topic_id = control.topics_by_name.get(name)
        if topic_id is None:
            continue
        ongoing = []
        for index in indexes:
            p = control.partition(topic_id, index)
            if p is not None and p.is_reassigning:
                ongoing.append(list_response.OngoingPartitionReassignment(
                    partition_index=i32(index), replicas=_ids(p.replicas), adding_replicas=_ids(p.adding_replicas),
                    removing_replicas=_ids(p.removing_replicas)))
        if ongoing:
            topics.append(list_response.OngoingTopicReassignment(name=TopicName(name), partitions=tuple(ongoing)))
    return ControllerResult(response=list_response.ListPartitionReassignmentsResponse(
        throttle_time=ZERO_THROTTLE, error_code=ErrorCode.NONE, error_message=None, topics=tuple(topics)))


def _ids(values: tuple[int, ...]) -> tuple[BrokerId, ...]:
    return tuple(BrokerId(v) for v in values)
