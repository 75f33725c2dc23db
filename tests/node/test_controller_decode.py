"""The controller host's cheap rejection of values that are not metadata records agrees with the full decode: it
refuses only what the full decode refuses, and every real record still passes it."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kio.static.primitive import i16

from pykraft.cli.quickstart import _value
from pykraft.controller.controller import ControllerConfig
from pykraft.controller.log_replay import may_be_metadata_record
from pykraft.node.roles.controller_host import ControllerHost
from pykraft.records import SimpleRecord, encode_batch
from pykraft.records.metadata.errors import MetadataRecordError
from pykraft.records.metadata.frame import decode_metadata_record, encode_metadata_record
from pykraft.records.metadata.schema.feature_level_record import FeatureLevelRecordV0
from pykraft.records.metadata.schema.no_op_record import NoOpRecordV0


@given(st.binary(max_size=40))
def test_a_value_rejected_cheaply_is_one_the_full_decode_refuses(value: bytes):
    if not may_be_metadata_record(value):
        with pytest.raises(MetadataRecordError):
            decode_metadata_record(value)


def test_every_first_byte_rejected_cheaply_is_refused_by_the_full_decode():
    tail = encode_metadata_record(NoOpRecordV0())[1:]
    passed = []
    for first in range(256):
        value = bytes([first]) + tail
        if may_be_metadata_record(value):
            passed.append(first)
        else:
            with pytest.raises(MetadataRecordError):
                decode_metadata_record(value)
    assert passed == [1, *range(0x80, 0x100)]


def test_real_records_pass_and_the_quickstart_values_and_empty_values_do_not():
    for record in (NoOpRecordV0(), FeatureLevelRecordV0(name="metadata.version", feature_level=i16(27))):
        assert may_be_metadata_record(encode_metadata_record(record))
        assert may_be_metadata_record(memoryview(encode_metadata_record(record)))
    assert not may_be_metadata_record(_value(1))
    assert not may_be_metadata_record(b"") and not may_be_metadata_record(None)


def test_apply_counts_cheap_and_full_rejections_alike():
    host = ControllerHost(ControllerConfig(node_id=1, cluster_id="MkU3OEVBNTcwNTJENDM2Qg"))
    good = encode_metadata_record(FeatureLevelRecordV0(name="metadata.version", feature_level=i16(21)))
    # refused cheaply, cheaply, by the full decode; a frame version 1 written as a two-byte varint is still a
    # record (Kafka's varint reader accepts it), so the cheap check must let a first byte >= 0x80 through.
    values = [_value(1), b"", good[:-1], b"\x81\x00" + good[1:], good]
    batch = encode_batch([SimpleRecord(value=v) for v in values], base_offset=0, partition_leader_epoch=1,
                         timestamp_ms=0)
    host.apply(memoryview(batch), 0, len(values) - 1)
    assert host.undecodable_records == 3
    assert host.controller.features.finalized == {"metadata.version": 21}
