"""PartitionRegistration: built from PartitionRecord v0-v2, merged with PartitionChangeRecord v0-v2."""

import uuid

import pytest
from kio.schema.types import BrokerId
from kio.static.primitive import i8, i32

from pykraft.controller.partitions import (
    DIRECTORY_MIGRATING,
    DIRECTORY_UNASSIGNED,
    LeaderRecoveryState,
    PartitionRecordError,
    PartitionRegistration,
)
from pykraft.records.metadata.frame import decode_metadata_record, encode_metadata_record
from pykraft.records.metadata.schema.partition_change_record import (
    PartitionChangeRecordV0,
    PartitionChangeRecordV1,
    PartitionChangeRecordV2,
)
from pykraft.records.metadata.schema.partition_record import PartitionRecordV0, PartitionRecordV1, PartitionRecordV2

TID = uuid.UUID(int=42)
DIR_A, DIR_B, DIR_C = (uuid.UUID(int=(9 << 64) | n) for n in (1, 2, 3))


def ids(*values):
    return tuple(BrokerId(v) for v in values)


def base() -> PartitionRegistration:
    return PartitionRegistration(replicas=(1, 2, 3), directories=(DIR_A, DIR_B, DIR_C), isr=(1, 2, 3), leader=1,
                                 leader_epoch=5, partition_epoch=9)


def test_partition_record_v0_without_directories_marks_every_replica_migrating():
    record = PartitionRecordV0(partition_id=i32(0), topic_id=TID, replicas=ids(1, 2), isr=(i32(1), i32(2)),
                               leader=BrokerId(2), leader_epoch=i32(3), partition_epoch=i32(4))
    reg = PartitionRegistration.from_record(record)
    assert reg.replicas == (1, 2) and reg.isr == (1, 2) and reg.leader == 2
    assert (reg.leader_epoch, reg.partition_epoch) == (3, 4)
    assert reg.directories == (DIRECTORY_MIGRATING, DIRECTORY_MIGRATING)
    assert reg.leader_recovery_state is LeaderRecoveryState.RECOVERED


def test_partition_record_v1_keeps_directories_and_recovery_state():
    record = PartitionRecordV1(partition_id=i32(0), topic_id=TID, replicas=ids(1, 2), isr=(i32(1),),
                               leader=BrokerId(1), leader_recovery_state=i8(1), leader_epoch=i32(0),
                               partition_epoch=i32(0), directories=(DIR_A, DIR_B))
    reg = PartitionRegistration.from_record(record)
    assert reg.directories == (DIR_A, DIR_B)
    assert reg.leader_recovery_state is LeaderRecoveryState.RECOVERING


def test_partition_record_v2_keeps_elr_and_last_known_elr_when_present():
    record = PartitionRecordV2(partition_id=i32(0), topic_id=TID, replicas=ids(1, 2, 3), isr=(i32(1),),
                               leader=BrokerId(1), leader_epoch=i32(0), partition_epoch=i32(0),
                               directories=(DIR_A, DIR_B, DIR_C), eligible_leader_replicas=ids(2),
                               last_known_elr=ids(3))
    reg = PartitionRegistration.from_record(record)
    assert (reg.elr, reg.last_known_elr) == ((2,), (3,))


def test_unknown_recovery_state_or_mismatched_directories_is_a_record_error():
    bad_state = PartitionRecordV0(partition_id=i32(0), topic_id=TID, replicas=ids(1), isr=(i32(1),),
                                  leader=BrokerId(1), leader_recovery_state=i8(7))
    with pytest.raises(PartitionRecordError):
        PartitionRegistration.from_record(bad_state)
    bad_dirs = PartitionRecordV1(partition_id=i32(0), topic_id=TID, replicas=ids(1, 2), isr=(i32(1),),
                                 leader=BrokerId(1), directories=(DIR_A,))
    with pytest.raises(PartitionRecordError):
        PartitionRegistration.from_record(bad_dirs)


def test_change_record_with_only_sentinels_changes_nothing_but_the_partition_epoch():
    merged = base().merge(PartitionChangeRecordV0(partition_id=i32(0), topic_id=TID))
    assert merged == PartitionRegistration(**{**_fields(base()), "partition_epoch": 10})


def test_isr_change_without_leader_field_keeps_the_leader_epoch():
    merged = base().merge(PartitionChangeRecordV0(partition_id=i32(0), topic_id=TID, isr=ids(1, 2)))
    assert merged.isr == (1, 2)
    assert (merged.leader, merged.leader_epoch, merged.partition_epoch) == (1, 5, 10)


def test_setting_the_leader_field_bumps_the_leader_epoch_even_to_the_same_leader():
    same = base().merge(PartitionChangeRecordV1(partition_id=i32(0), topic_id=TID, leader=BrokerId(1)))
    assert (same.leader, same.leader_epoch) == (1, 6)
    gone = base().merge(PartitionChangeRecordV1(partition_id=i32(0), topic_id=TID, leader=BrokerId(-1)))
    assert (gone.leader, gone.leader_epoch, gone.has_leader) == (-1, 6, False)


def test_recovery_state_minus_one_is_no_change_and_other_values_apply():
    recovering = base().merge(PartitionChangeRecordV0(partition_id=i32(0), topic_id=TID, leader_recovery_state=i8(1)))
    assert recovering.leader_recovery_state is LeaderRecoveryState.RECOVERING
    kept = recovering.merge(PartitionChangeRecordV0(partition_id=i32(0), topic_id=TID))
    assert kept.leader_recovery_state is LeaderRecoveryState.RECOVERING
    with pytest.raises(PartitionRecordError):
        base().merge(PartitionChangeRecordV0(partition_id=i32(0), topic_id=TID, leader_recovery_state=i8(3)))


def test_replica_change_without_directories_keeps_known_ones_and_leaves_new_ones_unassigned():
    merged = base().merge(PartitionChangeRecordV1(partition_id=i32(0), topic_id=TID, replicas=ids(3, 1, 4)))
    assert merged.replicas == (3, 1, 4)
    assert merged.directories == (DIR_C, DIR_A, DIRECTORY_UNASSIGNED)


def test_change_record_directories_replace_the_old_ones():
    merged = base().merge(PartitionChangeRecordV1(partition_id=i32(0), topic_id=TID, directories=(DIR_C, DIR_B, DIR_A)))
    assert merged.directories == (DIR_C, DIR_B, DIR_A)


def test_change_record_v2_sets_and_clears_elr():
    with_elr = base().merge(PartitionChangeRecordV2(partition_id=i32(0), topic_id=TID, eligible_leader_replicas=ids(2),
                                                    last_known_elr=ids(3)))
    assert (with_elr.elr, with_elr.last_known_elr) == ((2,), (3,))
    untouched = with_elr.merge(PartitionChangeRecordV2(partition_id=i32(0), topic_id=TID, isr=ids(1)))
    assert (untouched.elr, untouched.last_known_elr) == ((2,), (3,))
    cleared = untouched.merge(PartitionChangeRecordV2(partition_id=i32(0), topic_id=TID, eligible_leader_replicas=(),
                                                      last_known_elr=()))
    assert (cleared.elr, cleared.last_known_elr) == ((), ())


def test_to_record_round_trips_through_the_wire():
    reg = PartitionRegistration(replicas=(4, 5), directories=(DIR_A, DIRECTORY_UNASSIGNED), isr=(5,), leader=5,
                                leader_recovery_state=LeaderRecoveryState.RECOVERING, leader_epoch=2,
                                partition_epoch=8, removing_replicas=(4,), adding_replicas=(), elr=(4,))
    decoded = decode_metadata_record(encode_metadata_record(reg.to_record(TID, 3)))
    assert decoded.partition_id == 3 and decoded.topic_id == TID
    assert PartitionRegistration.from_record(decoded) == reg


def _fields(reg: PartitionRegistration) -> dict:
    return {name: getattr(reg, name) for name in reg.__dataclass_fields__}
