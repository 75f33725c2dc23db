"""`dump-log --offsets-decoder`: a `__consumer_offsets` record's key and value as Kafka's OffsetsMessageParser prints
them: `{"type":"1","data":{"group":"g","topic":"t","partition":0}}` for the key (its version as "type") and
`{"version":"3","data":{"offset":5,"leaderEpoch":0,"metadata":"","commitTimestamp":...}}` for an offset commit, the
group metadata with each "consumer" member's subscription and assignment decoded (Kafka's ConsumerProtocol JSON),
and `<DELETE>` for a tombstone. Fields appear in the schema's order, only those of the record's version; JSON is
written as Jackson writes it (compact, non-ASCII as is). A record it cannot read gives Kafka's skip message.
"""

from __future__ import annotations

import base64
import struct
from typing import Any

from pykraft.admin.consumer_protocol import decode_message
from pykraft.cli import dump_consumer_groups as cg_json
from pykraft.records import consumer_group_records as cg_records
from pykraft.records.group_records import (
    GroupKey,
    GroupRecordError,
    OffsetKey,
    decode_group_value,
    decode_key,
    decode_offset_value,
)
from pykraft.records.metadata.json_view import to_jackson_json

TOMBSTONE = "<DELETE>"


def _version(data: bytes) -> int:
    return struct.unpack_from(">h", data)[0] if len(data) >= 2 else -1


def _protocol_json(kind: str, data: bytes) -> Any:
    """A member's subscription / assignment as Kafka's JSON converter writes it, or its bytes (base64) when they
    are not a consumer protocol message (Kafka keeps the original bytes then)."""
    try:
        message = decode_message(kind, data)
    except ValueError:
        return base64.b64encode(data).decode("ascii")
    version = min(_version(data), 3)
    pairs = [{"topic": str(t.topic), "partitions": [int(p) for p in t.partitions]}
             for t in getattr(message, "assigned_partitions", ()) or getattr(message, "owned_partitions", ())]
    user = None if message.user_data is None else base64.b64encode(bytes(message.user_data)).decode("ascii")
    if kind == "assignment":
        return {"assignedPartitions": pairs, "userData": user}
    found: dict[str, Any] = {"topics": [str(t) for t in message.topics], "userData": user}
    if version >= 1:
        found["ownedPartitions"] = pairs
    if version >= 2:
        found["generationId"] = int(message.generation_id)
    if version >= 3:
        found["rackId"] = message.rack_id
    return found


def key_json(key: bytes) -> str:
    decoded = decode_key(key)
    data: dict[str, Any] = {"group": decoded.group}
    if isinstance(decoded, OffsetKey):
        data.update(topic=decoded.topic, partition=decoded.partition)
    return to_jackson_json({"type": str(_version(key)), "data": data})


def value_json(key: OffsetKey | GroupKey, value: bytes) -> str:
    version = _version(value)
    if isinstance(key, OffsetKey):
        offset = decode_offset_value(value)
        data: dict[str, Any] = {"offset": offset.offset}
        if version >= 3:
            data["leaderEpoch"] = offset.leader_epoch
        data.update(metadata=offset.metadata, commitTimestamp=offset.commit_timestamp_ms)
        if version == 1:
            data["expireTimestamp"] = struct.unpack_from(">q", value, len(value) - 8)[0]
        return to_jackson_json({"version": str(version), "data": data})
    group = decode_group_value(value)
    data = {"protocolType": group.protocol_type, "generation": group.generation, "protocol": group.protocol,
            "leader": group.leader}
    if version >= 2:
        data["currentStateTimestamp"] = group.state_timestamp_ms
    members = []
    for m in group.members:
        member: dict[str, Any] = {"memberId": m.member_id}
        if version >= 3:
            member["groupInstanceId"] = m.instance_id
        member.update(clientId=m.client_id, clientHost=m.client_host)
        if version >= 1:
            member["rebalanceTimeout"] = m.rebalance_timeout_ms
        member["sessionTimeout"] = m.session_timeout_ms
        consumer = group.protocol_type == "consumer"
        member["subscription"] = (_protocol_json("subscription", m.subscription) if consumer
                                  else base64.b64encode(m.subscription).decode("ascii"))
        member["assignment"] = (_protocol_json("assignment", m.assignment) if consumer
                                else base64.b64encode(m.assignment).decode("ascii"))
        members.append(member)
    data["members"] = members
    return to_jackson_json({"version": str(version), "data": data})


def parse(offset: int, key: bytes | None, value: bytes | None) -> tuple[str | None, str | None]:
    """(key text, payload text) of one record, as OffsetsMessageParser.parse returns them."""
    if key is None:
        raise GroupRecordError(f"Failed to decode message at offset {offset} using offset topic decoder (message had "
                               f"a missing key)")
    try:
        if _version(key) in cg_records.CONSUMER_GROUP_KEY_TYPES:  # a KIP-848 consumer group record
            cg_key = cg_records.decode_key(key)
            return cg_json.key_json(cg_key), (TOMBSTONE if value is None else cg_json.value_json(cg_key.type, value))
        decoded = decode_key(key)
        return key_json(key), (TOMBSTONE if value is None else value_json(decoded, value))
    except (GroupRecordError, struct.error, ValueError) as exc:
        if _version(key) > 2:
            return f"Unknown record type {_version(key)} at offset {offset}, skipping.", None
        return f"Error at offset {offset}, skipping. {exc}", None
