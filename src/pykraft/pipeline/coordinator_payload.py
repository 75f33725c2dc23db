"""The payload columns of the coordinators' newer records: KIP-848 `ConsumerGroup*` records in `__consumer_offsets`
and `__transaction_state`'s TransactionLogKey/Value, decoded with the coordinators' own codecs
(records/consumer_group_records.py, records/txn_log_records.py) so that a user's SQL and the audits read group
epochs, assignments and transaction states as columns, not bytes.

Record type names are Kafka's (CoordinatorRecordType, TransactionLog): `CONSUMER_GROUP_METADATA` (key type 3) ...
`CONSUMER_GROUP_REGULAR_EXPRESSION` (16), `TRANSACTION_LOG`. The payload holds the key's fields (`group` and,
for member records, `member`, for a regex record `regex`; `transactionalId`) then the value's in camelCase; uuids
as Kafka's base64 text, partition sets as sorted lists; a null value adds `tombstone: true`. The version column
holds the value's version (the key's for a tombstone). Bytes we cannot read give the problem as the fourth element,
never an exception (the caller decides where it goes).
"""

from __future__ import annotations

import base64
import dataclasses
import json
import struct
import uuid
from typing import Any

from pykraft.records import consumer_group_records as cg
from pykraft.records.group_records import GroupRecordError
from pykraft.records.txn_log_records import TxnRecordError, decode_txn_key, decode_txn_value
from pykraft.records.uuids import uuid_to_kafka_str

TXN_TOPIC = "__transaction_state"
TRANSACTION_LOG = "TRANSACTION_LOG"
CONSUMER_GROUP_TYPES = {
    cg.METADATA: "CONSUMER_GROUP_METADATA",
    cg.PARTITION_METADATA: "CONSUMER_GROUP_PARTITION_METADATA",
    cg.MEMBER_METADATA: "CONSUMER_GROUP_MEMBER_METADATA",
    cg.TARGET_METADATA: "CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA",
    cg.TARGET_MEMBER: "CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER",
    cg.CURRENT_ASSIGNMENT: "CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT",
    cg.REGULAR_EXPRESSION: "CONSUMER_GROUP_REGULAR_EXPRESSION",
}
# Kafka's TransactionState ids -> names (broker/txn_state.py holds the same table; the pipeline does not import
# broker/, layering).
TXN_STATES = ("Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead",
              "PrepareEpochFence")
# CurrentMemberAssignment's State (MemberState in Kafka's group coordinator).
MEMBER_STATES = {0: "STABLE", 1: "UNREVOKED_PARTITIONS", 2: "UNRELEASED_PARTITIONS", 3: "UNKNOWN"}

Payload = tuple[str | None, int | None, str | None, str | None]


def _version(data: Any) -> int | None:
    return struct.unpack_from(">h", data)[0] if data is not None and len(data) >= 2 else None


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _jsonable(value: Any) -> Any:
    """A decoded value as JSON data: dataclasses as camelCase objects, uuids as Kafka's text, sets sorted,
    {topic id: partitions} maps as [{topicId, partitions}], bytes as base64."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {_camel(f.name): _jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, uuid.UUID):
        return uuid_to_kafka_str(value)
    if isinstance(value, dict):
        return [{"topicId": _jsonable(k), "partitions": sorted(v)} for k, v in value.items()]
    if isinstance(value, (frozenset, set)):
        return sorted(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, (tuple, list)):
        return [_jsonable(v) for v in value]
    return value


def consumer_group_payload(key: Any, value: Any) -> Payload:
    """(record type, version, payload JSON, problem) of one KIP-848 consumer group record."""
    try:
        decoded = cg.decode_key(key)
        fields: dict[str, Any] = {"group": decoded.group}
        if decoded.sub is not None:
            fields["regex" if decoded.type == cg.REGULAR_EXPRESSION else "member"] = decoded.sub
        if value is None:
            fields["tombstone"] = True
        else:
            fields.update(_jsonable(cg.decode_value(decoded.type, value)))
            if decoded.type == cg.CURRENT_ASSIGNMENT:
                fields["state"] = MEMBER_STATES.get(fields["state"], str(fields["state"]))
    except (GroupRecordError, struct.error, UnicodeDecodeError) as exc:
        return None, None, None, str(exc)
    return CONSUMER_GROUP_TYPES[decoded.type], _version(value if value is not None else key), json.dumps(fields), None


def txn_payload(key: Any, value: Any) -> Payload:
    """(record type, version, payload JSON, problem) of one `__transaction_state` record."""
    if key is None:
        return None, None, None, "__transaction_state record without a key"
    try:
        fields: dict[str, Any] = {"transactionalId": decode_txn_key(key)}
        if value is None:
            fields["tombstone"] = True
        else:
            txn = decode_txn_value(value)
            state = TXN_STATES[txn.state_id] if 0 <= txn.state_id < len(TXN_STATES) else str(txn.state_id)
            fields.update(
                producerId=txn.producer_id, producerEpoch=txn.producer_epoch, transactionTimeoutMs=txn.timeout_ms,
                transactionStatus=state,
                transactionPartitions=None if txn.partitions is None else [
                    {"topic": topic, "partitionIds": list(ids)} for topic, ids in txn.partitions],
                transactionLastUpdateTimestampMs=txn.last_update_ms, transactionStartTimestampMs=txn.start_ms,
                previousProducerId=txn.previous_producer_id, nextProducerId=txn.next_producer_id,
                clientTransactionVersion=txn.client_transaction_version)
    except (TxnRecordError, struct.error, UnicodeDecodeError) as exc:
        return None, None, None, str(exc)
    return TRANSACTION_LOG, _version(value if value is not None else key), json.dumps(fields), None
