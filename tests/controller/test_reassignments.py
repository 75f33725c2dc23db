"""AlterPartitionReassignments / ListPartitionReassignments decisions on the controller's partition image: the target
computation, completion, cancellation, a new target replacing an ongoing one, and every per-partition error."""

from __future__ import annotations

from kio.schema.alter_partition_reassignments.v0 import request as alter_v0
from kio.schema.alter_partition_reassignments.v1 import request as alter_v1
from kio.schema.list_partition_reassignments.v0 import request as list_v0
from kio.schema.types import BrokerId, TopicName
from kio.static.primitive import i32

from pykraft.controller import reassignments
from pykraft.controller.reassignments import QUORUM_TOPIC, reassignment_replicas, revert
from pykraft.protocol.errors import ErrorCode

from .partition_helpers import add_partition, alter_v3, apply, brokers, new_control, topic_id

T1, T2 = topic_id(1), topic_id(2)
ALL = brokers(1, 2, 3, 4, 5)


def alter(*topics: tuple[str, list[tuple[int, list[int] | None]]], allow_rf_change: bool | None = None):
    """topics: (name, [(partition, replicas or None to cancel), ...])."""
    module = alter_v0 if allow_rf_change is None else alter_v1
    entries = tuple(module.ReassignableTopic(name=TopicName(name), partitions=tuple(
        module.ReassignablePartition(partition_index=i32(p),
                                     replicas=None if r is None else tuple(BrokerId(b) for b in r))
        for p, r in parts)) for name, parts in topics)
    if allow_rf_change is None:
        return alter_v0.AlterPartitionReassignmentsRequest(topics=entries)
    return alter_v1.AlterPartitionReassignmentsRequest(topics=entries, allow_replication_factor_change=allow_rf_change)


def answers(result) -> list[list[tuple[int, ErrorCode, str | None]]]:
    return [[(p.partition_index, ErrorCode(p.error_code), p.error_message) for p in t.partitions]
            for t in result.response.responses]


def listed(control, topics=None) -> dict[tuple[str, int], tuple[tuple[int, ...], ...]]:
    request = list_v0.ListPartitionReassignmentsRequest(topics=topics)
    response = control.handle_list_reassignments(request).response
    assert response.error_code == ErrorCode.NONE
    return {(t.name, p.partition_index): (tuple(p.replicas), tuple(p.adding_replicas), tuple(p.removing_replicas))
            for t in response.topics for p in t.partitions}


def moving_topic(replicas=(1, 2, 3), **kw):
    control = new_control()
    add_partition(control, T1, 0, replicas, name="t", leader_epoch=3, partition_epoch=5, **kw)
    return control


def state(control, tid=T1, index=0):
    p = control.partition(tid, index)
    return p.replicas, p.isr, p.adding_replicas, p.removing_replicas, p.leader


# ---- target computation ------------------------------------------------------------------------------------------
def test_target_first_then_the_replicas_it_drops_adding_and_removing_ascending():
    assert reassignment_replicas((1, 2, 3), (2, 3, 4)) == ((2, 3, 4, 1), (4,), (1,))
    assert reassignment_replicas((3, 1, 2), (6, 5, 4)) == ((6, 5, 4, 1, 2, 3), (4, 5, 6), (1, 2, 3))
    assert reassignment_replicas((1, 2, 3), (3, 2, 1)) == ((3, 2, 1), (), ())


def test_starting_a_move_writes_the_union_and_keeps_leader_and_isr():
    control = moving_topic()
    result = control.handle_alter_reassignments(alter(("t", [(0, [2, 3, 4])])), ALL)
    assert answers(result) == [[(0, ErrorCode.NONE, None)]]
    (record,) = result.records
    assert (record.replicas, record.adding_replicas, record.removing_replicas) == ((2, 3, 4, 1), (4,), (1,))
    assert record.leader == -2 and record.isr is None  # no election, no leader epoch bump yet
    apply(control, result)
    assert state(control) == ((2, 3, 4, 1), (1, 2, 3), (4,), (1,), 1)
    assert control.partition(T1, 0).leader_epoch == 3
    assert listed(control) == {("t", 0): ((2, 3, 4, 1), (4,), (1,))}


def test_the_new_replica_joining_the_isr_completes_and_moves_the_leader_off_the_removed_one():
    control = moving_topic()
    apply(control, control.handle_alter_reassignments(alter(("t", [(0, [2, 3, 4])])), ALL))
    p = control.partition(T1, 0)
    done = control.handle_alter_partition(alter_v3(1, T1, [(0, p.leader_epoch, p.partition_epoch, (1, 2, 3, 4))]),
                                          3, ALL)
    assert done.response.topics[0].partitions[0].error_code == ErrorCode.NEW_LEADER_ELECTED
    apply(control, done)
    assert state(control) == ((2, 3, 4), (2, 3, 4), (), (), 2)
    assert control.partition(T1, 0).leader_epoch == 4
    assert listed(control) == {}


def test_a_lagging_target_replica_holds_completion_back_even_when_every_adding_one_is_in():
    # 1,2,3 -> 1,2,4 while 2 (a target replica, not an adding one) is out of the ISR.
    control = moving_topic(isr=(1, 3))
    apply(control, control.handle_alter_reassignments(alter(("t", [(0, [1, 2, 4])])), ALL))
    p = control.partition(T1, 0)
    joined = control.handle_alter_partition(alter_v3(1, T1, [(0, p.leader_epoch, p.partition_epoch, (1, 3, 4))]),
                                            3, ALL)
    apply(control, joined)
    assert state(control) == ((1, 2, 4, 3), (1, 3, 4), (4,), (3,), 1)
    p = control.partition(T1, 0)
    apply(control, control.handle_alter_partition(
        alter_v3(1, T1, [(0, p.leader_epoch, p.partition_epoch, (1, 3, 4, 2))]), 3, ALL))
    assert state(control) == ((1, 2, 4), (1, 4, 2), (), (), 1)


def test_reorder_and_shrink_complete_in_the_first_record():
    control = moving_topic()
    add_partition(control, T1, 1, (1, 2, 3), leader=1, leader_epoch=3)
    result = control.handle_alter_reassignments(alter(("t", [(0, [3, 2, 1]), (1, [2, 3])])), ALL)
    reorder, shrink = result.records
    assert reorder.replicas == (3, 2, 1) and reorder.leader == -2  # same replicas: no leader epoch bump
    assert (shrink.replicas, shrink.isr, shrink.leader) == ((2, 3), (2, 3), 2)
    assert shrink.adding_replicas is None and shrink.removing_replicas is None  # never entered a reassignment
    apply(control, result)
    assert state(control, index=0) == ((3, 2, 1), (1, 2, 3), (), (), 1)
    assert state(control, index=1) == ((2, 3), (2, 3), (), (), 2)
    assert listed(control) == {}


def test_the_current_assignment_as_target_writes_nothing():
    control = moving_topic()
    result = control.handle_alter_reassignments(alter(("t", [(0, [1, 2, 3])])), ALL)
    assert result.records == () and answers(result) == [[(0, ErrorCode.NONE, None)]]


def test_a_new_target_replaces_the_ongoing_one():
    control = moving_topic()
    apply(control, control.handle_alter_reassignments(alter(("t", [(0, [2, 3, 4])])), ALL))
    apply(control, control.handle_alter_reassignments(alter(("t", [(0, [2, 3, 5])])), ALL))
    # The ongoing adding replica 4 is now being removed as well.
    assert state(control) == ((2, 3, 5, 1, 4), (1, 2, 3), (5,), (1, 4), 1)


# ---- cancellation ------------------------------------------------------------------------------------------------
def test_cancelling_reverts_to_the_original_replicas():
    control = moving_topic()
    apply(control, control.handle_alter_reassignments(alter(("t", [(0, [4, 5, 3])])), ALL))
    p = control.partition(T1, 0)
    apply(control, control.handle_alter_partition(
        alter_v3(1, T1, [(0, p.leader_epoch, p.partition_epoch, (1, 2, 3, 4))]), 3, ALL))  # 4 caught up, 5 not
    assert state(control) == ((4, 5, 3, 1, 2), (1, 2, 3, 4), (4, 5), (1, 2), 1)
    result = control.handle_alter_reassignments(alter(("t", [(0, None)])), ALL)
    assert answers(result) == [[(0, ErrorCode.NONE, None)]]
    apply(control, result)
    assert state(control) == ((3, 1, 2), (1, 2, 3), (), (), 1)
    assert listed(control) == {}


def test_cancelling_nothing_is_no_reassignment_in_progress_without_a_message():
    control = moving_topic()
    result = control.handle_alter_reassignments(alter(("t", [(0, None)])), ALL)
    assert answers(result) == [[(0, ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, None)]] and result.records == ()


def test_a_revert_leaving_no_isr_needs_unclean_elections_on_the_topic():
    # Every in-sync replica is an adding one (the originals fell out): reverting needs an unclean election.
    partition = dict(replicas=(4, 1), isr=(4,), leader=4, adding=(4,), removing=(1,))
    refused = moving_topic(**partition)
    result = refused.handle_alter_reassignments(alter(("t", [(0, None)])), ALL)
    assert answers(result) == [[(0, ErrorCode.INVALID_REPLICA_ASSIGNMENT, "Unable to revert partition assignment "
                                 "for t:0 because it would require an unclean leader election.")]]
    control = new_control(unclean_election_enabled=lambda name: name == "t")
    add_partition(control, T1, 0, name="t", **partition)
    apply(control, control.handle_alter_reassignments(alter(("t", [(0, None)])), ALL))
    assert state(control) == ((1,), (1,), (), (), 1)


def test_revert_rules():
    add_partition(control := new_control(), T1, 0, (2, 3, 4, 1), isr=(1, 2, 4), adding=(4,), removing=(1,))
    assert revert(control.partition(T1, 0)) == ((2, 3, 1), (1, 2), False)
    add_partition(control, T1, 1, (4, 1), isr=(4,), adding=(4,), removing=(1,))
    assert revert(control.partition(T1, 1)) == ((1,), (1,), True)


# ---- errors --------------------------------------------------------------------------------------------------------
def test_bad_targets_get_kafkas_errors_and_the_good_ones_still_go_through():
    control = moving_topic()
    add_partition(control, T1, 1, (1, 2, 3))
    result = control.handle_alter_reassignments(alter(
        ("t", [(0, []), (1, [2, 2, 3]), (0, [1, -1, 2]), (1, [1, 2, 9]), (0, [2, 3, 4]), (7, [1, 2, 3])]),
        ("nope", [(0, [1, 2, 3])])), brokers(1, 2, 3, 4, 5))
    prefix = "The manual partition assignment includes "
    assert answers(result) == [
        [(0, ErrorCode.INVALID_REPLICA_ASSIGNMENT, prefix + "an empty replica list."),
         (1, ErrorCode.INVALID_REPLICA_ASSIGNMENT, prefix + "the broker 2 more than once."),
         (0, ErrorCode.INVALID_REPLICA_ASSIGNMENT, prefix + "broker -1, but no such broker is registered."),
         (1, ErrorCode.INVALID_REPLICA_ASSIGNMENT, prefix + "broker 9, but no such broker is registered."),
         (0, ErrorCode.NONE, None),
         (7, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "Unable to find partition t:7.")],
        [(0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "Unable to find a topic named nope.")]]
    assert [(r.partition_id, r.adding_replicas) for r in result.records] == [(0, (4,))]


def test_kafka_checks_registration_before_repeats_in_ascending_order():
    control = moving_topic()
    result = control.handle_alter_reassignments(alter(("t", [(0, [3, 9, 3])])), ALL)
    assert "broker 3 more than once" in answers(result)[0][0][2]
    result = control.handle_alter_reassignments(alter(("t", [(0, [9, 3, 3, 0])])), ALL)
    assert "broker 0, but no such broker" in answers(result)[0][0][2]


def test_a_fenced_or_shutting_down_target_is_accepted_but_cannot_join_the_isr():
    control = moving_topic()
    view = brokers(1, 2, 3, 4, 5, fenced=[4], shutdown=[5])
    result = control.handle_alter_reassignments(alter(("t", [(0, [1, 4, 5])])), view)
    assert answers(result) == [[(0, ErrorCode.NONE, None)]]
    apply(control, result)
    p = control.partition(T1, 0)
    refused = control.handle_alter_partition(alter_v3(1, T1, [(0, p.leader_epoch, p.partition_epoch,
                                                                (1, 2, 3, 4))]), 3, view)
    assert refused.response.topics[0].partitions[0].error_code == ErrorCode.INELIGIBLE_REPLICA
    assert refused.records == () and listed(control) == {("t", 0): ((1, 4, 5, 2, 3), (4, 5), (2, 3))}


def test_v1_disallowing_a_replication_factor_change():
    control = moving_topic()
    add_partition(control, T1, 1, (1, 2, 3))
    result = control.handle_alter_reassignments(alter(("t", [(0, [1, 2]), (1, [2, 3, 4])]),
                                                      allow_rf_change=False), ALL)
    assert answers(result) == [[(0, ErrorCode.INVALID_REPLICATION_FACTOR, "The replication factor is changed from "
                                 "3 to 2"), (1, ErrorCode.NONE, None)]]
    assert result.response.allow_replication_factor_change is False
    apply(control, result)
    # During the move of partition 1 (replicas 2,3,4,1) the replication factor is still that of the target: 3.
    again = control.handle_alter_reassignments(alter(("t", [(1, [3, 4, 5]), (1, [2, 3, 4, 5])]),
                                                     allow_rf_change=False), ALL)
    assert [code for _, code, _ in answers(again)[0]] == [ErrorCode.NONE, ErrorCode.INVALID_REPLICATION_FACTOR]


def test_a_partition_named_twice_is_judged_after_the_first_entry():
    control = moving_topic()
    result = control.handle_alter_reassignments(alter(("t", [(0, [2, 3, 4]), (0, None)])), ALL)
    assert answers(result) == [[(0, ErrorCode.NONE, None), (0, ErrorCode.NONE, None)]]
    apply(control, result)
    # Started, then cancelled: the original replicas, in the order the revert leaves them (Kafka's: the adding
    # ones taken out of the replica list).
    assert state(control) == ((2, 3, 1), (1, 2, 3), (), (), 1)


def test_records_past_kafkas_per_request_bound_fail_their_partition(monkeypatch):
    monkeypatch.setattr(reassignments, "MAX_RECORDS_PER_USER_OP", 2)
    control = new_control()
    for index in range(3):
        add_partition(control, T1, index, (1, 2, 3), name="t")
    result = control.handle_alter_reassignments(alter(("t", [(0, [2, 3, 4]), (1, [2, 3, 4]), (2, [2, 3, 4])])),
                                                ALL)
    assert answers(result) == [[(0, ErrorCode.NONE, None), (1, ErrorCode.NONE, None),
                                (2, ErrorCode.UNKNOWN_SERVER_ERROR, None)]]
    assert len(result.records) == 2


def test_an_empty_request_writes_nothing_and_answers_nothing():
    result = moving_topic().handle_alter_reassignments(alter(), ALL)
    assert result.records == () and result.response.responses == () and result.response.error_code == 0


# ---- the quorum entries (KIP-642) ------------------------------------------------------------------------------------
def test_metadata_partition_entries_are_split_off_and_refused_until_the_quorum_planner_serves_them():
    control = moving_topic()
    request = alter(("t", [(0, [2, 3, 4])]), (QUORUM_TOPIC, [(0, [1, 2, 3])]), ("t", [(0, None)]))
    user, quorum = reassignments.split_quorum_topics(request)
    assert [t.name for t in user.topics] == ["t", "t"] and [t.name for t in quorum] == [QUORUM_TOPIC]
    result = control.handle_alter_reassignments(request, ALL)
    got = answers(result)
    assert got[0] == [(0, ErrorCode.NONE, None)] and got[2] == [(0, ErrorCode.NONE, None)]
    assert got[1] == [(0, ErrorCode.INVALID_REQUEST, reassignments.QUORUM_UNSUPPORTED)]
    assert "KIP-642" in reassignments.QUORUM_UNSUPPORTED
    assert [t.name for t in result.response.responses] == ["t", QUORUM_TOPIC, "t"]


# ---- listing -----------------------------------------------------------------------------------------------------
def test_listing_all_or_named_partitions():
    control = new_control()
    for index in range(3):
        add_partition(control, T1, index, (1, 2, 3), name="a")
    add_partition(control, T2, 0, (1, 2, 3), name="b")
    apply(control, control.handle_alter_reassignments(alter(("b", [(0, [3, 4, 5])]), ("a", [(2, [1, 2, 4])])),
                                                      ALL))
    assert list(listed(control)) == [("a", 2), ("b", 0)]
    named = (list_v0.ListPartitionReassignmentsTopics(name=TopicName("a"), partition_indexes=(i32(0), i32(2), i32(9))),
             list_v0.ListPartitionReassignmentsTopics(name=TopicName("zzz"), partition_indexes=(i32(0),)))
    assert listed(control, named) == {("a", 2): ((1, 2, 4, 3), (4,), (3,))}
    assert listed(control, ()) == {}
