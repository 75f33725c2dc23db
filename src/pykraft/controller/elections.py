"""Leader elections: admin ElectLeaders, the partition side of fencing / controlled shutdown / unregistration /
unfencing, and periodic preferred-leader balancing (reference §8.2, §8.4).

Fencing-type changes are built against a view in which the broker already counts as ineligible, whatever the
view passed in says (the registration change that fences it is written AFTER these records, so the image still
shows it active). Unfencing is the mirror image: the broker counts as eligible although the image, until the
registration change written BEFORE these records is replayed, may still show it fenced.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kio.schema.types import TopicName
from kio.static.primitive import i32

from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.lazy_schema import schema_module
from pykraft.protocol.throttle import ZERO_THROTTLE

from .eligibility import BrokerEligibility, ExcludingEligibility
from .partition_change import Election, PartitionChangeBuilder
from .result import ControllerResult

elect_response = schema_module("kio.schema.elect_leaders.v2.response")

if TYPE_CHECKING:
    from .replication import ReplicationControl, TopicPartition


class ElectionType(enum.IntEnum):
    """ElectLeaders' ElectionType field."""

    PREFERRED = 0
    UNCLEAN = 1


@dataclass(frozen=True, slots=True)
class IncludingEligibility:
    """`base` with one broker treated as active (it is being unfenced in the same batch of records)."""

    base: BrokerEligibility
    included: int

    def is_registered(self, broker_id: int) -> bool:
        return self.base.is_registered(broker_id)

    def broker_epoch(self, broker_id: int) -> int | None:
        return self.base.broker_epoch(broker_id)

    def is_fenced(self, broker_id: int) -> bool:
        return broker_id != self.included and self.base.is_fenced(broker_id)

    def in_controlled_shutdown(self, broker_id: int) -> bool:
        return self.base.in_controlled_shutdown(broker_id)

    def is_active(self, broker_id: int) -> bool:
        if broker_id == self.included:
            return self.base.is_registered(broker_id) and not self.base.in_controlled_shutdown(broker_id)
        return self.base.is_active(broker_id)

    def active_broker_ids(self) -> list[int]:
        return [b for b in sorted({*self.base.active_broker_ids(), self.included}) if self.is_active(b)]

    def rack_of(self, broker_id: int) -> str | None:
        return self.base.rack_of(broker_id)


def _builder(control: ReplicationControl, key: TopicPartition, brokers: BrokerEligibility) -> PartitionChangeBuilder:
    topic_id, partition_id = key
    partition = control.partition(topic_id, partition_id)
    assert partition is not None, key
    election = Election.UNCLEAN if control.unclean_election_enabled(control.topics[topic_id].name) else Election.ONLINE
    return PartitionChangeBuilder(partition, topic_id, partition_id, brokers.is_active, election=election)


def records_removing_broker(control: ReplicationControl, broker_id: int, brokers: BrokerEligibility) -> list[object]:
    """Fence, controlled shutdown, unregistration: take the broker out of every ISR and move its leaderships.
    The last ISR member stays (see partition_change), leaderless if it was the broker."""
    view = ExcludingEligibility(brokers, broker_id)
    records: list[object] = []
    for key in control.partitions_with_broker_in_isr(broker_id):
        builder = _builder(control, key, view)
        record = builder.with_isr(tuple(b for b in builder.partition.isr if b != broker_id)).build()
        if record is not None:
            records.append(record)
    return records


def records_for_unfence(control: ReplicationControl, broker_id: int, brokers: BrokerEligibility) -> list[object]:
    """Elect leaders for leaderless partitions now that `broker_id` may lead again."""
    view = IncludingEligibility(brokers, broker_id)
    records: list[object] = []
    for key in control.leaderless_partitions():
        record = _builder(control, key, view).build()
        if record is not None:
            records.append(record)
    return records


def records_for_unclean_recovery(control: ReplicationControl, brokers: BrokerEligibility) -> list[object]:
    """The periodic unclean check (every 5 minutes in Kafka): leaderless partitions of topics that allow unclean
    elections get one, possibly outside the ISR."""
    records: list[object] = []
    for key in control.leaderless_partitions():
        if control.unclean_election_enabled(control.topics[key[0]].name):
            record = _builder(control, key, brokers).build()
            if record is not None:
                records.append(record)
    return records


def records_for_preferred_balance(control: ReplicationControl, brokers: BrokerEligibility,
                                  max_partitions: int) -> list[object]:
    """Move leadership back to the preferred (first) replica where it is in the ISR and active, at most
    `max_partitions` partitions per call so one run never writes an unbounded batch."""
    records: list[object] = []
    for key in control.imbalanced_partitions():
        if len(records) >= max_partitions:
            break
        partition = control.partition(*key)
        assert partition is not None
        preferred = partition.preferred_replica
        if preferred not in partition.isr or not brokers.is_active(preferred):
            continue
        record = _builder(control, key, brokers).with_election(Election.PREFERRED).build()
        if record is not None:
            records.append(record)
    return records


def elect_leaders(control: ReplicationControl, request: Any, brokers: BrokerEligibility) -> ControllerResult:
    """ElectLeaders v0-v2, answered at v2 (the host lowers it to the request's version). v0 has no ElectionType:
    it asks for preferred elections (Kafka's schema). Naming no partitions (null) means all, and then only
    partitions where an election was needed are reported, as Kafka does."""
    try:
        election_type = requested_election_type(request)
    except ValueError:
        return ControllerResult(response=_elect_response(ErrorCode.INVALID_REQUEST, []))
    records: list[object] = []
    results: list[tuple[str, list[Any]]] = []  # elect_response.PartitionResult
    if request.topic_partitions is None:
        for topic in control.topics.values():
            per_partition = []
            for partition_id in sorted(topic.partitions):
                error, message = _elect_one(control, topic.name, partition_id, election_type, brokers, records)
                if error is not ErrorCode.ELECTION_NOT_NEEDED:
                    per_partition.append(_partition_result(partition_id, error, message))
            if per_partition:
                results.append((topic.name, per_partition))
    else:
        for entry in request.topic_partitions:
            per_partition = [_partition_result(p, *_elect_one(control, entry.topic, int(p), election_type,
                                                                brokers, records))
                             for p in entry.partitions]
            results.append((entry.topic, per_partition))
    return ControllerResult(records=tuple(records), response=_elect_response(ErrorCode.NONE, results))


def requested_election_type(request: Any) -> ElectionType:
    """The request's ElectionType; PREFERRED for v0, which has no such field. ValueError for an unknown one."""
    if int(request.__version__) == 0:
        return ElectionType.PREFERRED
    return ElectionType(request.election_type)


def _elect_one(control: ReplicationControl, topic_name: str, partition_id: int, election_type: ElectionType,
               brokers: BrokerEligibility, records: list[object]) -> tuple[ErrorCode, str | None]:
    topic_id = control.topics_by_name.get(topic_name)
    if topic_id is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such topic as {topic_name}"
    partition = control.partition(topic_id, partition_id)
    if partition is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such partition as {topic_name}-{partition_id}"
    if election_type is ElectionType.PREFERRED and partition.has_preferred_leader:
        return ErrorCode.ELECTION_NOT_NEEDED, None
    if election_type is ElectionType.UNCLEAN and partition.has_leader:
        return ErrorCode.ELECTION_NOT_NEEDED, None
    election = Election.PREFERRED if election_type is ElectionType.PREFERRED else Election.UNCLEAN
    builder = PartitionChangeBuilder(partition, topic_id, partition_id, brokers.is_active, election=election)
    record = builder.build()
    if record is None:
        if election_type is ElectionType.PREFERRED:
            return ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, None
        return ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE, None
    records.append(record)
    return ErrorCode.NONE, None


def _partition_result(partition_id: int, error: ErrorCode, message: str | None) -> Any:  # its PartitionResult
    return elect_response.PartitionResult(partition_id=i32(partition_id), error_code=error, error_message=message)


def _elect_response(error: ErrorCode, results: list[tuple[str, list[Any]]]) -> Any:  # ElectLeadersResponse
    return elect_response.ElectLeadersResponse(
        throttle_time=ZERO_THROTTLE,
        error_code=error,
        replica_election_results=tuple(
            elect_response.ReplicaElectionResult(topic=TopicName(name), partition_result=tuple(parts))
            for name, parts in results),
    )
