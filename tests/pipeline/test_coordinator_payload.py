"""The payload columns of what main's transactions and KIP-848 groups write: COMMIT/ABORT markers in any
partition, `__transaction_state` records, ConsumerGroup* records in `__consumer_offsets` beside the classic ones;
decoded the same way by the vectorised and the record-by-record paths, damage a problem and never an exception.
No Spark here."""

from __future__ import annotations

import json
import uuid

import pytest

from pykraft.pipeline.coordinator_payload import consumer_group_payload, txn_payload
from pykraft.pipeline.layout import LogFile, NodeIdentity
from pykraft.records import SimpleRecord, encode_batch
from pykraft.records import consumer_group_records as cg
from pykraft.records.group_records import OffsetKey, OffsetValue, encode_key, encode_offset_value
from pykraft.records.txn_log_records import TxnLogValue, encode_txn_key, encode_txn_value
from pykraft.records.txn_markers import encode_txn_marker_batch

from .test_columnar import _assert_same

NODE = NodeIdentity("C", 1, None)
USER_FILE = LogFile("/x/00000000000000000000.log", NODE, "payments", 0, 0)
GROUP_FILE = LogFile("/x/00000000000000000000.log", NODE, "__consumer_offsets", 7, 0)
TXN_FILE = LogFile("/x/00000000000000000000.log", NODE, "__transaction_state", 2, 0)
TOPIC_ID = uuid.UUID(int=0x1234_5678_9ABC_DEF0_0FED_CBA9_8765_4321)


def _txn_batch(values: list[bytes], base_offset: int, producer_id: int) -> bytes:
    batch = bytearray(encode_batch([SimpleRecord(v) for v in values], base_offset=base_offset,
                                   partition_leader_epoch=3, timestamp_ms=1000))
    from .partition_files import with_producer
    return with_producer(bytes(batch), producer_id, 0, 0, transactional=True)


def test_markers_in_a_user_partition_decode_to_commit_and_abort_with_the_coordinator_epoch():
    data = (_txn_batch([b"a", b"b"], 0, 77)
            + encode_txn_marker_batch(77, 0, 4, commit=False, timestamp_ms=1001, base_offset=2, partition_leader_epoch=3)
            + _txn_batch([b"a", b"b"], 3, 77)
            + encode_txn_marker_batch(77, 0, 4, commit=True, timestamp_ms=1002, base_offset=5, partition_leader_epoch=3))
    rows = _assert_same(data, metadata=True, file=USER_FILE).to_pylist()
    assert [(r["offset"], r["control_type"], r["is_transactional"], r["producer_id"]) for r in rows] == [
        (0, None, True, 77), (1, None, True, 77), (2, "ABORT", True, 77), (3, None, True, 77), (4, None, True, 77),
        (5, "COMMIT", True, 77)]
    markers = [r for r in rows if r["is_control"]]
    assert [json.loads(r["payload"]) for r in markers] == [{"version": 0, "coordinatorEpoch": 4}] * 2
    assert all(r["error"] is None for r in rows)
    # Without payload decoding the control type is still there.
    plain = _assert_same(data, metadata=False, file=USER_FILE).to_pylist()
    assert [r["control_type"] for r in plain] == [None, None, "ABORT", None, None, "COMMIT"]


@pytest.mark.parametrize("version", [0, 1])
def test_transaction_state_records_decode_to_their_state(version: int):
    ongoing = TxnLogValue(5000, 2, 60000, 1, (("payments", (0, 1)),), 1700, 1600,
                          **({"client_transaction_version": 2, "next_producer_id": 5001} if version else {}))
    empty = TxnLogValue(5000, 2, 60000, 0, None, 1800, -1)
    records = [SimpleRecord(encode_txn_value(ongoing, version), key=encode_txn_key("tx-a")),
               SimpleRecord(encode_txn_value(empty, version), key=encode_txn_key("tx-a")),
               SimpleRecord(None, key=encode_txn_key("tx-a")),
               SimpleRecord(b"\x00\x09junk", key=encode_txn_key("tx-a"))]
    rows = _assert_same(encode_batch(records, base_offset=0, partition_leader_epoch=1, timestamp_ms=9),
                        metadata=True, file=TXN_FILE).to_pylist()
    assert [r["record_type"] for r in rows] == ["TRANSACTION_LOG"] * 3 + [None]
    first, second, tombstone = (json.loads(r["payload"]) for r in rows[:3])
    assert first["transactionalId"] == "tx-a" and first["transactionStatus"] == "Ongoing"
    assert first["transactionPartitions"] == [{"topic": "payments", "partitionIds": [0, 1]}]
    assert (first["producerId"], first["producerEpoch"], first["transactionTimeoutMs"]) == (5000, 2, 60000)
    assert first["clientTransactionVersion"] == (2 if version else 0)
    assert first["nextProducerId"] == (5001 if version else -1)
    assert second["transactionStatus"] == "Empty" and second["transactionPartitions"] is None
    assert tombstone == {"transactionalId": "tx-a", "tombstone": True}
    assert rows[0]["record_version"] == version and rows[2]["record_version"] == 0
    kind, _, _, problem = txn_payload(encode_txn_key("tx-a"), b"\x00\x09junk")
    assert kind is None and "version 9" in problem


def test_consumer_group_records_decode_beside_the_classic_commits():
    assignment = {TOPIC_ID: frozenset({2, 0})}
    records = [
        (cg.ConsumerGroupKey(cg.METADATA, "g2"), cg.GroupEpochValue(5)),
        (cg.ConsumerGroupKey(cg.PARTITION_METADATA, "g2"),
         cg.PartitionMetadataValue((cg.TopicMetadataValue(TOPIC_ID, "orders", 3),))),
        (cg.ConsumerGroupKey(cg.MEMBER_METADATA, "g2", "m-1"),
         cg.MemberMetadataValue(None, None, "client", "/127.0.0.1", ("orders",), None, 45000, "uniform")),
        (cg.ConsumerGroupKey(cg.TARGET_METADATA, "g2"), cg.AssignmentEpochValue(5)),
        (cg.ConsumerGroupKey(cg.TARGET_MEMBER, "g2", "m-1"), cg.TargetMemberValue(assignment)),
        (cg.ConsumerGroupKey(cg.CURRENT_ASSIGNMENT, "g2", "m-1"), cg.CurrentAssignmentValue(5, 4, 0, assignment, {})),
        (cg.ConsumerGroupKey(cg.REGULAR_EXPRESSION, "g2", "ord.*"), cg.RegexValue(("orders",), 12, 1700)),
        (cg.ConsumerGroupKey(cg.MEMBER_METADATA, "g2", "m-1"), None),
    ]
    batch = [SimpleRecord(None if v is None else cg.encode_value(v), key=cg.encode_key(k)) for k, v in records]
    batch.append(SimpleRecord(encode_offset_value(OffsetValue(42, 3, "", 1000)), key=encode_key(OffsetKey("g2", "orders", 0))))
    rows = _assert_same(encode_batch(batch, base_offset=0, partition_leader_epoch=1, timestamp_ms=9), metadata=True,
                        file=GROUP_FILE).to_pylist()
    assert [r["record_type"] for r in rows] == [
        "CONSUMER_GROUP_METADATA", "CONSUMER_GROUP_PARTITION_METADATA", "CONSUMER_GROUP_MEMBER_METADATA",
        "CONSUMER_GROUP_TARGET_ASSIGNMENT_METADATA", "CONSUMER_GROUP_TARGET_ASSIGNMENT_MEMBER",
        "CONSUMER_GROUP_CURRENT_MEMBER_ASSIGNMENT", "CONSUMER_GROUP_REGULAR_EXPRESSION",
        "CONSUMER_GROUP_MEMBER_METADATA", "OFFSET_COMMIT"]
    payloads = [json.loads(r["payload"]) for r in rows]
    assert payloads[0] == {"group": "g2", "epoch": 5}
    assert payloads[1]["topics"][0]["name"] == "orders" and payloads[1]["topics"][0]["partitions"] == 3
    assert payloads[2]["member"] == "m-1" and payloads[2]["subscribedTopicNames"] == ["orders"]
    assert payloads[2]["serverAssignor"] == "uniform"
    current = payloads[5]
    assert (current["memberEpoch"], current["previousMemberEpoch"], current["state"]) == (5, 4, "STABLE")
    assert current["assigned"] == [{"topicId": payloads[1]["topics"][0]["topicId"], "partitions": [0, 2]}]
    assert payloads[6] == {"group": "g2", "regex": "ord.*", "topics": ["orders"], "version": 12, "timestampMs": 1700}
    assert payloads[7] == {"group": "g2", "member": "m-1", "tombstone": True}
    assert payloads[8]["offset"] == 42
    kind, _, _, problem = consumer_group_payload(cg.encode_key(cg.ConsumerGroupKey(cg.METADATA, "g2")), b"\x00")
    assert kind is None and problem
