"""`dump-log --offsets-decoder` for the KIP-848 consumer group records (types 3-8 and 16): the key and value as
Kafka's generated JSON converters write them (field names in camelCase, topic ids as Kafka's base64 uuids, a tagged
field only when it is set), e.g. `{"type":"3","data":{"groupId":"g"}}` and `{"version":"0","data":{"epoch":2}}`."""

from __future__ import annotations

import base64
from typing import Any

from pykraft.records import consumer_group_records as rec
from pykraft.records.metadata.json_view import to_jackson_json
from pykraft.records.uuids import uuid_to_kafka_str

_SUB_FIELD = {rec.REGULAR_EXPRESSION: "regularExpression"}


def key_json(key: rec.ConsumerGroupKey) -> str:
    data: dict[str, Any] = {"groupId": key.group}
    if key.sub is not None:
        data[_SUB_FIELD.get(key.type, "memberId")] = key.sub
    return to_jackson_json({"type": str(key.type), "data": data})


def _partitions(partitions: rec.Partitions) -> list[dict[str, Any]]:
    return [{"topicId": uuid_to_kafka_str(t), "partitions": sorted(ns)}
            for t, ns in sorted(partitions.items(), key=lambda kv: str(kv[0]))]


def value_json(kind: int, raw: bytes) -> str:
    value = rec.decode_value(kind, raw)
    data: dict[str, Any]
    if isinstance(value, rec.GroupEpochValue):
        data = {"epoch": value.epoch}
    elif isinstance(value, rec.AssignmentEpochValue):
        data = {"assignmentEpoch": value.epoch}
    elif isinstance(value, rec.PartitionMetadataValue):
        data = {"topics": [{"topicId": uuid_to_kafka_str(t.topic_id), "topicName": t.name,
                            "numPartitions": t.partitions, "partitionMetadata": []} for t in value.topics]}
    elif isinstance(value, rec.MemberMetadataValue):
        data = {"instanceId": value.instance_id, "rackId": value.rack_id, "clientId": value.client_id,
                "clientHost": value.client_host, "subscribedTopicNames": list(value.subscribed_topic_names),
                "subscribedTopicRegex": value.subscribed_topic_regex, "rebalanceTimeoutMs": value.rebalance_timeout_ms,
                "serverAssignor": value.server_assignor}
        if value.classic is not None:
            data["classicMemberMetadata"] = {"sessionTimeoutMs": value.classic.session_timeout_ms, "supportedProtocols": [
                {"name": n, "metadata": base64.b64encode(m).decode("ascii")} for n, m in value.classic.protocols]}
    elif isinstance(value, rec.TargetMemberValue):
        data = {"topicPartitions": _partitions(value.partitions)}
    elif isinstance(value, rec.CurrentAssignmentValue):
        data = {"memberEpoch": value.member_epoch, "previousMemberEpoch": value.previous_member_epoch,
                "state": value.state, "assignedPartitions": _partitions(value.assigned),
                "partitionsPendingRevocation": _partitions(value.pending_revocation)}
    else:
        assert isinstance(value, rec.RegexValue)
        data = {"topics": list(value.topics), "version": value.version, "timestamp": value.timestamp_ms}
    return to_jackson_json({"version": "0", "data": data})
