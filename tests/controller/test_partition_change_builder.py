"""PartitionChangeBuilder: the minimal-record rules and the election kinds of reference §8.4."""

import uuid

from pykraft.controller.partition_change import Election, PartitionChangeBuilder
from pykraft.controller.partitions import DIRECTORY_UNASSIGNED, LeaderRecoveryState, PartitionRegistration

TID = uuid.UUID(int=7)


def partition(replicas=(1, 2, 3), isr=None, leader=None, recovery=LeaderRecoveryState.RECOVERED, **kw):
    isr = tuple(replicas) if isr is None else tuple(isr)
    return PartitionRegistration(replicas=tuple(replicas), directories=(DIRECTORY_UNASSIGNED,) * len(replicas),
                                 isr=isr, leader=isr[0] if leader is None else leader, leader_recovery_state=recovery,
                                 leader_epoch=4, partition_epoch=10, **kw)


def builder(p, active=(1, 2, 3, 4, 5), **kw) -> PartitionChangeBuilder:
    return PartitionChangeBuilder(p, TID, 0, lambda b: b in active, **kw)


def test_no_difference_means_no_record():
    assert builder(partition()).build() is None
    assert builder(partition(), target_isr=(1, 2, 3)).build() is None


def test_isr_shrink_sets_only_the_isr_and_leaves_the_leader_epoch_alone():
    record = builder(partition(), target_isr=(1, 2)).build()
    assert record.isr == (1, 2)
    assert record.leader == -2 and record.replicas is None and record.leader_recovery_state == -1
    merged = partition().merge(record)
    assert (merged.leader_epoch, merged.partition_epoch) == (4, 11)


def test_leader_change_sets_the_leader_and_bumps_the_leader_epoch_on_replay():
    record = builder(partition(), active=(2, 3), target_isr=(2, 3)).build()
    assert (record.leader, record.isr) == (2, (2, 3))
    merged = partition().merge(record)
    assert (merged.leader, merged.leader_epoch, merged.partition_epoch) == (2, 5, 11)


def test_online_keeps_a_valid_current_leader_even_if_not_preferred():
    p = partition(leader=2)
    assert builder(p, election=Election.ONLINE).build() is None


def test_online_picks_the_first_valid_replica_in_replica_order_not_isr_order():
    p = partition(replicas=(1, 2, 3), isr=(3, 2, 1), leader=1)
    record = builder(p, active=(2, 3), target_isr=(3, 2)).build()
    assert record.leader == 2


def test_leader_must_be_active_even_when_in_the_isr():
    p = partition(leader=1)
    record = builder(p, active=(3,)).build()
    assert record.leader == 3 and record.isr is None


def test_preferred_moves_leadership_to_the_first_replica_when_valid():
    record = builder(partition(leader=3), election=Election.PREFERRED).build()
    assert record.leader == 1


def test_preferred_keeps_the_current_leader_when_the_first_replica_cannot_lead():
    assert builder(partition(leader=3), active=(2, 3), election=Election.PREFERRED).build() is None
    not_in_isr = partition(isr=(2, 3), leader=3)
    assert builder(not_in_isr, election=Election.PREFERRED).build() is None


def test_preferred_falls_back_to_the_next_valid_replica_when_current_leader_is_invalid():
    record = builder(partition(leader=1), active=(3,), election=Election.PREFERRED).build()
    assert record.leader == 3


def test_no_valid_replica_means_no_leader():
    record = builder(partition(isr=(1,), leader=1), active=(2, 3)).build()
    assert record.leader == -1


def test_removing_the_last_isr_member_keeps_it_in_the_isr_and_drops_leadership():
    p = partition(isr=(1,), leader=1)
    record = builder(p, active=(2, 3), target_isr=()).build()
    assert record.isr is None and record.leader == -1
    merged = p.merge(record)
    assert merged.isr == (1,) and merged.leader == -1


def test_removing_the_last_isr_member_of_a_leaderless_partition_writes_nothing():
    p = partition(isr=(1,), leader=-1)
    assert builder(p, active=(2, 3), target_isr=()).build() is None


def test_unclean_prefers_the_isr_like_online():
    record = builder(partition(isr=(2, 3), leader=-1), election=Election.UNCLEAN).build()
    assert record.leader == 2 and record.isr is None and record.leader_recovery_state == -1


def test_unclean_elects_outside_the_isr_sets_isr_to_the_leader_and_recovering():
    p = partition(isr=(1,), leader=-1)
    record = builder(p, active=(2, 3), election=Election.UNCLEAN).build()
    assert record.leader == 2 and record.isr == (2,)
    assert record.leader_recovery_state == LeaderRecoveryState.RECOVERING
    merged = p.merge(record)
    assert merged.leader_recovery_state is LeaderRecoveryState.RECOVERING and merged.isr == (2,)


def test_unclean_on_an_already_recovering_partition_does_not_restate_recovering():
    p = partition(isr=(1,), leader=-1, recovery=LeaderRecoveryState.RECOVERING)
    record = builder(p, active=(3,), election=Election.UNCLEAN).build()
    assert record.leader == 3 and record.leader_recovery_state == -1


def test_unclean_with_no_acceptable_replica_leaves_the_partition_leaderless():
    assert builder(partition(isr=(1,), leader=-1), active=(), election=Election.UNCLEAN).build() is None


def test_target_recovery_state_is_written_only_when_it_differs():
    p = partition(isr=(1,), recovery=LeaderRecoveryState.RECOVERING)
    record = builder(p, target_recovery=LeaderRecoveryState.RECOVERED).build()
    assert record.leader_recovery_state == 0 and record.leader == -2
    assert builder(p, target_recovery=LeaderRecoveryState.RECOVERING).build() is None


def test_completed_reassignment_drops_removing_replicas_and_bumps_the_leader_epoch():
    # 1,2,3 -> 2,3,4: 4 was added; 1 (not the leader) is being removed.
    p = partition(replicas=(1, 2, 3, 4), isr=(2, 3, 1), leader=2, removing_replicas=(1,), adding_replicas=(4,))
    record = builder(p, target_isr=(2, 3, 1, 4)).build()
    assert record.replicas == (2, 3, 4) and record.isr == (2, 3, 4)
    assert record.removing_replicas == () and record.adding_replicas == ()
    assert record.leader == 2  # same leader re-stated: followers see a new leader epoch
    assert p.merge(record).leader_epoch == 5


def test_reassignment_is_not_complete_until_every_adding_replica_is_in_the_isr():
    p = partition(replicas=(1, 2, 3, 4), isr=(1, 2, 3), leader=1, removing_replicas=(1,), adding_replicas=(4,))
    record = builder(p, target_isr=(1, 2)).build()
    assert record.isr == (1, 2) and record.replicas is None and record.leader == -2


def test_completed_reassignment_that_removes_the_leader_elects_another():
    p = partition(replicas=(1, 2, 3, 4), isr=(1, 2, 3), leader=1, removing_replicas=(1,), adding_replicas=(4,))
    record = builder(p, target_isr=(1, 2, 3, 4)).build()
    assert record.leader == 2 and record.replicas == (2, 3, 4)


def test_existing_elr_is_cleared_because_elr_is_not_enabled():
    p = partition(elr=(2,), last_known_elr=(3,))
    record = builder(p).build()
    assert record.eligible_leader_replicas == () and record.last_known_elr == ()
    assert builder(p.merge(record)).build() is None
