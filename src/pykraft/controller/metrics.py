"""Controller metric values (reference §7.2, `kafka.controller:type=KafkaController`).

Pure: a snapshot of numbers read from the controller. The runtime publishes them (Prometheus gauges, JMX-style
names from `KAFKA_NAMES`) and owns anything that needs a clock, such as LastAppliedRecordLagMs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from types import MappingProxyType


@dataclass(frozen=True, slots=True)
class ControllerMetrics:
    active_controller_count: int  # 1 on the active controller, 0 elsewhere
    fenced_broker_count: int
    active_broker_count: int  # registered and unfenced (Kafka counts brokers in controlled shutdown here too)
    global_topic_count: int
    global_partition_count: int
    offline_partitions_count: int  # partitions without a leader
    preferred_replica_imbalance_count: int
    metadata_error_count: int  # committed records that could not be applied
    last_applied_record_offset: int
    timed_out_broker_heartbeat_count: int  # sessions found expired (each led to a fencing)
    new_active_controllers_count: int  # activations of this controller

    def by_kafka_name(self) -> dict[str, int]:
        values = asdict(self)
        return {KAFKA_NAMES[field]: value for field, value in values.items()}


# The KafkaController metric name of each field.
KAFKA_NAMES: Mapping[str, str] = MappingProxyType({
    "active_controller_count": "ActiveControllerCount",
    "fenced_broker_count": "FencedBrokerCount",
    "active_broker_count": "ActiveBrokerCount",
    "global_topic_count": "GlobalTopicCount",
    "global_partition_count": "GlobalPartitionCount",
    "offline_partitions_count": "OfflinePartitionsCount",
    "preferred_replica_imbalance_count": "PreferredReplicaImbalanceCount",
    "metadata_error_count": "MetadataErrorCount",
    "last_applied_record_offset": "LastAppliedRecordOffset",
    "timed_out_broker_heartbeat_count": "TimedOutBrokerHeartbeatCount",
    "new_active_controllers_count": "NewActiveControllersCount",
})


# What each KafkaController gauge says (the README's metric table).
KAFKA_HELP: Mapping[str, str] = MappingProxyType({
    "ActiveControllerCount": "1 on the active controller, 0 elsewhere",
    "FencedBrokerCount": "registered brokers that are fenced",
    "ActiveBrokerCount": "registered brokers that are not fenced",
    "GlobalTopicCount": "topics",
    "GlobalPartitionCount": "partitions",
    "OfflinePartitionsCount": "partitions without a leader",
    "PreferredReplicaImbalanceCount": "partitions not led by their preferred replica",
    "MetadataErrorCount": "committed metadata records that could not be applied",
    "LastAppliedRecordOffset": "offset of the last metadata record applied (the active controller's own writes "
                               "included)",
    "TimedOutBrokerHeartbeatCount": "broker sessions found expired (each fenced its broker)",
    "NewActiveControllersCount": "times this controller became the active one",
})
