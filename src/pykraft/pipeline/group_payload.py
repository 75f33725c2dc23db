"""The payload columns of a `__consumer_offsets` record (record_type, record_version, payload JSON), decoded with
the group coordinator's own codecs (records/group_records.py), so that the consumer-group audit and a user's SQL
read committed offsets and generations as columns, not bytes.

- an OffsetCommitKey (key versions 0-1): type `OFFSET_COMMIT`, payload {group, topic, partition, offset,
  leaderEpoch, metadata, commitTimestamp}; a null value (the offsets deleted) gives {group, topic, partition,
  tombstone: true};
- a GroupMetadataKey (key version 2): type `GROUP_METADATA`, payload {group, protocolType, generation, protocol,
  leader, members: [member ids]}; a null value: {group, tombstone: true};
- a KIP-848 consumer group record (key types 3-8 and 16: ConsumerGroupMetadata, ...): coordinator_payload.py;
- anything else: no type, and the problem as the fourth element (the caller decides where it goes).
The version column holds the value's version (the key's for a tombstone).
"""

from __future__ import annotations

import json
import struct
from typing import Any

from pykraft.records.consumer_group_records import CONSUMER_GROUP_KEY_TYPES
from pykraft.records.group_records import (
    GroupKey,
    GroupRecordError,
    OffsetKey,
    decode_group_value,
    decode_key,
    decode_offset_value,
)

from .coordinator_payload import consumer_group_payload

GROUP_TOPIC = "__consumer_offsets"
OFFSET_COMMIT = "OFFSET_COMMIT"
GROUP_METADATA = "GROUP_METADATA"

Payload = tuple[str | None, int | None, str | None, str | None]


def _version(data: Any) -> int | None:
    return struct.unpack_from(">h", data)[0] if data is not None and len(data) >= 2 else None


def group_payload(key: Any, value: Any) -> Payload:
    """(record type, version, payload JSON, problem) of one `__consumer_offsets` record."""
    if key is None:
        return None, None, None, "__consumer_offsets record without a key"
    if _version(key) in CONSUMER_GROUP_KEY_TYPES:
        return consumer_group_payload(key, value)
    try:
        decoded_key = decode_key(key)
        if isinstance(decoded_key, OffsetKey):
            return _offset_commit(decoded_key, value, _version(value if value is not None else key))
        return _group_metadata(decoded_key, value, _version(value if value is not None else key))
    except (GroupRecordError, struct.error) as exc:
        return None, None, None, str(exc)


def _offset_commit(key: OffsetKey, value: Any, version: int | None) -> Payload:
    fields: dict[str, Any] = {"group": key.group, "topic": key.topic, "partition": key.partition}
    if value is None:
        fields["tombstone"] = True
    else:
        commit = decode_offset_value(value)
        fields.update(offset=commit.offset, leaderEpoch=commit.leader_epoch, metadata=commit.metadata,
                      commitTimestamp=commit.commit_timestamp_ms)
    return OFFSET_COMMIT, version, json.dumps(fields), None


def _group_metadata(key: GroupKey, value: Any, version: int | None) -> Payload:
    fields: dict[str, Any] = {"group": key.group}
    if value is None:
        fields["tombstone"] = True
    else:
        group = decode_group_value(value)
        fields.update(protocolType=group.protocol_type, generation=group.generation, protocol=group.protocol,
                      leader=group.leader, members=[m.member_id for m in group.members])
    return GROUP_METADATA, version, json.dumps(fields), None
