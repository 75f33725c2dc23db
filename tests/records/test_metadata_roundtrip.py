"""Round trips of every (metadata record, version) through the value frame, plus the conventions a caller
relies on: frame header bytes, tagged defaults left off the wire, the zero uuid, bytes-like inputs."""

from __future__ import annotations

import dataclasses
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.static.primitive import i16

from pykraft.records.metadata import (
    RECORD_CLASSES,
    FeatureLevelRecordV0,
    MetadataRecordType,
    decode_metadata_record,
    encode_metadata_record,
    latest_version,
    record_class,
    record_type,
    record_type_name,
    supported_versions,
)
from pykraft.records.metadata.schema.partition_change_record import PartitionChangeRecordV2
from pykraft.records.metadata.schema.topic_record import TopicRecordV0

from .metadata_strategies import ALL_RECORD_CLASSES, non_default_value, record_strategy, tagged_fields, to_plain

_SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_FEW = settings(max_examples=10, deadline=None)


def _ids(cls: type) -> str:
    return cls.__name__


@pytest.mark.parametrize("cls", ALL_RECORD_CLASSES, ids=_ids)
@_SETTINGS
@given(data=st.data())
def test_decode_of_encode_is_identity(cls: type, data: st.DataObject) -> None:
    record = data.draw(record_strategy(cls))
    assert decode_metadata_record(encode_metadata_record(record)) == record


def _zero_uuid_as_none(value: object) -> object:
    if isinstance(value, dict):
        return {key: _zero_uuid_as_none(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_zero_uuid_as_none(item) for item in value]
    return None if value == uuid.UUID(int=0) else value


@pytest.mark.parametrize("cls", ALL_RECORD_CLASSES, ids=_ids)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_round_trip_of_values_from_hypothesis_from_type(cls: type, data: st.DataObject) -> None:
    """The classes are declared like kio's, so hypothesis can build them from their annotations alone."""
    record = data.draw(st.from_type(cls))
    decoded = decode_metadata_record(encode_metadata_record(record))
    assert _zero_uuid_as_none(to_plain(decoded)) == _zero_uuid_as_none(to_plain(record))


@pytest.mark.parametrize("cls", ALL_RECORD_CLASSES, ids=_ids)
@_SETTINGS
@given(data=st.data())
def test_encode_of_decode_is_identity(cls: type, data: st.DataObject) -> None:
    """The encoding is canonical: re-encoding what was decoded gives the same bytes."""
    value = encode_metadata_record(data.draw(record_strategy(cls)))
    assert encode_metadata_record(decode_metadata_record(value)) == value


@pytest.mark.parametrize("cls", ALL_RECORD_CLASSES, ids=_ids)
@_FEW
@given(data=st.data())
def test_value_starts_with_frame_version_api_key_and_version(cls: type, data: st.DataObject) -> None:
    record = data.draw(record_strategy(cls))
    value = encode_metadata_record(record)
    # every api key and version is below 128, so each varint is one byte
    assert value[:3] == bytes([1, cls.__api_key__, cls.__version__])


@pytest.mark.parametrize("cls", [c for c in ALL_RECORD_CLASSES if tagged_fields(c)], ids=_ids)
@_FEW
@given(data=st.data())
def test_tagged_fields_at_default_are_left_off_the_wire(cls: type, data: st.DataObject) -> None:
    """Kafka writes a tagged field only when it differs from its default; so does kio."""
    base = data.draw(record_strategy(cls))
    at_default = dataclasses.replace(base, **{f.name: f.default for f in tagged_fields(cls)})
    value = encode_metadata_record(at_default)
    assert value[-1] == 0  # the top-level tagged field count
    assert decode_metadata_record(value) == at_default


@pytest.mark.parametrize("cls", [c for c in ALL_RECORD_CLASSES if tagged_fields(c)], ids=_ids)
@_FEW
@given(data=st.data())
def test_each_tagged_field_set_alone_round_trips(cls: type, data: st.DataObject) -> None:
    base = data.draw(record_strategy(cls))
    at_default = dataclasses.replace(base, **{f.name: f.default for f in tagged_fields(cls)})
    for field in tagged_fields(cls):
        record = dataclasses.replace(at_default, **{field.name: non_default_value(field)})
        value = encode_metadata_record(record)
        assert value != encode_metadata_record(at_default)
        decoded = decode_metadata_record(value)
        assert decoded == record
        assert getattr(decoded, field.name) == non_default_value(field)


def test_zero_uuid_is_written_as_zeros_and_read_back_as_none() -> None:
    """kio's convention, which the rest of pykraft must expect: None and UUID(int=0) encode alike."""
    with_zero = TopicRecordV0(name="t", topic_id=uuid.UUID(int=0))
    with_none = TopicRecordV0(name="t", topic_id=None)
    assert encode_metadata_record(with_zero) == encode_metadata_record(with_none)
    assert encode_metadata_record(with_none)[-17:-1] == bytes(16)
    assert decode_metadata_record(encode_metadata_record(with_zero)).topic_id is None


def test_defaults_follow_kafka_schema() -> None:
    change = PartitionChangeRecordV2(topic_id=uuid.UUID(int=1))
    assert change.partition_id == -1
    assert change.leader == -2  # "no change"
    assert change.leader_recovery_state == -1
    assert change.isr is None and change.directories is None and change.eligible_leader_replicas is None


@pytest.mark.parametrize("wrap", [bytes, bytearray, memoryview, lambda b: memoryview(bytearray(b))])
def test_decode_accepts_any_bytes_like(wrap) -> None:
    record = FeatureLevelRecordV0(name="metadata.version", feature_level=i16(21))
    assert decode_metadata_record(wrap(encode_metadata_record(record))) == record


def test_decode_reads_a_slice_of_a_larger_buffer_without_copying_it() -> None:
    record = FeatureLevelRecordV0(name="kraft.version", feature_level=i16(1))
    value = encode_metadata_record(record)
    buffer = b"\xff" * 7 + value + b"\xee" * 5
    assert decode_metadata_record(memoryview(buffer)[7:7 + len(value)]) == record


def test_registry_lookups() -> None:
    assert record_type_name(0) == "RegisterBrokerRecord"
    assert record_type_name(17) == "BrokerRegistrationChangeRecord"
    assert supported_versions(MetadataRecordType.PARTITION_RECORD) == range(0, 3)
    assert latest_version(MetadataRecordType.REGISTER_BROKER_RECORD) == 3
    assert record_class(5, 2) is PartitionChangeRecordV2
    assert record_type(PartitionChangeRecordV2(topic_id=None)) is MetadataRecordType.PARTITION_CHANGE_RECORD
    assert len(RECORD_CLASSES) == 34


def test_encode_rejects_objects_that_are_not_metadata_records() -> None:
    @dataclasses.dataclass(frozen=True)
    class Lookalike:
        __api_key__ = 12
        __version__ = 0

    with pytest.raises(TypeError):
        encode_metadata_record(Lookalike())
