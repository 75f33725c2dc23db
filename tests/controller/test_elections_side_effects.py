"""The partition side of fence / controlled shutdown / unregister / unfence, and preferred-leader balancing."""

import pytest

from pykraft.controller.partitions import LeaderRecoveryState

from .partition_helpers import add_partition, apply, brokers, new_control, topic_id

T1 = topic_id(1)
REMOVERS = ["records_for_fence", "records_for_controlled_shutdown", "records_for_unregister"]


def three_partitions():
    control = new_control()
    add_partition(control, T1, 0, (1, 2, 3), leader=1, name="t")  # broker 1 leads
    add_partition(control, T1, 1, (2, 1, 3), leader=2, name="t")  # broker 1 follows
    add_partition(control, T1, 2, (2, 3), leader=2, name="t")  # broker 1 absent
    return control


@pytest.mark.parametrize("method", REMOVERS)
def test_removing_a_broker_takes_it_out_of_every_isr_and_moves_its_leadership(method):
    control = three_partitions()
    records = getattr(control, method)(1, brokers(1, 2, 3))
    assert [(r.partition_id, r.isr, r.leader) for r in records] == [(0, (2, 3), 2), (1, (2, 3), -2)]
    apply(control, records)
    assert control.partitions_with_broker_in_isr(1) == [] and control.partitions_led_by(1) == 0
    assert control.partition(T1, 0).leader_epoch == 1 and control.partition(T1, 1).leader_epoch == 0


@pytest.mark.parametrize("method", REMOVERS)
def test_the_broker_being_removed_is_ineligible_even_if_the_view_still_shows_it_active(method):
    # The view A passes may not exclude the broker yet: the records must not elect it anyway.
    control = new_control()
    add_partition(control, T1, 0, (2, 1), isr=(1, 2), leader=2, name="t")
    records = getattr(control, method)(2, brokers(1, 2))
    assert [(r.isr, r.leader) for r in records] == [((1,), 1)]


def test_last_isr_member_stays_in_the_isr_and_the_partition_goes_leaderless():
    control = new_control()
    add_partition(control, T1, 0, (1, 2), isr=(1,), leader=1, name="t")
    records = control.records_for_fence(1, brokers(1, 2))
    (record,) = records
    assert record.isr is None and record.leader == -1
    apply(control, records)
    assert control.partition(T1, 0).isr == (1,) and control.offline_partition_count() == 1


def test_removal_with_unclean_election_enabled_elects_outside_the_isr():
    control = new_control(unclean_election_enabled=lambda name: name == "t")
    add_partition(control, T1, 0, (1, 2), isr=(1,), leader=1, name="t")
    (record,) = control.records_for_fence(1, brokers(1, 2))
    assert record.leader == 2 and record.isr == (2,)
    assert record.leader_recovery_state == LeaderRecoveryState.RECOVERING


def test_unfence_elects_leaders_only_for_leaderless_partitions_the_broker_can_lead():
    control = new_control()
    add_partition(control, T1, 0, (1, 2), isr=(1,), leader=-1, name="t")  # 1 is the kept last ISR member
    add_partition(control, T1, 1, (2, 1), isr=(2,), leader=-1, name="t")  # 1 not in ISR: stays leaderless
    add_partition(control, T1, 2, (2, 1), isr=(2, 1), leader=2, name="t")  # has a leader: untouched
    view = brokers(1, 2, fenced=[1, 2])  # the image may still show 1 fenced when these records are built
    records = control.records_for_unfence(1, view)
    assert [(r.partition_id, r.leader) for r in records] == [(0, 1)]
    apply(control, records)
    assert control.partition(T1, 0).leader == 1 and control.offline_partition_count() == 1


def test_unfence_does_not_elect_a_broker_in_controlled_shutdown():
    control = new_control()
    add_partition(control, T1, 0, (1, 2), isr=(1,), leader=-1, name="t")
    assert control.records_for_unfence(1, brokers(1, 2, shutdown=[1])) == []


def test_preferred_balance_moves_leadership_back_to_the_first_replica_when_it_can_lead():
    control = new_control()
    add_partition(control, T1, 0, (1, 2), leader=2, name="t")  # 1 preferred, in ISR, active: move
    add_partition(control, T1, 1, (1, 2), isr=(2,), leader=2, name="t")  # 1 not in ISR: leave
    add_partition(control, T1, 2, (3, 2), leader=2, name="t")  # 3 shutting down: leave
    add_partition(control, T1, 3, (1, 2), leader=1, name="t")  # balanced already
    records = control.records_for_preferred_balance(brokers(1, 2, 3, shutdown=[3]), max_partitions=10)
    assert [(r.partition_id, r.leader) for r in records] == [(0, 1)]


def test_preferred_balance_writes_at_most_max_partitions_records_per_call():
    control = new_control()
    for p in range(5):
        add_partition(control, T1, p, (1, 2), leader=2, name="t")
    view = brokers(1, 2)
    first = control.records_for_preferred_balance(view, max_partitions=2)
    assert [r.partition_id for r in first] == [0, 1]
    apply(control, first)
    assert [r.partition_id for r in control.records_for_preferred_balance(view, max_partitions=2)] == [2, 3]


def test_periodic_unclean_check_elects_only_in_topics_that_allow_it():
    control = new_control(unclean_election_enabled=lambda name: name == "dirty")
    add_partition(control, T1, 0, (1, 2), isr=(1,), leader=-1, name="dirty")
    add_partition(control, topic_id(2), 0, (1, 2), isr=(1,), leader=-1, name="clean")
    records = control.records_for_unclean_recovery(brokers(1, 2, fenced=[1]))
    assert [(r.topic_id, r.leader, r.isr) for r in records] == [(T1, 2, (2,))]
    assert records[0].leader_recovery_state == LeaderRecoveryState.RECOVERING
