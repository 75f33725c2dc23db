"""Each way a metadata record value can be wrong maps to its own MetadataRecordError subclass, in the places
Kafka's `AbstractApiMessageSerde.read` and its generated readers fail; and what Kafka skips, we skip."""

from __future__ import annotations

import uuid

import pytest
from kio.schema.types import BrokerId
from kio.static.primitive import i16, i32, i64, u16

from pykraft.records.metadata import (
    BrokerEndpointV3,
    FeatureLevelRecordV0,
    MalformedMetadataRecordError,
    MetadataRecordEncodeError,
    MetadataRecordError,
    RegisterBrokerRecordV3,
    TopicRecordV0,
    TrailingBytesError,
    TruncatedMetadataRecordError,
    UnknownFrameVersionError,
    UnknownMetadataRecordTypeError,
    UnsupportedMetadataRecordVersionError,
    decode_metadata_record,
    encode_metadata_record,
)
from pykraft.records.metadata.schema.broker_registration_change_record import BrokerRegistrationChangeRecordV0
from pykraft.records.metadata.schema.config_record import ConfigRecordV0
from pykraft.records.metadata.schema.partition_record import PartitionRecordV2

FEATURE = FeatureLevelRecordV0(name="metadata.version", feature_level=i16(21))
FEATURE_VALUE = encode_metadata_record(FEATURE)  # 01 0c 00 | 11 "metadata.version" | 00 15 | 00
TOPIC_ID = uuid.UUID(int=0xABCDEF)


def _register_broker(**changes: object) -> RegisterBrokerRecordV3:
    endpoint = BrokerEndpointV3(name="PLAINTEXT", host="h", port=u16(9092), security_protocol=i16(0))
    fields = dict(broker_id=BrokerId(1), incarnation_id=uuid.UUID(int=7), broker_epoch=i64(10),
                  end_points=(endpoint,), features=(), rack=None)
    fields.update(changes)
    return RegisterBrokerRecordV3(**fields)


def test_all_errors_are_value_errors() -> None:
    assert issubclass(MetadataRecordError, ValueError)
    for error in (UnknownFrameVersionError, UnknownMetadataRecordTypeError, UnsupportedMetadataRecordVersionError,
                  TruncatedMetadataRecordError, MalformedMetadataRecordError, TrailingBytesError,
                  MetadataRecordEncodeError):
        assert issubclass(error, MetadataRecordError)


def test_frame_version_zero_is_the_unsupported_kraft_preview_format() -> None:
    with pytest.raises(UnknownFrameVersionError, match="2.8") as caught:
        decode_metadata_record(b"\x00" + FEATURE_VALUE[1:])
    assert caught.value.frame_version == 0


def test_other_frame_versions_are_unknown() -> None:
    with pytest.raises(UnknownFrameVersionError, match="unknown frame version 2") as caught:
        decode_metadata_record(b"\x02" + FEATURE_VALUE[1:])
    assert caught.value.frame_version == 2


def test_over_long_varint_in_the_frame_is_malformed() -> None:
    with pytest.raises(MalformedMetadataRecordError, match="longer than 5 bytes"):
        decode_metadata_record(b"\x81\x80\x80\x80\x80\x00" + FEATURE_VALUE[1:])


def test_empty_value_is_truncated() -> None:
    with pytest.raises(TruncatedMetadataRecordError):
        decode_metadata_record(b"")


@pytest.mark.parametrize("api_key", [6, 13, 16, 28, 99, 300])
def test_unknown_and_retired_api_keys(api_key: int) -> None:
    key_varint = bytes([api_key]) if api_key < 128 else bytes([(api_key & 0x7F) | 0x80, api_key >> 7])
    with pytest.raises(UnknownMetadataRecordTypeError) as caught:
        decode_metadata_record(b"\x01" + key_varint + b"\x00\x00")
    assert caught.value.api_key == api_key


def test_unsupported_version() -> None:
    value = encode_metadata_record(PartitionRecordV2(topic_id=TOPIC_ID))
    with pytest.raises(UnsupportedMetadataRecordVersionError, match="supported versions are 0-2") as caught:
        decode_metadata_record(value[:2] + b"\x03" + value[3:])
    assert (caught.value.api_key, caught.value.version) == (3, 3)


def test_trailing_bytes_are_garbage() -> None:
    with pytest.raises(TrailingBytesError, match="2 byte") as caught:
        decode_metadata_record(FEATURE_VALUE + b"\x00\x00")
    assert caught.value.count == 2


def test_null_in_a_non_nullable_array_is_malformed() -> None:
    """kio alone would return None here; Kafka's reader refuses ("non-nullable field ... serialized as null")."""
    value = encode_metadata_record(PartitionRecordV2(topic_id=TOPIC_ID, replicas=()))
    replicas_length_at = 3 + 4 + 16
    assert value[replicas_length_at] == 1  # compact length of an empty array
    mutated = value[:replicas_length_at] + b"\x00" + value[replicas_length_at + 1:]
    with pytest.raises(MalformedMetadataRecordError, match="non-nullable field replicas"):
        decode_metadata_record(mutated)


def test_null_in_a_non_nullable_string_is_malformed() -> None:
    with pytest.raises(MalformedMetadataRecordError, match="non-nullable field name"):
        decode_metadata_record(b"\x01\x0c\x00" + b"\x00" + b"\x00\x15" + b"\x00")


def test_null_in_a_nullable_string_decodes_as_none() -> None:
    record = ConfigRecordV0(resource_type=2, resource_name="t", name="retention.ms", value=None)
    assert decode_metadata_record(encode_metadata_record(record)).value is None


def test_invalid_utf8_is_malformed() -> None:
    value = encode_metadata_record(FeatureLevelRecordV0(name="ab", feature_level=i16(1)))
    with pytest.raises(MalformedMetadataRecordError):
        decode_metadata_record(value[:4] + b"\xff\xfe" + value[6:])


def test_bool_other_than_zero_or_one_is_malformed() -> None:
    """Stricter than Kafka, which reads any non-zero byte as true (kio refuses it); Kafka never writes one."""
    value = encode_metadata_record(_register_broker())
    zk_flag_at = 3 + 4
    assert value[zk_flag_at] == 0
    with pytest.raises(MalformedMetadataRecordError):
        decode_metadata_record(value[:zk_flag_at] + b"\x02" + value[zk_flag_at + 1:])


def test_strings_up_to_kafkas_limit_round_trip() -> None:
    record = ConfigRecordV0(resource_type=4, resource_name="", name="n", value="x" * 0x7FFF)
    assert decode_metadata_record(encode_metadata_record(record)) == record


def test_longer_strings_are_refused_when_encoding() -> None:
    record = ConfigRecordV0(resource_type=4, resource_name="", name="n", value="é" * 0x4000)  # 0x8000 bytes
    with pytest.raises(MetadataRecordEncodeError, match="invalid length 32768"):
        encode_metadata_record(record)


def test_longer_strings_are_refused_when_decoding() -> None:
    # ConfigRecord v0: resource type, resource name "", name "n", value of 0x8000 bytes (compact length + 1)
    body = b"\x04" + b"\x01" + b"\x02n" + b"\x81\x80\x02" + b"x" * 0x8000 + b"\x00"
    with pytest.raises(MalformedMetadataRecordError, match="invalid length 32768"):
        decode_metadata_record(b"\x01\x04\x00" + body)


def test_tagged_field_must_fill_its_declared_size() -> None:
    # BrokerRegistrationChangeRecord v0: id, epoch, then tag 0 (Fenced, int8) declared as 2 bytes
    body = bytes(4) + bytes(8) + b"\x01" + b"\x00\x02\x01\x00"
    with pytest.raises(MalformedMetadataRecordError, match="declares 2 bytes but holds 1"):
        decode_metadata_record(b"\x01\x11\x00" + body)


def test_tag_of_a_later_version_is_not_valid() -> None:
    """Kafka: "Tag 2 is not valid for version 0" (LogDirs is tag 2 from version 2 on)."""
    body = bytes(4) + bytes(8) + b"\x01" + b"\x02\x01\x00"
    with pytest.raises(MalformedMetadataRecordError, match="tag 2 is not valid"):
        decode_metadata_record(b"\x01\x11\x00" + body)


def test_unknown_tags_are_skipped_like_kafka_does() -> None:
    """A newer Kafka may add tagged fields to a version; older readers skip them."""
    record = BrokerRegistrationChangeRecordV0(broker_id=BrokerId(3), broker_epoch=i64(9), fenced=-1)
    value = encode_metadata_record(record)
    assert value.endswith(b"\x01\x00\x01\xff")  # one tag: Fenced = -1
    with_unknown = value[:-4] + b"\x03" + b"\x00\x01\xff" + b"\x07\x02ab" + b"\x9a\x01\x00"
    assert decode_metadata_record(with_unknown) == record


def test_unknown_tags_inside_nested_structs_are_skipped() -> None:
    record = _register_broker()
    value = encode_metadata_record(record)
    # header 3, broker id 4, zk flag 1, incarnation id 16, epoch 8, array length 1, then the endpoint:
    # name 1+9, host 1+1, port 2, security protocol 2, and its tagged field count (00) at byte 49
    tag_count_at = 3 + 4 + 1 + 16 + 8 + 1 + 10 + 2 + 2 + 2
    assert value[tag_count_at - 4:tag_count_at + 1] == b"\x23\x84\x00\x00\x00"
    mutated = value[:tag_count_at] + b"\x01\x05\x01z" + value[tag_count_at + 1:]
    assert len(mutated) == len(value) + 3
    assert decode_metadata_record(mutated) == record


def test_encode_refuses_values_outside_their_kafka_type() -> None:
    with pytest.raises(MetadataRecordEncodeError):
        encode_metadata_record(_register_broker(end_points=(
            BrokerEndpointV3(name="P", host="h", port=70000, security_protocol=i16(0)),)))
    with pytest.raises(MetadataRecordEncodeError):
        encode_metadata_record(TopicRecordV0(name=None, topic_id=TOPIC_ID))
    with pytest.raises(MetadataRecordEncodeError):
        encode_metadata_record(PartitionRecordV2(topic_id=TOPIC_ID, partition_id=i32(0), leader=2**31))
