"""The client-side codecs of the tools' producer and consumer, against independent implementations: Kafka's
partitioner (kafka-python's murmur2 as the oracle), the consumer protocol (kafka-python's encoders), the range
assignor, and producer batches read back by kafka-python's record parser."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pykraft.admin.consumer_protocol import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
    range_assign,
)
from pykraft.admin.partitioner import StickyPartitioner, murmur2, partition_for_key
from pykraft.records import Compression, SimpleRecord, iter_batches
from pykraft.records.producer_batch import encode_producer_batch

kafka = pytest.importorskip("kafka")


@given(st.binary(max_size=64))
def test_murmur2_is_kafkas(data):
    from kafka.partitioner.default import murmur2 as oracle

    assert murmur2(data) & 0xFFFFFFFF == oracle(bytearray(data)) & 0xFFFFFFFF


def test_murmur2_matches_kafkas_own_test_vectors():
    # Kafka's UtilsTest.testMurmur2
    assert murmur2(b"21") == -973932308
    assert murmur2(b"foobar") == -790332482
    assert murmur2(b"a-little-bit-long-string") == -985981536
    assert murmur2(b"a-little-bit-longer-string") == -1486304829
    assert partition_for_key(b"21", 7) == (-973932308 & 0x7FFFFFFF) % 7


def test_the_sticky_partitioner_moves_on_after_a_batch_worth_of_bytes():
    sticky = StickyPartitioner(100, random.Random(1))
    first = [sticky.partition("t", 4, 30) for _ in range(4)]
    assert len(set(first)) == 1  # 120 bytes went to one partition
    assert sticky.partition("t", 4, 30) != first[0]


def test_consumer_protocol_round_trips_and_reads_kafka_pythons():
    from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

    assignment = encode_assignment([("b", 1), ("a", 0), ("b", 0)])
    assert decode_assignment(assignment) == [("a", 0), ("b", 0), ("b", 1)]
    assert decode_subscription(encode_subscription(["y", "x", "y"])) == ["x", "y"]
    assert decode_assignment(ConsumerProtocolAssignment(0, [("t", [2, 0])], b"").encode()) == [("t", 0), ("t", 2)]
    assert decode_subscription(ConsumerProtocolSubscription(0, ["s"], b"").encode()) == ["s"]
    theirs = ConsumerProtocolAssignment.decode(assignment)
    assert sorted((t.topic, sorted(t.partitions)) for t in theirs.assigned_partitions) == [("a", [0]), ("b", [0, 1])]
    with pytest.raises(ValueError):
        decode_assignment(b"\x00")


def test_the_range_assignor_splits_as_kafkas_javadoc_example():
    # Kafka's RangeAssignor javadoc: two consumers, two topics of three partitions each
    plan = range_assign({"C0": ["t0", "t1"], "C1": ["t0", "t1"]}, {"t0": 3, "t1": 3})
    assert plan == {"C0": [("t0", 0), ("t0", 1), ("t1", 0), ("t1", 1)], "C1": [("t0", 2), ("t1", 2)]}
    assert range_assign({"a": ["t"], "b": ["u"]}, {"t": 2}) == {"a": [("t", 0), ("t", 1)], "b": []}


class _Cluster:
    def __init__(self, counts):
        self.counts = counts

    def partitions_for_topic(self, topic):
        return set(range(self.counts[topic])) if topic in self.counts else None


@given(st.dictionaries(st.sampled_from(["m1", "m2", "m3", "m4"]),
                       st.sets(st.sampled_from(["t", "u", "v"]), min_size=1), min_size=1),
       st.fixed_dictionaries({"t": st.integers(1, 7), "u": st.integers(1, 7), "v": st.integers(1, 7)}))
def test_the_range_assignor_agrees_with_kafka_pythons(members, counts):
    from types import SimpleNamespace

    from kafka.coordinator.assignors.range import RangePartitionAssignor

    theirs = RangePartitionAssignor.assign(_Cluster(counts), [
        SimpleNamespace(member_id=m, group_instance_id=None, metadata=SimpleNamespace(topics=sorted(topics)))
        for m, topics in members.items()])
    ours = range_assign({m: sorted(topics) for m, topics in members.items()}, counts)
    for member, assignment in theirs.items():
        assert sorted(ours[member]) == sorted((t, p) for t, ps in assignment.assigned_partitions for p in ps)


def test_static_members_come_first_by_instance_id_as_kafkas_member_info_orders_them():
    plan = range_assign({"a": ["t"], "b": ["t"], "c": ["t"]}, {"t": 3}, {"b": "z", "c": "y"})
    assert plan == {"c": [("t", 0)], "b": [("t", 1)], "a": [("t", 2)]}


@pytest.mark.parametrize("codec", list(Compression))
def test_producer_batches_are_read_back_by_kafka_pythons_parser(codec):
    from kafka.record.default_records import DefaultRecordBatch

    records = [SimpleRecord(b"v1", b"k1", headers=(("h", b"x"),)), SimpleRecord(None, None, 5)]
    data = encode_producer_batch(records, timestamp_ms=10, compression=codec, producer_id=7, producer_epoch=1,
                                 base_sequence=3)
    ours = next(iter_batches(data))
    assert ours.crc_valid and ours.producer_id == 7 and ours.base_sequence == 3 and ours.record_count == 2
    theirs = DefaultRecordBatch(bytearray(data))
    assert theirs.validate_crc() and theirs.compression_type == int(codec)
    assert [(r.key, r.value, r.timestamp, [(k, v) for k, v in r.headers]) for r in theirs] == [
        (b"k1", b"v1", 10, [("h", b"x")]), (None, None, 5, [])]
