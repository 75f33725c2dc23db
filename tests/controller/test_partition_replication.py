"""ReplicationControl replay: topics by name and id, the broker->ISR and leader indexes, snapshots, bad records."""

import pytest
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i8, i32

from pykraft.records.metadata.schema.no_op_record import NoOpRecordV0
from pykraft.records.metadata.schema.partition_change_record import PartitionChangeRecordV0
from pykraft.records.metadata.schema.partition_record import PartitionRecordV0
from pykraft.records.metadata.schema.remove_topic_record import RemoveTopicRecordV0
from pykraft.records.metadata.schema.topic_record import TopicRecordV0
from pykraft.controller.replication import MetadataReplayError

from .partition_helpers import add_partition, apply, new_control, topic_id

T1, T2 = topic_id(1), topic_id(2)


def test_topic_record_registers_the_topic_by_name_and_id():
    control = new_control()
    control.replay(TopicRecordV0(name=TopicName("orders"), topic_id=T1))
    assert control.topics_by_name == {"orders": T1}
    assert control.topic_name(T1) == "orders" and control.topic_count() == 1


def test_isr_and_leader_indexes_follow_partition_changes():
    control = new_control()
    add_partition(control, T1, 0, (1, 2, 3), leader=1)
    add_partition(control, T1, 1, (2, 3, 1), leader=2)
    assert control.partitions_with_broker_in_isr(1) == [(T1, 0), (T1, 1)]
    assert (control.partitions_led_by(1), control.partitions_led_by(2)) == (1, 1)
    control.replay(PartitionChangeRecordV0(partition_id=i32(0), topic_id=T1, isr=(BrokerId(2), BrokerId(3)),
                                           leader=BrokerId(2)))
    assert control.partitions_with_broker_in_isr(1) == [(T1, 1)]
    assert (control.partitions_led_by(1), control.partitions_led_by(2)) == (0, 2)


def test_leaderless_partitions_count_as_offline():
    control = new_control()
    add_partition(control, T1, 0, (1, 2), leader=1)
    assert control.offline_partition_count() == 0
    control.replay(PartitionChangeRecordV0(partition_id=i32(0), topic_id=T1, leader=BrokerId(-1)))
    assert control.offline_partition_count() == 1 and control.leaderless_partitions() == [(T1, 0)]
    assert control.partitions_led_by(-1) == 0  # "no leader" is not a broker


def test_remove_topic_drops_its_partitions_from_every_index():
    control = new_control()
    add_partition(control, T1, 0, (1, 2), leader=1, name="a")
    add_partition(control, T2, 0, (1, 2), isr=(1,), leader=-1, name="b")
    control.replay(RemoveTopicRecordV0(topic_id=T2))
    assert control.topics_by_name == {"a": T1}
    assert control.partitions_with_broker_in_isr(1) == [(T1, 0)]
    assert control.offline_partition_count() == 0 and control.partition_count() == 1


def test_a_full_partition_record_for_an_existing_partition_replaces_it_and_its_index_entries():
    control = new_control()
    add_partition(control, T1, 0, (1, 2), leader=1)
    add_partition(control, T1, 0, (3, 4), leader=4)
    assert control.partitions_with_broker_in_isr(1) == []
    assert control.partitions_led_by(4) == 1 and control.partition_count() == 1


def test_preferred_replica_imbalance_counts_partitions_not_led_by_their_first_replica():
    control = new_control()
    add_partition(control, T1, 0, (1, 2), leader=1)
    add_partition(control, T1, 1, (1, 2), leader=2)
    add_partition(control, T1, 2, (1, 2), isr=(1,), leader=-1)
    assert control.imbalanced_partitions() == [(T1, 1), (T1, 2)]
    assert control.preferred_replica_imbalance_count() == 2


def test_snapshot_records_rebuild_an_identical_image():
    control = new_control()
    add_partition(control, T1, 1, (1, 2), leader=2, name="b", leader_epoch=3, partition_epoch=7)
    add_partition(control, T1, 0, (2, 1), isr=(2,), name="b", recovery=1)
    add_partition(control, T2, 0, (3,), name="a", removing=(), adding=())
    records = list(control.snapshot_records())
    assert [type(r).__name__ for r in records] == ["TopicRecordV0", "PartitionRecordV2", "PartitionRecordV2",
                                                   "TopicRecordV0", "PartitionRecordV2"]
    assert [int(r.partition_id) for r in records if hasattr(r, "partition_id")] == [0, 1, 0]
    rebuilt = new_control()
    apply(rebuilt, records)
    assert list(rebuilt.snapshot_records()) == records
    assert rebuilt.partitions_with_broker_in_isr(2) == control.partitions_with_broker_in_isr(2)


@pytest.mark.parametrize("record", [
    PartitionRecordV0(partition_id=i32(0), topic_id=topic_id(99), replicas=(BrokerId(1),), isr=(i32(1),),
                      leader=BrokerId(1)),
    PartitionChangeRecordV0(partition_id=i32(5), topic_id=topic_id(1), isr=(BrokerId(1),)),
    PartitionChangeRecordV0(partition_id=i32(0), topic_id=topic_id(1), leader_recovery_state=i8(9)),
    RemoveTopicRecordV0(topic_id=topic_id(99)),
    TopicRecordV0(name=TopicName("existing"), topic_id=topic_id(50)),
], ids=["partition-of-unknown-topic", "change-of-unknown-partition", "bad-recovery-state", "remove-unknown",
        "duplicate-name"])
def test_a_record_that_does_not_fit_raises_replay_error_and_leaves_the_image_unchanged(record):
    control = new_control()
    add_partition(control, T1, 0, (1, 2), leader=1, name="existing")
    before = list(control.snapshot_records())
    with pytest.raises(MetadataReplayError):
        control.replay(record)
    assert list(control.snapshot_records()) == before
    assert control.partitions_with_broker_in_isr(1) == [(T1, 0)]


def test_records_of_other_managers_are_a_type_error():
    with pytest.raises(TypeError):
        new_control().replay(NoOpRecordV0())
