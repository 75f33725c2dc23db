"""Metadata records are written at the version Kafka's controller writes them at the finalized metadata.version
(MetadataVersion's gates; ReplicationControlManager's BrokerRegistrationChangeRecord versions), not at the newest
version the schema allows."""

from __future__ import annotations

import uuid

import pytest
from kio.schema.types import BrokerId
from kio.static.primitive import i8, i32, i64

from pykraft.records.metadata import decode_metadata_record, encode_metadata_record
from pykraft.records.metadata.schema.broker_registration_change_record import BrokerRegistrationChangeRecordV2
from pykraft.records.metadata.schema.partition_change_record import PartitionChangeRecordV2
from pykraft.records.metadata.schema.partition_record import PartitionRecordV2
from pykraft.records.metadata.schema.register_broker_record import BrokerEndpointV3, RegisterBrokerRecordV3
from pykraft.records.metadata.schema.topic_record import TopicRecordV0
from pykraft.records.metadata.written_versions import as_written, each_as_written, written_version

TOPIC = uuid.UUID(int=7)
DIRECTORY = uuid.UUID(int=9)


def partition_record() -> PartitionRecordV2:
    return PartitionRecordV2(partition_id=i32(0), topic_id=TOPIC, replicas=(BrokerId(1), BrokerId(2)),
                             isr=(i32(1), i32(2)), leader=BrokerId(1), leader_epoch=i32(0), partition_epoch=i32(0),
                             directories=(DIRECTORY, DIRECTORY))


def broker_record() -> RegisterBrokerRecordV3:
    return RegisterBrokerRecordV3(broker_id=BrokerId(4), incarnation_id=uuid.UUID(int=1), broker_epoch=i64(10),
                                  end_points=(BrokerEndpointV3(name="PLAINTEXT", host="h", port=9092,
                                                               security_protocol=0),),
                                  features=(), rack=None, fenced=True, in_controlled_shutdown=False,
                                  log_dirs=(DIRECTORY,))


@pytest.mark.parametrize(("level", "version"), [(7, 0), (16, 0), (17, 1), (22, 1), (23, 2), (27, 2)])
def test_partition_records_follow_directory_and_elr_gates(level, version):
    assert written_version(partition_record(), level) == version
    change = PartitionChangeRecordV2(partition_id=i32(0), topic_id=TOPIC, isr=(i32(1),))
    assert written_version(change, level) == version


@pytest.mark.parametrize(("level", "version"), [(7, 1), (8, 2), (16, 2), (17, 3), (27, 3)])
def test_register_broker_record_follows_kafkas_gates(level, version):
    assert written_version(broker_record(), level) == version


def test_broker_registration_change_version_follows_the_kind_of_change():
    """ReplicationControlManager: (un)fencing at version 0, controlled shutdown at 1, log directories at 2."""
    fence = BrokerRegistrationChangeRecordV2(broker_id=BrokerId(1), broker_epoch=i64(5), fenced=i8(1))
    shutdown = BrokerRegistrationChangeRecordV2(broker_id=BrokerId(1), broker_epoch=i64(5), in_controlled_shutdown=i8(1))
    dirs = BrokerRegistrationChangeRecordV2(broker_id=BrokerId(1), broker_epoch=i64(5), log_dirs=(DIRECTORY,))
    assert [written_version(r, 27) for r in (fence, shutdown, dirs)] == [0, 1, 2]


def test_lowered_record_drops_only_what_the_version_lacks():
    lowered = as_written(partition_record(), 7)
    assert int(lowered.__version__) == 0 and not hasattr(lowered, "directories")
    assert (lowered.replicas, lowered.isr, lowered.leader) == ((1, 2), (1, 2), 1)
    # The bytes carry Kafka's version in the frame and decode back to the same fields.
    value = encode_metadata_record(lowered)
    assert value[:3] == bytes([1, 3, 0])  # frame version 1, PartitionRecord (api key 3), version 0
    assert decode_metadata_record(value) == lowered
    broker = as_written(broker_record(), 8)
    assert int(broker.__version__) == 2 and broker.end_points[0].name == "PLAINTEXT"


def test_records_kafka_writes_at_version_0_are_unchanged():
    topic = TopicRecordV0(name="t", topic_id=TOPIC)
    assert as_written(topic, 27) is topic
    assert list(each_as_written([topic, partition_record()], None))[1].__version__ == 2  # no image: unchanged
