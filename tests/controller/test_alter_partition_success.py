"""AlterPartition that passes validation: the record written, the answer echoed, many partitions per request,
NEW_LEADER_ELECTED on a completed reassignment, and the RECOVERING -> RECOVERED report."""

from kio.schema.alter_partition.v2 import response as response_v2
from kio.schema.alter_partition.v3 import response as response_v3
from kio.schema.alter_partition.v3 import request as ap_v3
from kio.schema.types import BrokerId
from kio.static.primitive import i8, i32, i64

from pykraft.controller.partitions import LeaderRecoveryState
from pykraft.protocol.errors import ErrorCode

from .partition_helpers import add_partition, alter_v2, alter_v3, apply, brokers, epoch_of, new_control, topic_id

T1, T2 = topic_id(1), topic_id(2)
ALL = brokers(1, 2, 3, 4)


def test_isr_expansion_writes_one_record_and_echoes_the_state_it_will_produce():
    control = new_control()
    add_partition(control, T1, 0, (1, 2, 3), isr=(1, 2), leader=1, leader_epoch=5, partition_epoch=8)
    result = control.handle_alter_partition(alter_v3(1, T1, [(0, 5, 8, (1, 2, 3))]), 3, ALL)
    (record,) = result.records
    assert record.isr == (1, 2, 3) and record.leader == -2
    assert isinstance(result.response, response_v3.AlterPartitionResponse)
    assert result.response.error_code == ErrorCode.NONE
    (topic,) = result.response.topics
    assert topic.topic_id == T1
    (answer,) = topic.partitions
    assert (answer.error_code, answer.leader_id, answer.leader_epoch, answer.partition_epoch) == (ErrorCode.NONE, 1, 5, 9)
    assert answer.isr == (1, 2, 3) and answer.leader_recovery_state == 0
    apply(control, result)
    p = control.partition(T1, 0)
    assert (p.isr, p.leader_epoch, p.partition_epoch) == ((1, 2, 3), 5, 9)


def test_v2_request_gets_a_v2_response():
    control = new_control()
    add_partition(control, T1, 0, (1, 2), isr=(1, 2), leader=1)
    result = control.handle_alter_partition(alter_v2(1, T1, [(0, 0, 0, (1,))]), 2, ALL)
    assert isinstance(result.response, response_v2.AlterPartitionResponse)
    (record,) = result.records
    assert record.isr == (1,)
    assert result.response.topics[0].partitions[0].isr == (1,)


def test_unchanged_isr_writes_nothing_and_echoes_the_current_state():
    control = new_control()
    add_partition(control, T1, 0, (1, 2), leader=1, leader_epoch=2, partition_epoch=3)
    result = control.handle_alter_partition(alter_v3(1, T1, [(0, 2, 3, (1, 2))]), 3, ALL)
    assert result.records == ()
    answer = result.response.topics[0].partitions[0]
    assert (answer.error_code, answer.partition_epoch, answer.isr) == (ErrorCode.NONE, 3, (1, 2))


def test_each_partition_of_a_multi_topic_request_is_answered_on_its_own():
    control = new_control()
    add_partition(control, T1, 0, (1, 2), isr=(1,), leader=1)
    add_partition(control, T1, 1, (1, 3), isr=(1,), leader=1)
    add_partition(control, T2, 0, (1, 2), isr=(1,), leader=1)
    request = ap_v3.AlterPartitionRequest(broker_id=BrokerId(1), broker_epoch=i64(epoch_of(1)), topics=(
        ap_v3.TopicData(topic_id=T1, partitions=(
            _partition(0, 0, 0, 1, 2), _partition(1, 0, 0, 1, 3), _partition(7, 0, 0, 1))),
        ap_v3.TopicData(topic_id=T2, partitions=(_partition(0, 3, 0, 1, 2),)),
        ap_v3.TopicData(topic_id=topic_id(9), partitions=(_partition(0, 0, 0, 1),)),
    ))
    result = control.handle_alter_partition(request, 3, brokers(1, 2, 3, fenced=[3]))
    codes = [[p.error_code for p in t.partitions] for t in result.response.topics]
    assert codes == [[ErrorCode.NONE, ErrorCode.INELIGIBLE_REPLICA, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION],
                     [ErrorCode.NOT_CONTROLLER], [ErrorCode.UNKNOWN_TOPIC_ID]]
    assert [(r.topic_id, r.partition_id, r.isr) for r in result.records] == [(T1, 0, (1, 2))]


def test_completed_reassignment_that_drops_the_requester_answers_new_leader_elected_and_still_writes():
    control = new_control()
    add_partition(control, T1, 0, (1, 2, 3, 4), isr=(1, 2, 3), leader=1, removing=(1,), adding=(4,))
    result = control.handle_alter_partition(alter_v3(1, T1, [(0, 0, 0, (1, 2, 3, 4))]), 3, ALL)
    assert result.response.topics[0].partitions[0].error_code == ErrorCode.NEW_LEADER_ELECTED
    (record,) = result.records
    assert record.leader == 2 and record.replicas == (2, 3, 4)
    apply(control, result)
    p = control.partition(T1, 0)
    assert (p.leader, p.replicas, p.isr, p.removing_replicas, p.adding_replicas) == (2, (2, 3, 4), (2, 3, 4), (), ())


def test_completed_reassignment_keeping_the_leader_succeeds_with_a_bumped_leader_epoch():
    control = new_control()
    add_partition(control, T1, 0, (1, 2, 3, 4), isr=(1, 2, 3), leader=1, removing=(3,), adding=(4,))
    result = control.handle_alter_partition(alter_v3(1, T1, [(0, 0, 0, (1, 2, 3, 4))]), 3, ALL)
    answer = result.response.topics[0].partitions[0]
    assert answer.error_code == ErrorCode.NONE
    assert (answer.leader_id, answer.leader_epoch, answer.isr) == (1, 1, (1, 2, 4))


def test_recovering_leader_reports_recovered():
    control = new_control()
    add_partition(control, T1, 0, (1, 2), isr=(1,), leader=1, recovery=1)
    result = control.handle_alter_partition(alter_v3(1, T1, [(0, 0, 0, (1,), 0)]), 3, ALL)
    (record,) = result.records
    assert record.leader_recovery_state == 0 and record.isr is None
    apply(control, result)
    assert control.partition(T1, 0).leader_recovery_state is LeaderRecoveryState.RECOVERED


def test_recovering_leader_may_restate_recovering_with_itself_alone():
    control = new_control()
    add_partition(control, T1, 0, (1, 2), isr=(1,), leader=1, recovery=1)
    result = control.handle_alter_partition(alter_v3(1, T1, [(0, 0, 0, (1,), 1)]), 3, ALL)
    assert result.records == ()
    assert result.response.topics[0].partitions[0].leader_recovery_state == 1


def _partition(index, leader_epoch, partition_epoch, *isr):
    return ap_v3.PartitionData(partition_index=i32(index), leader_epoch=i32(leader_epoch),
                               partition_epoch=i32(partition_epoch), leader_recovery_state=i8(0),
                               new_isr_with_epochs=tuple(ap_v3.BrokerState(broker_id=BrokerId(b), broker_epoch=i64(-1))
                                                         for b in isr))
