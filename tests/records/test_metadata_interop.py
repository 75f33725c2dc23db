"""Cross-check against an independent implementation: kafka-python 3.0.12 driven by Kafka's own JSON schemas.

For every (record, version) kafka-python can load (all but the two field-less records, see the helper), both
codecs must produce the same bytes for the same record, and each must decode the other's bytes to the same
values, with tagged fields left at their defaults and set to other values.
"""

from __future__ import annotations

import dataclasses
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kio.schema.types import BrokerId

from pykraft.records.metadata import decode_metadata_record, encode_metadata_record
from pykraft.records.metadata.registry import codec_for_class
from pykraft.records.metadata.schema.partition_change_record import PartitionChangeRecordV2

from .kafka_python_metadata import FIELDLESS_SCHEMAS, kp_to_plain, load_kafka_python_classes
from .metadata_strategies import ALL_RECORD_CLASSES, non_default_value, record_strategy, tagged_fields, to_plain

INTEROP_CLASSES = [cls for cls in ALL_RECORD_CLASSES if codec_for_class(cls).name not in FIELDLESS_SCHEMAS]
_SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(scope="module")
def kp_classes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, type]:
    return load_kafka_python_classes(tmp_path_factory.mktemp("kp_schemas"))


@pytest.fixture(scope="module")
def kp_unsorted_classes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, type]:
    return load_kafka_python_classes(tmp_path_factory.mktemp("kp_schemas_unsorted"), sort_tags=False)


def _body(record: object) -> bytes:
    return encode_metadata_record(record)[len(codec_for_class(type(record)).header):]


def _kp_encode(kp_classes: dict[str, type], record: object) -> bytes:
    codec = codec_for_class(type(record))
    kp_record = kp_classes[codec.name](version=codec.version, **to_plain(record))
    return kp_record.encode(version=codec.version, header=False)


def _kp_decode(kp_classes: dict[str, type], record_cls: type, body: bytes) -> object:
    codec = codec_for_class(record_cls)
    return kp_to_plain(kp_classes[codec.name].decode(body, version=codec.version, header=False))


def _check_both_ways(kp_classes: dict[str, type], record: object) -> None:
    codec = codec_for_class(type(record))
    ours = _body(record)
    theirs = _kp_encode(kp_classes, record)
    assert ours == theirs
    assert _kp_decode(kp_classes, type(record), ours) == to_plain(record)
    assert decode_metadata_record(codec.header + theirs) == record


def test_every_loadable_schema_was_loaded(kp_classes: dict[str, type]) -> None:
    names = {codec_for_class(cls).name for cls in INTEROP_CLASSES}
    assert names == set(kp_classes)


@pytest.mark.parametrize("cls", INTEROP_CLASSES, ids=lambda c: c.__name__)
def test_field_names_agree_with_kafka_python(kp_classes: dict[str, type], cls: type) -> None:
    """kafka-python names fields from the schema (snake_case of the Kafka name): same names, same order."""
    codec = codec_for_class(cls)
    kp_struct = kp_classes[codec.name]._struct
    kp_names = [f.name for f in kp_struct._fields if f.for_version_q(codec.version)]
    assert sorted(kp_names) == sorted(f.name for f in dataclasses.fields(cls))


@pytest.mark.parametrize("cls", INTEROP_CLASSES, ids=lambda c: c.__name__)
@_SETTINGS
@given(data=st.data())
def test_same_bytes_and_same_values_both_ways(kp_classes: dict[str, type], cls: type, data: st.DataObject) -> None:
    _check_both_ways(kp_classes, data.draw(record_strategy(cls)))


@pytest.mark.parametrize("cls", [c for c in INTEROP_CLASSES if tagged_fields(c)], ids=lambda c: c.__name__)
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_tagged_fields_default_and_set(kp_classes: dict[str, type], cls: type, data: st.DataObject) -> None:
    base = data.draw(record_strategy(cls))
    all_default = dataclasses.replace(base, **{f.name: f.default for f in tagged_fields(cls)})
    all_set = dataclasses.replace(base, **{f.name: non_default_value(f) for f in tagged_fields(cls)})
    _check_both_ways(kp_classes, all_default)
    _check_both_ways(kp_classes, all_set)
    for field in tagged_fields(cls):
        _check_both_ways(kp_classes, dataclasses.replace(all_default, **{field.name: non_default_value(field)}))


def test_tags_out_of_order_are_read_like_kafka_reads_them(kp_unsorted_classes: dict[str, type]) -> None:
    """Unpatched kafka-python writes PartitionChangeRecord's tag 8 before tags 6 and 7. Kafka's reader does not
    require ascending tags, and neither do we: the record still decodes to the same values."""
    record = PartitionChangeRecordV2(
        topic_id=uuid.UUID(int=99),
        partition_id=3,
        directories=(uuid.UUID(int=5),),
        eligible_leader_replicas=(BrokerId(2),),
        last_known_elr=(BrokerId(4),),
    )
    unsorted = _kp_encode(kp_unsorted_classes, record)
    assert unsorted != _body(record)  # the tag order really differs
    assert sorted(unsorted) == sorted(_body(record))  # ... and only the order
    assert decode_metadata_record(codec_for_class(PartitionChangeRecordV2).header + unsorted) == record
