"""AlterPartition: each check of reference §8.3, in order, and that the earlier check wins when two apply.

The partition under test: replicas [1, 2, 3], ISR [1, 2], leader 1, leader epoch 5, partition epoch 8.
"""

import pytest

from pykraft.protocol.errors import ErrorCode

from .partition_helpers import add_partition, alter_v2, alter_v3, brokers, epoch_of, new_control, topic_id

T1 = topic_id(1)
LE, PE = 5, 8


@pytest.fixture
def control():
    c = new_control()
    add_partition(c, T1, 0, (1, 2, 3), isr=(1, 2), leader=1, leader_epoch=LE, partition_epoch=PE)
    return c


ALL = brokers(1, 2, 3, 4)


def error_of(control, request, view=ALL, version=3) -> ErrorCode:
    result = control.handle_alter_partition(request, version, view)
    (topic,) = result.response.topics
    (partition,) = topic.partitions
    if partition.error_code != ErrorCode.NONE:
        assert result.records == ()
    return ErrorCode(partition.error_code)


# 1. broker epoch

def test_stale_requester_broker_epoch_is_a_top_level_error_with_no_records(control):
    result = control.handle_alter_partition(alter_v3(1, T1, [(0, LE, PE, (1, 2, 3))], broker_epoch=1), 3, ALL)
    assert result.response.error_code == ErrorCode.STALE_BROKER_EPOCH
    assert result.response.topics == () and result.records == ()


def test_unregistered_requester_gets_stale_broker_epoch(control):
    result = control.handle_alter_partition(alter_v3(1, T1, [(0, LE, PE, (1, 2))]), 3, brokers(2, 3))
    assert result.response.error_code == ErrorCode.STALE_BROKER_EPOCH


def test_stale_broker_epoch_wins_over_an_unknown_topic(control):
    result = control.handle_alter_partition(alter_v3(1, topic_id(9), [(0, LE, PE, (1, 2))], broker_epoch=3), 3, ALL)
    assert result.response.error_code == ErrorCode.STALE_BROKER_EPOCH


# 2. topic and partition

@pytest.mark.parametrize("version", [2, 3])
def test_unknown_topic_id_is_unknown_topic_id(control, version):
    build = alter_v3 if version == 3 else alter_v2
    assert error_of(control, build(1, topic_id(9), [(0, LE, PE, (1, 2))]), version=version) == ErrorCode.UNKNOWN_TOPIC_ID


def test_unknown_partition_is_unknown_topic_or_partition(control):
    assert error_of(control, alter_v3(1, T1, [(4, LE, PE, (1, 2))])) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_unknown_partition_wins_over_stale_epochs(control):
    assert error_of(control, alter_v3(1, T1, [(4, LE - 1, PE - 1, (1, 2))])) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


# 3. epochs ahead of ours

def test_leader_epoch_ahead_of_the_controller_is_not_controller(control):
    assert error_of(control, alter_v3(1, T1, [(0, LE + 1, PE, (1, 2, 3))])) == ErrorCode.NOT_CONTROLLER


def test_partition_epoch_ahead_of_the_controller_is_not_controller(control):
    assert error_of(control, alter_v3(1, T1, [(0, LE, PE + 1, (1, 2, 3))])) == ErrorCode.NOT_CONTROLLER


def test_partition_epoch_ahead_wins_over_a_stale_leader_epoch(control):
    assert error_of(control, alter_v3(1, T1, [(0, LE - 1, PE + 1, (1, 2, 3))])) == ErrorCode.NOT_CONTROLLER


def test_not_controller_wins_over_a_requester_that_is_not_the_leader(control):
    assert error_of(control, alter_v3(2, T1, [(0, LE + 1, PE, (1, 2))])) == ErrorCode.NOT_CONTROLLER


# 4. leader epoch behind ours

def test_stale_leader_epoch_is_fenced_leader_epoch(control):
    assert error_of(control, alter_v3(1, T1, [(0, LE - 1, PE, (1, 2, 3))])) == ErrorCode.FENCED_LEADER_EPOCH


def test_fenced_leader_epoch_wins_over_a_requester_that_is_not_the_leader(control):
    assert error_of(control, alter_v3(2, T1, [(0, LE - 1, PE, (1, 2))])) == ErrorCode.FENCED_LEADER_EPOCH


# 5. requester must lead

def test_requester_that_is_not_the_leader_is_invalid_request(control):
    assert error_of(control, alter_v3(2, T1, [(0, LE, PE, (1, 2))])) == ErrorCode.INVALID_REQUEST


def test_not_the_leader_wins_over_a_stale_partition_epoch(control):
    assert error_of(control, alter_v3(2, T1, [(0, LE, PE - 1, (1, 2))])) == ErrorCode.INVALID_REQUEST


# 6. partition epoch behind ours

def test_stale_partition_epoch_is_invalid_update_version(control):
    assert error_of(control, alter_v3(1, T1, [(0, LE, PE - 1, (1, 2, 3))])) == ErrorCode.INVALID_UPDATE_VERSION


def test_invalid_update_version_wins_over_a_bad_isr_and_an_ineligible_replica(control):
    view = brokers(1, 2, 3, fenced=[3])
    assert error_of(control, alter_v3(1, T1, [(0, LE, PE - 1, (1, 3, 3))]), view) == ErrorCode.INVALID_UPDATE_VERSION


# 7. the new ISR itself

@pytest.mark.parametrize("isr", [(1, 2, 4), (1, 2, 2), (2, 3)], ids=["not-a-replica", "duplicate", "without-leader"])
def test_malformed_new_isr_is_invalid_request(control, isr):
    assert error_of(control, alter_v3(1, T1, [(0, LE, PE, isr)])) == ErrorCode.INVALID_REQUEST


def test_malformed_isr_wins_over_an_ineligible_replica(control):
    view = brokers(1, 2, 3, 4, fenced=[3])
    assert error_of(control, alter_v3(1, T1, [(0, LE, PE, (1, 3, 4))]), view) == ErrorCode.INVALID_REQUEST


# 8. leader recovery state

def test_recovering_with_more_than_one_isr_member_is_invalid_request(control):
    assert error_of(control, alter_v3(1, T1, [(0, LE, PE, (1, 2), 1)])) == ErrorCode.INVALID_REQUEST


def test_recovered_partition_cannot_go_back_to_recovering(control):
    assert error_of(control, alter_v3(1, T1, [(0, LE, PE, (1,), 1)])) == ErrorCode.INVALID_REQUEST


def test_unknown_recovery_state_value_is_invalid_request(control):
    assert error_of(control, alter_v3(1, T1, [(0, LE, PE, (1, 2), 5)])) == ErrorCode.INVALID_REQUEST


def test_bad_recovery_state_wins_over_an_ineligible_replica(control):
    view = brokers(1, 2, 3, fenced=[2])
    assert error_of(control, alter_v3(1, T1, [(0, LE, PE, (1, 2), 1)]), view) == ErrorCode.INVALID_REQUEST


# 9. KIP-841 eligibility of every new ISR member

@pytest.mark.parametrize("view", [
    brokers(1, 2, 3, fenced=[3]), brokers(1, 2, 3, shutdown=[3]), brokers(1, 2),
], ids=["fenced", "controlled-shutdown", "unregistered"])
@pytest.mark.parametrize("version", [2, 3])
def test_ineligible_new_isr_member_is_ineligible_replica(control, view, version):
    build = alter_v3 if version == 3 else alter_v2
    assert error_of(control, build(1, T1, [(0, LE, PE, (1, 2, 3))]), view, version) == ErrorCode.INELIGIBLE_REPLICA


def test_v3_member_with_another_incarnations_broker_epoch_is_ineligible(control):
    request = alter_v3(1, T1, [(0, LE, PE, (1, 2, (3, epoch_of(3) - 50)))])
    assert error_of(control, request) == ErrorCode.INELIGIBLE_REPLICA


def test_v3_member_epoch_minus_one_skips_the_epoch_check(control):
    assert error_of(control, alter_v3(1, T1, [(0, LE, PE, (1, 2, (3, -1)))])) == ErrorCode.NONE
    assert error_of(control, alter_v3(1, T1, [(0, LE, PE, (1, 2, (3, epoch_of(3))))])) == ErrorCode.NONE


def test_an_existing_member_that_became_ineligible_also_blocks_a_shrink(control):
    # The leader keeps 2 in its proposal, but 2 is shutting down: the controller refuses the whole proposal.
    view = brokers(1, 2, 3, shutdown=[2])
    assert error_of(control, alter_v3(1, T1, [(0, LE, PE, (1, 2))]), view) == ErrorCode.INELIGIBLE_REPLICA
