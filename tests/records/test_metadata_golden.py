"""Golden values: byte strings checked by hand against the schemas and the frame layout (reference §3.3),
and payload lines printed by Kafka's own `kafka-dump-log --cluster-metadata-decoder`."""

from __future__ import annotations

from kio.schema.types import BrokerId
from kio.static.primitive import i16, i32, i64

from pykraft.records.metadata import (
    FeatureLevelRecordV0,
    FenceBrokerRecordV0,
    NoOpRecordV0,
    TopicRecordV0,
    UnfenceBrokerRecordV0,
    decode_metadata_record,
    encode_metadata_record,
    metadata_record_to_json,
)
from pykraft.records.metadata.schema.partition_change_record import PartitionChangeRecordV0
from pykraft.records.uuids import kafka_str_to_uuid

# The topic id of topic "foo" in the sample dump of Kafka 2.8's config/kraft/README.md.
FOO_ID = kafka_str_to_uuid("5zoAlv-xEh9xRANKXt1Lbg")
FOO_ID_BYTES = bytes.fromhex("e73a0096ffb1121f7144034a5edd4b6e")  # "5zoA" -> 111001 110011 101000 000000 -> e7 3a 00

FEATURE_LEVEL_GOLDEN = bytes.fromhex(
    "01"  # frame version 1 (unsigned varint)
    "0c"  # api key 12 = FeatureLevelRecord
    "00"  # record version 0
    "11"  # Name: compact string, length 16 + 1
    "6d657461646174612e76657273696f6e"  # "metadata.version"
    "0015"  # FeatureLevel: int16 21
    "00"  # no tagged fields
)

TOPIC_GOLDEN = bytes.fromhex(
    "01" "02" "00"  # frame version 1, api key 2 = TopicRecord, version 0
    "04" "666f6f"  # Name: compact string, length 3 + 1, "foo"
    "e73a0096ffb1121f7144034a5edd4b6e"  # TopicId: the 16 uuid bytes
    "00"  # no tagged fields
)

PARTITION_CHANGE_GOLDEN = bytes.fromhex(
    "01" "05" "00"  # frame version 1, api key 5 = PartitionChangeRecord, version 0
    "00000000"  # PartitionId: int32 0
    "e73a0096ffb1121f7144034a5edd4b6e"  # TopicId
    "02"  # two tagged fields, in ascending tag order; the other four stay at their defaults and are left out
    "00" "09" "03" "00000001" "00000002"  # tag 0 Isr, 9 bytes: compact array of 2 (+1), int32 1, int32 2
    "01" "04" "00000002"  # tag 1 Leader, 4 bytes: int32 2
)

UNFENCE_GOLDEN = bytes.fromhex(
    "01" "08" "00"  # frame version 1, api key 8 = UnfenceBrokerRecord, version 0
    "00000001"  # Id: int32 1
    "0000000000000004"  # Epoch: int64 4
    "00"  # no tagged fields
)


def test_feature_level_record_bytes() -> None:
    record = FeatureLevelRecordV0(name="metadata.version", feature_level=i16(21))
    assert encode_metadata_record(record) == FEATURE_LEVEL_GOLDEN
    assert decode_metadata_record(FEATURE_LEVEL_GOLDEN) == record


def test_topic_record_bytes() -> None:
    assert FOO_ID.bytes == FOO_ID_BYTES
    record = TopicRecordV0(name="foo", topic_id=FOO_ID)
    assert encode_metadata_record(record) == TOPIC_GOLDEN
    assert decode_metadata_record(TOPIC_GOLDEN) == record


def test_partition_change_record_bytes_with_tagged_fields() -> None:
    record = PartitionChangeRecordV0(partition_id=i32(0), topic_id=FOO_ID, isr=(BrokerId(1), BrokerId(2)),
                                     leader=BrokerId(2))
    assert encode_metadata_record(record) == PARTITION_CHANGE_GOLDEN
    assert decode_metadata_record(PARTITION_CHANGE_GOLDEN) == record


def test_unfence_broker_record_bytes() -> None:
    record = UnfenceBrokerRecordV0(id=BrokerId(1), epoch=i64(4))
    assert encode_metadata_record(record) == UNFENCE_GOLDEN
    assert decode_metadata_record(UNFENCE_GOLDEN) == record


def test_no_op_record_is_frame_and_empty_tag_section() -> None:
    assert encode_metadata_record(NoOpRecordV0()) == bytes([1, 20, 0, 0])
    assert decode_metadata_record(bytes([1, 20, 0, 0])) == NoOpRecordV0()


def test_json_matches_kafka_dump_log_output() -> None:
    """Payload lines from the kafka-dump-log sample in Kafka's config/kraft/README.md (these three schemas have
    not changed since)."""
    assert metadata_record_to_json(decode_metadata_record(TOPIC_GOLDEN)) == (
        '{"type":"TOPIC_RECORD","version":0,"data":{"name":"foo","topicId":"5zoAlv-xEh9xRANKXt1Lbg"}}'
    )
    assert metadata_record_to_json(UnfenceBrokerRecordV0(id=BrokerId(1), epoch=i64(4))) == (
        '{"type":"UNFENCE_BROKER_RECORD","version":0,"data":{"id":1,"epoch":4}}'
    )
    assert metadata_record_to_json(FenceBrokerRecordV0(id=BrokerId(1), epoch=i64(0))) == (
        '{"type":"FENCE_BROKER_RECORD","version":0,"data":{"id":1,"epoch":0}}'
    )


def test_json_leaves_default_tagged_fields_out() -> None:
    assert metadata_record_to_json(decode_metadata_record(PARTITION_CHANGE_GOLDEN)) == (
        '{"type":"PARTITION_CHANGE_RECORD","version":0,"data":{"partitionId":0,'
        '"topicId":"5zoAlv-xEh9xRANKXt1Lbg","isr":[1,2],"leader":2}}'
    )
