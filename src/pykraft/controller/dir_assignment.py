"""AssignReplicasToDirs v0 (KIP-858): a broker tells the controller which of its log directories holds each of
its replicas (after placing a new replica, or after AlterReplicaLogDirs moved one), and the controller records it
in the partition's `directories` (a PartitionChangeRecord that changes only that broker's slot).

Kafka's `ReplicationControlManager.handleAssignReplicasToDirs`, in its order:
1. the metadata.version must support directory assignment (3.7-IV2)   else UNSUPPORTED_VERSION (top level);
2. the broker epoch is the registered one                            else STALE_BROKER_EPOCH (top level);
3. per topic: known id else UNKNOWN_TOPIC_ID; per partition: known else UNKNOWN_TOPIC_OR_PARTITION, the broker
   among its replicas else NOT_LEADER_OR_FOLLOWER; else the change, none when the slot already names that
   directory. Kafka also moves the leadership off a replica assigned to a directory the broker does not list as
   online; pykraft brokers only report directories they registered, so that path is not modelled.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kio.static.primitive import i32

from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.lazy_schema import schema_module
from pykraft.protocol.throttle import ZERO_THROTTLE
from pykraft.records.metadata.schema.partition_change_record import PartitionChangeRecordV2

from .result import ControllerResult

if TYPE_CHECKING:
    from .cluster import ClusterControl
    from .replication import ReplicationControl

response_v0 = schema_module("kio.schema.assign_replicas_to_dirs.v0.response")
IBP_3_7_IV2 = 17  # MetadataVersion.isDirectoryAssignmentSupported


def assign_replicas_to_dirs(control: ReplicationControl, cluster: ClusterControl, request: Any,
                            metadata_version: int | None) -> ControllerResult:
    if metadata_version is None or metadata_version < IBP_3_7_IV2:
        return ControllerResult(response=_response(ErrorCode.UNSUPPORTED_VERSION, ()))
    broker = int(request.broker_id)
    if cluster.broker_epoch(broker) != int(request.broker_epoch):
        return ControllerResult(response=_response(ErrorCode.STALE_BROKER_EPOCH, ()))
    records: list[Any] = []
    directories = []
    for directory in request.directories:
        topics = []
        for topic_data in directory.topics:
            topic = control.topics.get(topic_data.topic_id) if topic_data.topic_id is not None else None
            results = []
            for p in topic_data.partitions:
                index = int(p.partition_index)
                error = ErrorCode.UNKNOWN_TOPIC_ID if topic is None else _assign(
                    control, topic, index, broker, directory.id_, records)
                results.append(response_v0.PartitionData(partition_index=i32(index), error_code=error))
            topics.append(response_v0.TopicData(topic_id=topic_data.topic_id, partitions=tuple(results)))
        directories.append(response_v0.DirectoryData(id_=directory.id_, topics=tuple(topics)))
    return ControllerResult(records=tuple(records), response=_response(ErrorCode.NONE, directories))


def _assign(control: ReplicationControl, topic: Any, index: int, broker: int, directory: Any,
            records: list[Any]) -> ErrorCode:
    partition = topic.partitions.get(index)
    if partition is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if broker not in partition.replicas or directory is None:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    slot = partition.replicas.index(broker)
    if partition.directories[slot] == directory:
        return ErrorCode.NONE
    updated = list(partition.directories)
    updated[slot] = directory
    records.append(PartitionChangeRecordV2(partition_id=i32(index), topic_id=topic.topic_id,
                                           directories=tuple(updated)))
    return ErrorCode.NONE


def _response(error: ErrorCode, directories: Any) -> Any:
    return response_v0.AssignReplicasToDirsResponse(throttle_time=ZERO_THROTTLE, error_code=error,
                                                    directories=tuple(directories))
