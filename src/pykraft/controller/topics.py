"""CreateTopics (v7) and DeleteTopics (v1-v6) on the controller.

CreateTopics, per topic, in Kafka's order: duplicate names in the request (INVALID_REQUEST), the name itself
(INVALID_TOPIC_EXCEPTION), an existing topic (TOPIC_ALREADY_EXISTS), a name colliding with an existing one by
'.' versus '_' (INVALID_TOPIC_EXCEPTION), then the assignment: manual (every partition listed, numbered from 0,
the same replica count, registered brokers, at least one active replica) or automatic (replication factor and
partition count positive or -1 for the defaults, replicas placed round robin over the active brokers from a
random start). KIP-841: the initial ISR is the active replicas only and the leader the first of them.
Topic configs are checked against Kafka's definitions (config_defs.py: INVALID_CONFIG with Kafka's message) and
written as ConfigRecords right after the TopicRecord (before the partitions), as Kafka does. A created topic's
answer (v5+, validate_only too) carries its partition count, replication factor and every topic config with the
value and source it takes effect with (`effective`: config_schema.effective_topic_configs over the controller's
config levels), as Kafka's controller answers it.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kio.schema.types import TopicName
from kio.static.primitive import i8, i16, i32

from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.lazy_schema import schema_module
from pykraft.protocol.throttle import ZERO_THROTTLE
from pykraft.records.metadata.schema.config_record import ConfigRecordV0
from pykraft.records.metadata.schema.remove_topic_record import RemoveTopicRecordV0
from pykraft.records.metadata.schema.topic_record import TopicRecordV0

from .config_defs import check_topic_configs
from .eligibility import BrokerEligibility
from .partitions import PartitionRegistration, new_partition
from .result import ControllerResult

create_response = schema_module("kio.schema.create_topics.v7.response")
delete_response = schema_module("kio.schema.delete_topics.v6.response")

if TYPE_CHECKING:
    from .replication import ReplicationControl

MAX_NAME_LENGTH = 249
TOPIC_RESOURCE = 2  # ConfigRecord's resource type of a topic
_LEGAL = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
ZERO_UUID = uuid.UUID(int=0)


@dataclass(frozen=True, slots=True)
class TopicError:
    code: ErrorCode
    message: str | None = None


def invalid_topic_name_reason(name: str) -> str | None:
    """Kafka's Topic.validate wording, None for a legal name."""
    if not name:
        return "the empty string is not allowed"
    if name in (".", ".."):
        return f"'{name}' is not allowed"
    if len(name) > MAX_NAME_LENGTH:
        return f"the length of '{name}' is longer than the max allowed length {MAX_NAME_LENGTH}"
    if not set(name) <= _LEGAL:
        return f"'{name}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'"
    return None


# Kafka's QuorumController.MAX_RECORDS_PER_USER_OP: no user operation writes more records than one batch holds. It
# also bounds what a request can make the controller allocate (a CreatePartitions count of 2**31-1 took 24 GiB).
MAX_RECORDS_PER_USER_OP = 10_000


def too_large(records_so_far: int, new_records: int) -> TopicError | None:
    """Kafka's answer to an operation past MAX_RECORDS_PER_USER_OP (its BoundedList refusal)."""
    if records_so_far + new_records > MAX_RECORDS_PER_USER_OP:
        return TopicError(ErrorCode.POLICY_VIOLATION, "Unable to perform excessively large batch operation.")
    return None


def place_replicas(active: Sequence[int], num_partitions: int, replication_factor: int,
                   rng: random.Random) -> list[tuple[int, ...]] | TopicError:
    """Rack-unaware round robin (Kafka's classic assignment): partition p's first replica is broker
    (start + p) mod n, the followers follow at a shift that grows every n partitions, so leaders and followers
    both spread evenly. `active` must be sorted; start and shift come from `rng`."""
    refusal = too_large(0, num_partitions)
    if refusal is not None:
        return refusal
    n = len(active)
    if n == 0:
        return _replication_error(replication_factor, "All brokers are currently fenced.")
    if replication_factor > n:
        # Only active brokers are counted: fenced or shutting-down ones cannot take an initial replica here.
        return _replication_error(replication_factor, f"The target replication factor of {replication_factor} "
                                                      f"cannot be reached because only {n} broker(s) are registered.")
    start = rng.randrange(n)
    shift = rng.randrange(n)
    placement = []
    for p in range(num_partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        replicas = [active[first]]
        for j in range(replication_factor - 1):
            replicas.append(active[(first + 1 + (shift + j) % (n - 1)) % n])
        placement.append(tuple(replicas))
    return placement


def _replication_error(replication_factor: int, reason: str) -> TopicError:
    return TopicError(ErrorCode.INVALID_REPLICATION_FACTOR,
                      f"Unable to replicate the partition {replication_factor} time(s): {reason}")


# A topic's own configs -> every topic config's (name, value, source, sensitive), in name order.
EffectiveConfigs = Callable[[Mapping[str, str]], list[tuple[str, str | None, int, bool]]]


def create_topics(control: ReplicationControl, request: Any, brokers: BrokerEligibility,
                  effective: EffectiveConfigs | None = None) -> ControllerResult:
    names = [t.name for t in request.topics]
    duplicates = {n for n in names if names.count(n) > 1}
    records: list[object] = []
    results: list[Any] = []  # create_response.CreatableTopicResult
    accepted_keys: dict[str, str] = {}  # collision keys of topics created earlier in this request
    for topic in request.topics:
        if topic.name in duplicates:
            results.append(_create_error(topic.name, TopicError(ErrorCode.INVALID_REQUEST, "Duplicate topic name.")))
            continue
        outcome = _check_and_assign(control, topic, brokers, accepted_keys)
        if not isinstance(outcome, TopicError):
            outcome = too_large(len(records), len(outcome)) or outcome
        if isinstance(outcome, TopicError):
            results.append(_create_error(topic.name, outcome))
            continue
        configs = {str(c.name): c.value for c in (topic.configs or ())}
        reason = check_topic_configs(configs)
        if reason is not None:
            results.append(_create_error(topic.name, TopicError(ErrorCode.INVALID_CONFIG, reason)))
            continue
        topic_id = _new_topic_id(control)
        accepted_keys[topic.name.replace(".", "_")] = topic.name
        if not request.validate_only:
            records.append(TopicRecordV0(name=TopicName(topic.name), topic_id=topic_id))
            records.extend(ConfigRecordV0(resource_type=i8(TOPIC_RESOURCE), resource_name=topic.name, name=key,
                                          value=value) for key, value in configs.items() if value is not None)
            records.extend(p.to_record(topic_id, i) for i, p in enumerate(outcome))
        own = {key: value for key, value in configs.items() if value is not None}
        described = () if effective is None else tuple(create_response.CreatableTopicConfigs(
            name=name, value=value, read_only=False, config_source=i8(source), is_sensitive=sensitive)
            for name, value, source, sensitive in effective(own))
        results.append(create_response.CreatableTopicResult(
            name=TopicName(topic.name), topic_id=topic_id, error_code=ErrorCode.NONE, error_message=None,
            num_partitions=i32(len(outcome)), replication_factor=i16(len(outcome[0].replicas)), configs=described))
    response = create_response.CreateTopicsResponse(throttle_time=ZERO_THROTTLE, topics=tuple(results))
    return ControllerResult(records=tuple(records), response=response)


def _check_and_assign(control: ReplicationControl, topic: Any, brokers: BrokerEligibility,
                      accepted_keys: dict[str, str]) -> list[PartitionRegistration] | TopicError:
    reason = invalid_topic_name_reason(topic.name)
    if reason is not None:
        return TopicError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Topic name is invalid: {reason}")
    if topic.name in control.topics_by_name:
        return TopicError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{topic.name}' already exists.")
    other = control.colliding_topic(topic.name) or accepted_keys.get(topic.name.replace(".", "_"))
    if other is not None:
        return TopicError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"Topic '{topic.name}' collides with existing topic: {other}")
    if topic.assignments:
        return _manual_assignment(topic, brokers)
    return _automatic_assignment(control, topic, brokers)


def _automatic_assignment(control: ReplicationControl, topic: Any,
                          brokers: BrokerEligibility) -> list[PartitionRegistration] | TopicError:
    rf, count = int(topic.replication_factor), int(topic.num_partitions)
    if rf < -1 or rf == 0:
        return TopicError(ErrorCode.INVALID_REPLICATION_FACTOR,
                          "Replication factor must be larger than 0, or -1 to use the default value.")
    if count < -1 or count == 0:
        return TopicError(ErrorCode.INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value.")
    rf = control.default_replication_factor if rf == -1 else rf
    count = control.default_num_partitions if count == -1 else count
    placement = place_replicas(brokers.active_broker_ids(), count, rf, control.rng)
    if isinstance(placement, TopicError):
        return placement
    return [new_partition(replicas, replicas, replicas[0]) for replicas in placement]


def _manual_assignment(topic: Any, brokers: BrokerEligibility) -> list[PartitionRegistration] | TopicError:
    if int(topic.replication_factor) != -1:
        return TopicError(ErrorCode.INVALID_REQUEST, "A manual partition assignment was specified, but "
                                                     "replication factor was not set to -1.")
    if int(topic.num_partitions) != -1:
        return TopicError(ErrorCode.INVALID_REQUEST, "A manual partition assignment was specified, but "
                                                     "numPartitions was not set to -1.")
    by_index: dict[int, tuple[int, ...]] = {}
    for assignment in topic.assignments:
        index, replicas = int(assignment.partition_index), tuple(int(b) for b in assignment.broker_ids)
        if index in by_index:
            return bad_assignment(f"Found multiple manual partition assignments for partition {index}")
        error = check_manual_replicas(replicas, by_index, brokers)
        if error is not None:
            return error
        by_index[index] = replicas
    if sorted(by_index) != list(range(len(by_index))):
        return bad_assignment("partitions should be a consecutive 0-based integer sequence")
    return manual_partitions([by_index[index] for index in range(len(by_index))], brokers)


def manual_partitions(assignments: Sequence[tuple[int, ...]],
                      brokers: BrokerEligibility) -> list[PartitionRegistration] | TopicError:
    """New partitions with these (checked) replicas: KIP-841's ISR is the active replicas, the leader the first."""
    partitions = []
    for index, replicas in enumerate(assignments):
        isr = tuple(b for b in replicas if brokers.is_active(b))
        if not isr:
            return bad_assignment(f"All brokers specified in the manual partition assignment for partition "
                                  f"{index} are fenced or in controlled shutdown.")
        partitions.append(new_partition(replicas, isr, isr[0]))
    return partitions


def check_manual_replicas(replicas: tuple[int, ...], earlier: dict[int, tuple[int, ...]],
                          brokers: BrokerEligibility) -> TopicError | None:
    """Kafka's validateManualPartitionAssignment (CreateTopics, CreatePartitions, AlterPartitionReassignments):
    the ids are checked in ascending order, each for registration first and then for a repeat, so the message
    names the same broker Kafka's does."""
    if not replicas:
        return bad_assignment("The manual partition assignment includes an empty replica list.")
    previous: int | None = None
    for broker in sorted(replicas):
        if not brokers.is_registered(broker):
            return bad_assignment(f"The manual partition assignment includes broker {broker}, but no such "
                                   f"broker is registered.")
        if broker == previous:
            return bad_assignment(f"The manual partition assignment includes the broker {broker} more than once.")
        previous = broker
    if earlier:
        expected = len(next(iter(earlier.values())))
        if len(replicas) != expected:
            return bad_assignment(f"The manual partition assignment includes a partition with {len(replicas)} "
                                   f"replica(s), but this is not consistent with previous partitions, which have "
                                   f"{expected} replica(s).")
    return None


def bad_assignment(message: str) -> TopicError:
    return TopicError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, message)


def _new_topic_id(control: ReplicationControl) -> uuid.UUID:
    # From the injected generator (the controller is deterministic); never the zero id or one already in use.
    while True:
        topic_id = uuid.UUID(int=control.rng.getrandbits(128), version=4)
        if topic_id != ZERO_UUID and topic_id not in control.topics:
            return topic_id


def _create_error(name: str, error: TopicError) -> Any:  # create_response.CreatableTopicResult
    return create_response.CreatableTopicResult(
        name=TopicName(name), topic_id=ZERO_UUID, error_code=error.code, error_message=error.message, configs=())


def delete_topics(control: ReplicationControl, request: Any) -> ControllerResult:
    """DeleteTopics v1-v6, answered at v6 (the host lowers it to the request's version). From v6 each entry names a
    topic by name or by id (not both, not neither); v0-v5 list names only (`topic_names`)."""
    entries = requested_topics(request)
    names = [name for name, topic_id in entries if name is not None and _is_zero(topic_id)]
    ids = [topic_id for name, topic_id in entries if name is None and not _is_zero(topic_id)]
    records: list[object] = []
    results = []
    for name, topic_id in entries:
        if name is not None and not _is_zero(topic_id):
            error = TopicError(ErrorCode.INVALID_REQUEST, "You may not specify both topic name and topic id.")
        elif name is None and _is_zero(topic_id):
            error = TopicError(ErrorCode.INVALID_REQUEST, "Neither topic name nor id were specified.")
        elif name is not None and names.count(name) > 1:
            error = TopicError(ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
        elif name is None and ids.count(topic_id) > 1:
            error = TopicError(ErrorCode.INVALID_REQUEST, "Duplicate topic id.")
        elif name is not None and name not in control.topics_by_name:
            error = TopicError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition.")
        elif name is None and topic_id not in control.topics:
            error = TopicError(ErrorCode.UNKNOWN_TOPIC_ID, "This server does not host this topic ID.")
        else:
            topic_id = control.topics_by_name[name] if name is not None else topic_id
            assert topic_id is not None  # a known name's id, or an id found in the topics
            name = control.topics[topic_id].name
            records.append(RemoveTopicRecordV0(topic_id=topic_id))
            error = TopicError(ErrorCode.NONE)
        results.append(delete_response.DeletableTopicResult(
            name=None if name is None else TopicName(name), topic_id=topic_id if topic_id is not None else ZERO_UUID,
            error_code=error.code, error_message=error.message))
    response = delete_response.DeleteTopicsResponse(throttle_time=ZERO_THROTTLE, responses=tuple(results))
    return ControllerResult(records=tuple(records), response=response)


def requested_topics(request: Any) -> list[tuple[str | None, uuid.UUID | None]]:
    """(name, topic id) of every topic a DeleteTopics request names, whatever its version."""
    if int(request.__version__) >= 6:
        return [(t.name, t.topic_id) for t in request.topics]
    return [(name, None) for name in request.topic_names]


def _is_zero(topic_id: uuid.UUID | None) -> bool:
    return topic_id is None or topic_id == ZERO_UUID
