"""IsrManager: batching, one request in flight, metadata overtaking proposals, and every kind of answer."""

from __future__ import annotations

from kio.static.primitive import i8

from pykraft.broker.actions import FindController
from pykraft.broker.isr_rules import ProposalState
from pykraft.controller.cluster import FENCE, UNFENCE
from pykraft.protocol.errors import ErrorCode

from .isr_helpers import EPOCHS, LAG, Leader, answer, one_send, sent_isrs, tp
from .records import change, isr_change, register

LATE = 1000 + LAG + 1


def test_many_partitions_due_together_go_in_one_request() -> None:
    leader = Leader(partitions=5)
    send = one_send(leader.poll(LATE))
    assert sent_isrs(send) == {tp(i): (1,) for i in range(5)}
    assert len(send.request.topics) == 1


def test_proposals_made_while_a_request_is_in_flight_wait_and_then_go_together() -> None:
    leader = Leader(partitions=3, isr=[1, 2])
    first = one_send(leader.progress(100, {2: (100, 1000), 3: (100, 1000)}, partitions=[0]))
    assert leader.progress(100, {2: (100, 1000), 3: (100, 1000)}, partitions=[1, 2]).sends == ()
    second = one_send(leader.respond(first, answer(first)))
    assert sent_isrs(second) == {tp(1): (1, 2, 3), tp(2): (1, 2, 3)}


def test_a_partition_has_at_most_one_proposal_in_flight() -> None:
    leader = Leader(isr=[1, 2])
    one_send(leader.progress(100, {2: (100, 1000), 3: (100, 1000)}))
    # Follower 2 now lags far behind: no second proposal for this partition while the first is out.
    assert leader.progress(500, {2: (100, 0), 3: (500, 1000)}).sends == ()
    assert leader.poll(10 * LAG).sends == ()


def test_success_adopts_the_answer_before_the_metadata_arrives() -> None:
    leader = Leader(isr=[1, 2])
    send = one_send(leader.progress(100, {2: (100, 1000), 3: (100, 1000)}))
    leader.respond(send, answer(send))
    committed = leader.manager.committed(tp(0))
    assert (committed.isr, committed.partition_epoch) == ((1, 2, 3), 1)
    assert leader.manager.proposal(tp(0)) is None
    assert leader.manager.metrics.isr_expands == 1
    # The same change replayed from the log: nothing moves backwards or is proposed again.
    assert leader.commit_isr(0, [1, 2, 3]).sends == ()
    assert leader.manager.committed(tp(0)).isr == (1, 2, 3)


def test_success_older_than_the_cache_is_not_adopted() -> None:
    leader = Leader(isr=[1, 2])
    send = one_send(leader.progress(100, {2: (100, 1000), 3: (100, 1000)}))
    leader.commit_isr(0, [1, 2, 3])  # epoch 1 arrives through metadata first
    leader.commit_isr(0, [1, 3])  # and then another change (epoch 2)
    leader.respond(send, answer(send))  # says epoch 1
    assert leader.manager.committed(tp(0)).isr == (1, 3)


def test_newer_partition_epoch_from_metadata_discards_the_pending_proposal() -> None:
    leader = Leader(isr=[1, 2, 3])
    leader.progress(100, {2: (100, 1000), 3: (50, 1000)})
    send = one_send(leader.poll(LATE))
    assert sent_isrs(send) == {tp(0): (1, 2)}
    leader.apply(change(2, EPOCHS[2], fenced=FENCE), isr_change(0, [1, 3]))  # the controller fenced 2
    leader.sync()
    # The old proposal is gone; 3 (still lagging) is proposed out from the new state, queued behind the request.
    pending = leader.manager.proposal(tp(0))
    assert (pending.isr, pending.base.isr, pending.base.partition_epoch) == ((1,), (1, 3), 1)
    assert pending.state is ProposalState.QUEUED
    assert leader.manager.maximal_isr(tp(0)) == (1, 3)
    # The answer to the old request (an error) does not touch the new proposal, which goes out next.
    ready = leader.respond(send, answer(send, {tp(0): ErrorCode.INVALID_UPDATE_VERSION}))
    assert sent_isrs(one_send(ready)) == {tp(0): (1,)}
    assert int(ready.sends[0].request.topics[0].partitions[0].partition_epoch) == 1


def test_newer_leader_epoch_from_metadata_discards_the_pending_proposal() -> None:
    leader = Leader(isr=[1, 2])
    one_send(leader.progress(100, {2: (100, 1000), 3: (100, 1000)}))
    leader.commit_isr(0, [1, 2], leader=1)
    assert leader.manager.proposal(tp(0)) is None


def test_losing_leadership_drops_the_partition() -> None:
    leader = Leader(isr=[1, 2])
    send = one_send(leader.progress(100, {2: (100, 1000), 3: (100, 1000)}))
    leader.commit_isr(0, [2], leader=2)
    assert leader.manager.led_partitions() == []
    assert leader.manager.high_watermark(tp(0)) is None
    assert leader.respond(send, answer(send)).sends == ()


def test_ineligible_replica_returns_to_the_committed_isr_and_waits_for_the_cache() -> None:
    leader = Leader(isr=[1, 2])
    send = one_send(leader.progress(100, {2: (100, 1000), 3: (100, 1000)}))
    ready = leader.respond(send, answer(send, {tp(0): ErrorCode.INELIGIBLE_REPLICA}))
    assert ready.sends == ()
    assert leader.manager.maximal_isr(tp(0)) == (1, 2)
    assert leader.manager.metrics.failed_isr_updates == 1
    # Still caught up, still eligible in the (stale) cache: not proposed again...
    assert leader.progress(120, {2: (120, 1000), 3: (120, 1000)}).sends == ()
    # ...until its registration changes (here: fenced, then unfenced again).
    leader.apply(change(3, EPOCHS[3], fenced=FENCE))
    assert leader.sync().sends == ()
    leader.apply(change(3, EPOCHS[3], fenced=UNFENCE))
    assert sent_isrs(one_send(leader.sync())) == {tp(0): (1, 2, 3)}


def test_a_refused_member_is_tried_again_after_the_retry_interval_if_nothing_changes() -> None:
    """The controller's reason may never reach the cache (a fence it wrote, then lost its leadership before the
    commit): Kafka's leader tries again at its next fetch; pykraft waits ineligible_retry_ms at most."""
    leader = Leader(isr=[1, 2])
    send = one_send(leader.progress(100, {2: (100, 1000), 3: (100, 1000)}))
    ready = leader.respond(send, answer(send, {tp(0): ErrorCode.INELIGIBLE_REPLICA}))
    assert ready.sends == () and ready.wakeup_ms == leader.now + 1000
    assert leader.poll(leader.now + 999).sends == ()
    assert sent_isrs(one_send(leader.poll(leader.now + 1))) == {tp(0): (1, 2, 3)}


def test_every_member_refused_together_is_released_when_one_of_them_changes() -> None:
    """Found by the metadata_reassign simulation: an expansion adding 3 and 4 was refused because 4 had been
    fenced; 3, fine all along, must not wait for a change of its own registration."""
    leader = Leader(isr=[1])
    send = one_send(leader.progress(100, {2: (100, 1000), 3: (100, 1000)}))
    leader.respond(send, answer(send, {tp(0): ErrorCode.INELIGIBLE_REPLICA}))
    leader.apply(change(2, EPOCHS[2], fenced=FENCE))
    assert sent_isrs(one_send(leader.sync())) == {tp(0): (1, 3)}  # long before the retry interval


def test_a_follower_fenced_and_unfenced_while_the_proposal_was_out_is_proposed_again() -> None:
    """Found by the metadata_reassign simulation: the controller fenced broker 3 and unfenced it again while the
    proposal adding it was out; the cache replayed both before the INELIGIBLE_REPLICA answer came, so the
    registration then looked like the one refused and 3 was never proposed again (left out of the ISR, and a
    reassignment adding it never completed)."""
    leader = Leader(isr=[1, 2])
    send = one_send(leader.progress(100, {2: (100, 1000), 3: (100, 1000)}))
    leader.apply(change(3, EPOCHS[3], fenced=FENCE), change(3, EPOCHS[3], fenced=UNFENCE))
    leader.sync()
    retry = one_send(leader.respond(send, answer(send, {tp(0): ErrorCode.INELIGIBLE_REPLICA})))
    assert sent_isrs(retry) == {tp(0): (1, 2, 3)}


def test_a_follower_refused_for_its_old_incarnations_epoch_is_proposed_again_with_the_new_one() -> None:
    leader = Leader(isr=[1, 2])
    send = one_send(leader.progress(100, {2: (100, 1000), 3: (100, 1000)}))
    leader.apply(register(3, 31, incarnation=2))
    leader.sync()
    leader.respond(send, answer(send, {tp(0): ErrorCode.INELIGIBLE_REPLICA}))
    assert leader.progress(120, {2: (120, 1000), 3: (120, 1000)}).sends == ()  # epoch 30 is not 3's any more
    retry = one_send(leader.progress(130, {2: (130, 1000), 3: (130, 1000)}, epochs={**EPOCHS, 3: 31}))
    assert sent_isrs(retry) == {tp(0): (1, 2, 3)}


def test_shrink_refused_as_ineligible_waits_for_the_partition_to_change() -> None:
    leader = Leader(isr=[1, 2, 3])
    leader.progress(100, {2: (100, 1000), 3: (50, 1000)})
    send = one_send(leader.poll(LATE))
    leader.respond(send, answer(send, {tp(0): ErrorCode.INELIGIBLE_REPLICA}))
    assert leader.manager.maximal_isr(tp(0)) == (1, 2, 3)
    assert leader.poll(LATE + 1000).sends == ()
    leader.commit_isr(0, [1, 3])  # the controller removed 2 itself
    assert sent_isrs(one_send(leader.ready)) == {tp(0): (1,)}


def test_fenced_leader_epoch_is_not_retried_and_waits_for_metadata() -> None:
    leader = Leader(isr=[1, 2])
    send = one_send(leader.progress(100, {2: (100, 1000), 3: (100, 1000)}))
    ready = leader.respond(send, answer(send, {tp(0): ErrorCode.FENCED_LEADER_EPOCH}))
    assert ready.sends == () and ready.wakeup_ms is None
    assert leader.manager.proposal(tp(0)).state is ProposalState.AWAITING_METADATA
    assert leader.poll(leader.now + 10_000).sends == ()
    leader.commit_isr(0, [1, 2], leader=1)
    assert leader.manager.proposal(tp(0)) is None


def test_invalid_update_version_keeps_counting_the_proposal_for_the_hwm_until_metadata() -> None:
    leader = Leader(isr=[1])
    send = one_send(leader.progress(100, {3: (100, 1000)}))
    leader.respond(send, answer(send, {tp(0): ErrorCode.INVALID_UPDATE_VERSION}))
    leader.progress(200, {3: (150, 1000)})
    # The controller may have applied an earlier attempt: 3 still holds the high watermark back.
    assert leader.manager.high_watermark(tp(0)) == 150
    assert leader.poll(leader.now + 10_000).sends == ()
    leader.commit_isr(0, [1, 3])
    assert leader.manager.proposal(tp(0)) is None


def test_not_controller_finds_the_controller_and_retries_the_same_proposal_after_a_backoff() -> None:
    leader = Leader(isr=[1, 2])
    send = one_send(leader.progress(100, {2: (100, 1000), 3: (100, 1000)}))
    ready = leader.respond(send, answer(send, top=ErrorCode.NOT_CONTROLLER))
    assert ready.actions == (FindController(),) and ready.wakeup_ms == leader.now + 100
    again = one_send(leader.poll(leader.now + 100))
    assert again.request_id != send.request_id and sent_isrs(again) == sent_isrs(send)


def test_partition_level_not_controller_is_retried() -> None:
    leader = Leader(isr=[1, 2])
    send = one_send(leader.progress(100, {2: (100, 1000), 3: (100, 1000)}))
    ready = leader.respond(send, answer(send, {tp(0): ErrorCode.NOT_CONTROLLER}))
    assert ready.actions == (FindController(),)
    assert sent_isrs(one_send(leader.poll(leader.now + 100))) == {tp(0): (1, 2, 3)}


def test_timed_out_request_is_retried_and_its_late_answer_ignored() -> None:
    leader = Leader(isr=[1, 2])
    send = one_send(leader.progress(100, {2: (100, 1000), 3: (100, 1000)}))
    ready = leader.poll(send.deadline_ms)
    assert ready.actions == (FindController(),)
    retry = one_send(leader.poll(send.deadline_ms + 100))
    leader.respond(send, answer(send, {tp(0): ErrorCode.INELIGIBLE_REPLICA}))  # too late: ignored
    assert leader.manager.proposal(tp(0)).state is ProposalState.IN_FLIGHT
    leader.respond(retry, answer(retry))
    assert leader.manager.committed(tp(0)).isr == (1, 2, 3)


def test_undeliverable_request_is_retried_after_a_backoff() -> None:
    leader = Leader(isr=[1, 2])
    send = one_send(leader.progress(100, {2: (100, 1000), 3: (100, 1000)}))
    ready = leader.manager.handle_failure(send.request_id, leader.now)
    assert ready.sends == () and ready.wakeup_ms == leader.now + 100


def test_an_answer_missing_a_partition_or_of_the_wrong_type_is_retried_not_a_crash() -> None:
    leader = Leader(partitions=2, isr=[1, 2])
    send = one_send(leader.progress(100, {2: (100, 1000), 3: (100, 1000)}, partitions=[0, 1]))
    partial = answer(send)
    partial = type(partial)(throttle_time=partial.throttle_time, error_code=partial.error_code,
                            topics=(type(partial.topics[0])(topic_id=partial.topics[0].topic_id,
                                                            partitions=partial.topics[0].partitions[:1]),))
    leader.respond(send, partial)
    assert leader.manager.committed(tp(0)).isr == (1, 2, 3)
    assert leader.manager.proposal(tp(1)).state is ProposalState.QUEUED
    retry = one_send(leader.poll(leader.now + 100))
    assert sent_isrs(retry) == {tp(1): (1, 2, 3)}
    leader.respond(retry, object())
    assert leader.manager.proposal(tp(1)).state is ProposalState.QUEUED


def test_nothing_is_sent_before_our_own_registration_is_in_the_cache() -> None:
    from pykraft.broker.isr_manager import IsrManager, IsrManagerConfig
    from pykraft.broker.metadata_cache import MetadataCache

    from .records import partition, register, topic
    cache = MetadataCache()
    cache.replay_all(enumerate([register(2, 20), topic(), partition(0, [1, 2], [1, 2], leader=1)]))
    manager = IsrManager(IsrManagerConfig(1), cache)
    manager.sync_metadata(0)
    ready = manager.poll(LAG + 1)
    assert ready.sends == () and ready.wakeup_ms is None
    assert manager.proposal(tp(0)) is not None
    cache.replay(register(1, 10), 3)
    assert sent_isrs(one_send(manager.sync_metadata(LAG + 2))) == {tp(0): (1,)}


def test_queued_expansion_is_dropped_when_the_newcomer_becomes_ineligible_before_it_is_sent() -> None:
    leader = Leader(partitions=2, isr=[1, 2])
    first = one_send(leader.progress(100, {2: (100, 1000), 3: (100, 1000)}, partitions=[0]))
    leader.progress(100, {2: (100, 1000), 3: (100, 1000)}, partitions=[1])
    assert leader.manager.proposal(tp(1)).state is ProposalState.QUEUED
    leader.apply(change(3, EPOCHS[3], fenced=FENCE))
    leader.sync()
    assert leader.manager.proposal(tp(1)) is None
    assert leader.respond(first, answer(first)).sends == ()


def test_a_leader_elected_uncleanly_reports_the_partition_recovered_before_anyone_joins() -> None:
    """unclean.leader.election.enable: the controller leaves the partition RECOVERING with the new leader alone in
    the ISR; the leader's first AlterPartition says RECOVERED with that ISR (Kafka's Partition.makeLeader), and only
    then may caught-up followers be proposed."""
    import dataclasses

    from pykraft.controller.partitions import LeaderRecoveryState

    leader = Leader(isr=[1])
    recovering = dataclasses.replace(isr_change(0, [1], leader=1), leader_recovery_state=i8(1))
    send = one_send(leader.apply(recovering) or leader.sync())
    (partition,) = send.request.topics[0].partitions
    assert (int(partition.leader_recovery_state), sent_isrs(send)) == (0, {tp(0): (1,)})
    assert leader.progress(100, {2: (100, 1000)}).sends == ()  # one proposal at a time: no expansion yet
    expand = one_send(leader.respond(send, answer(send)))
    assert leader.manager.committed(tp(0)).recovery is LeaderRecoveryState.RECOVERED
    assert leader.manager.metrics.isr_expands == 0
    assert sent_isrs(expand) == {tp(0): (1, 2)}  # the caught-up follower, once the partition is recovered
