"""ElectLeaders v2 (PREFERRED and UNCLEAN) on the controller."""

from kio.schema.elect_leaders.v2 import request as el
from kio.schema.types import TopicName
from kio.static.primitive import i8, i32

from pykraft.controller.partitions import LeaderRecoveryState
from pykraft.protocol.codec import encode_response
from pykraft.protocol.errors import ErrorCode

from .partition_helpers import add_partition, apply, brokers, new_control, topic_id

T1 = topic_id(1)
PREFERRED, UNCLEAN = 0, 1


def request(election_type, partitions=None):
    topic_partitions = None if partitions is None else tuple(
        el.TopicPartitions(topic=TopicName(t), partitions=tuple(i32(p) for p in ps)) for t, ps in partitions.items())
    return el.ElectLeadersRequest(election_type=i8(election_type), topic_partitions=topic_partitions)


def codes(result):
    return {(t.topic, int(p.partition_id)): ErrorCode(p.error_code)
            for t in result.response.replica_election_results for p in t.partition_result}


def control_with(*partitions):
    control = new_control()
    for p, (replicas, isr, leader) in enumerate(partitions):
        add_partition(control, T1, p, replicas, isr=isr, leader=leader, name="t")
    return control


def test_preferred_election_moves_leadership_to_the_first_replica():
    control = control_with(((1, 2), (1, 2), 2))
    result = control.handle_elect_leaders(request(PREFERRED, {"t": [0]}), brokers(1, 2))
    assert codes(result) == {("t", 0): ErrorCode.NONE}
    (record,) = result.records
    assert record.leader == 1
    encode_response(1, result.response)


def test_preferred_election_already_balanced_is_election_not_needed():
    result = control_with(((1, 2), (1, 2), 1)).handle_elect_leaders(request(PREFERRED, {"t": [0]}), brokers(1, 2))
    assert codes(result) == {("t", 0): ErrorCode.ELECTION_NOT_NEEDED} and result.records == ()


def test_preferred_replica_that_cannot_lead_is_preferred_leader_not_available():
    control = control_with(((1, 2), (1, 2), 2), ((1, 2), (2,), 2))
    result = control.handle_elect_leaders(request(PREFERRED, {"t": [0, 1]}), brokers(1, 2, fenced=[1]))
    assert codes(result) == {("t", 0): ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
                             ("t", 1): ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE}
    assert result.records == ()


def test_preferred_election_on_a_leaderless_partition_elects_any_valid_isr_member():
    control = control_with(((1, 2), (1, 2), -1))
    result = control.handle_elect_leaders(request(PREFERRED, {"t": [0]}), brokers(1, 2, shutdown=[1]))
    assert codes(result) == {("t", 0): ErrorCode.NONE} and result.records[0].leader == 2


def test_unclean_election_on_a_partition_with_a_leader_is_election_not_needed():
    result = control_with(((1, 2), (1,), 1)).handle_elect_leaders(request(UNCLEAN, {"t": [0]}), brokers(1, 2))
    assert codes(result) == {("t", 0): ErrorCode.ELECTION_NOT_NEEDED}


def test_unclean_election_elects_outside_the_isr_and_marks_recovering():
    control = control_with(((1, 2), (1,), -1))
    result = control.handle_elect_leaders(request(UNCLEAN, {"t": [0]}), brokers(1, 2, fenced=[1]))
    assert codes(result) == {("t", 0): ErrorCode.NONE}
    apply(control, result)
    p = control.partition(T1, 0)
    assert (p.leader, p.isr, p.leader_recovery_state) == (2, (2,), LeaderRecoveryState.RECOVERING)


def test_unclean_election_with_no_acceptable_replica_is_eligible_leaders_not_available():
    result = control_with(((1, 2), (1,), -1)).handle_elect_leaders(request(UNCLEAN, {"t": [0]}),
                                                                   brokers(1, 2, fenced=[1, 2]))
    assert codes(result) == {("t", 0): ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE}


def test_unknown_topic_and_partition_are_unknown_topic_or_partition():
    result = control_with(((1, 2), (1, 2), 2)).handle_elect_leaders(request(PREFERRED, {"t": [5], "nope": [0]}),
                                                                     brokers(1, 2))
    assert codes(result) == {("t", 5): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                             ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}


def test_all_partitions_reports_only_the_ones_that_needed_an_election():
    control = control_with(((1, 2), (1, 2), 1), ((1, 2), (1, 2), 2), ((2, 1), (2, 1), 2))
    result = control.handle_elect_leaders(request(PREFERRED), brokers(1, 2))
    assert codes(result) == {("t", 1): ErrorCode.NONE}
    assert [r.partition_id for r in result.records] == [1]


def test_unknown_election_type_is_a_top_level_invalid_request():
    result = control_with(((1, 2), (1, 2), 1)).handle_elect_leaders(request(7), brokers(1, 2))
    assert result.response.error_code == ErrorCode.INVALID_REQUEST and result.records == ()


def test_v0_has_no_election_type_and_asks_for_preferred_elections_of_all_or_named_partitions():
    """Issue 12: v0 (no ElectionType field, Kafka's schema: preferred) raised AttributeError in the controller."""
    from kio.schema.elect_leaders.v0 import request as el0

    control = control_with(((1, 2), (1, 2), 2), ((1, 2), (1, 2), 1))
    every = control.handle_elect_leaders(el0.ElectLeadersRequest(topic_partitions=None), brokers(1, 2))
    assert codes(every) == {("t", 0): ErrorCode.NONE} and every.records[0].leader == 1
    named = control.handle_elect_leaders(el0.ElectLeadersRequest(topic_partitions=(
        el0.TopicPartitions(topic=TopicName("t"), partitions=(i32(0), i32(1))),)), brokers(1, 2))
    assert codes(named) == {("t", 0): ErrorCode.NONE, ("t", 1): ErrorCode.ELECTION_NOT_NEEDED}


def test_v1_reads_its_election_type():
    from kio.schema.elect_leaders.v1 import request as el1

    control = control_with(((1, 2), (1,), 1))
    unclean = el1.ElectLeadersRequest(election_type=i8(UNCLEAN), topic_partitions=(
        el1.TopicPartitions(topic=TopicName("t"), partitions=(i32(0),)),))
    assert codes(control.handle_elect_leaders(unclean, brokers(1, 2))) == {("t", 0): ErrorCode.ELECTION_NOT_NEEDED}
