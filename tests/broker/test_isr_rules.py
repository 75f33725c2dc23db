"""IsrManager: when it shrinks and expands the ISR, KIP-841 eligibility, and the high watermark (KIP-497)."""

from __future__ import annotations

from pykraft.broker.isr_rules import FollowerProgress, LeaderProgress
from pykraft.controller.cluster import FENCE, IN_CONTROLLED_SHUTDOWN, UNFENCE

from .isr_helpers import EPOCHS, LAG, ME, Leader, one_send, sent_isrs, tp
from .records import change, register


def test_follower_behind_for_longer_than_the_lag_time_is_shrunk_out() -> None:
    leader = Leader()
    leader.progress(100, {2: (100, 1000), 3: (50, 1000)})
    assert leader.ready.sends == ()
    assert leader.ready.wakeup_ms == 1000 + LAG + 1
    assert leader.poll(1000 + LAG).sends == ()  # exactly the lag time is still in sync
    send = one_send(leader.poll(1000 + LAG + 1))
    assert sent_isrs(send) == {tp(0): (1, 2)}
    data = send.request.topics[0].partitions[0]
    assert (int(send.request.broker_id), int(send.request.broker_epoch)) == (ME, EPOCHS[ME])
    assert (int(data.leader_epoch), int(data.partition_epoch)) == (0, 0)
    assert [(int(b.broker_id), int(b.broker_epoch)) for b in data.new_isr_with_epochs] == [(1, 10), (2, 20)]


def test_follower_at_the_leaders_log_end_is_never_shrunk_however_old_its_catch_up_time() -> None:
    leader = Leader()
    leader.progress(100, {2: (100, 0), 3: (100, 0)})
    assert leader.poll(1000 + 10 * LAG).sends == ()


def test_follower_without_progress_counts_from_the_start_of_the_leadership() -> None:
    leader = Leader()
    assert leader.ready.wakeup_ms == 1000 + LAG + 1
    assert sent_isrs(one_send(leader.poll(1000 + LAG + 1))) == {tp(0): (1,)}


def test_caught_up_follower_outside_the_isr_is_expanded_back() -> None:
    leader = Leader(isr=[1, 2])
    send = one_send(leader.progress(100, {2: (100, 1000), 3: (100, 1000)}))
    assert sent_isrs(send) == {tp(0): (1, 2, 3)}
    epochs = [(int(b.broker_id), int(b.broker_epoch)) for b in send.request.topics[0].partitions[0].new_isr_with_epochs]
    assert epochs == [(1, 10), (2, 20), (3, 30)]


def test_follower_below_the_high_watermark_is_not_expanded() -> None:
    leader = Leader(isr=[1, 2])
    assert leader.progress(100, {2: (90, 1000), 3: (89, 1000)}).sends == ()
    assert leader.manager.high_watermark(tp(0)) == 90


def test_follower_below_the_leader_epoch_start_offset_is_not_expanded() -> None:
    leader = Leader(isr=[1])
    assert leader.progress(100, {3: (100, 1000)}, start_offset=120).sends == ()
    assert sent_isrs(one_send(leader.progress(130, {3: (130, 1000)}, start_offset=120))) == {tp(0): (1, 3)}


def test_fenced_follower_is_never_proposed() -> None:
    leader = Leader(isr=[1, 2])
    leader.apply(change(3, EPOCHS[3], fenced=FENCE))
    leader.sync()
    assert leader.progress(100, {2: (100, 1000), 3: (100, 1000)}).sends == ()


def test_follower_in_controlled_shutdown_is_never_proposed() -> None:
    leader = Leader(isr=[1, 2])
    leader.apply(change(3, EPOCHS[3], shutting_down=IN_CONTROLLED_SHUTDOWN))
    leader.sync()
    assert leader.progress(100, {2: (100, 1000), 3: (100, 1000)}).sends == ()


def test_follower_fetching_with_another_broker_epoch_is_never_proposed() -> None:
    leader = Leader(isr=[1, 2])
    assert leader.progress(100, {2: (100, 1000), 3: (100, 1000)}, epochs={2: 20, 3: 29}).sends == ()


def test_unregistered_follower_is_never_proposed() -> None:
    leader = Leader(replicas=[1, 2, 4], isr=[1, 2])
    assert leader.progress(100, {2: (100, 1000), 4: (100, 1000)}).sends == ()
    leader.apply(register(4, 40))
    assert sent_isrs(one_send(leader.sync())) == {tp(0): (1, 2, 4)}  # its Fetch carried no epoch (-1)


def test_unfenced_follower_is_proposed_on_its_next_progress() -> None:
    leader = Leader(isr=[1, 2])
    leader.apply(change(3, EPOCHS[3], fenced=FENCE))
    leader.sync()
    leader.progress(100, {2: (100, 1000), 3: (100, 1000)})
    leader.apply(change(3, EPOCHS[3], fenced=UNFENCE))
    leader.sync()
    assert sent_isrs(one_send(leader.ready)) == {tp(0): (1, 2, 3)}


def test_high_watermark_during_an_expansion_counts_the_joining_follower() -> None:
    leader = Leader(isr=[1])
    one_send(leader.progress(100, {3: (100, 1000)}))
    # The leader appends more; the newcomer lags. The committed ISR alone ({1}) would allow 150.
    leader.progress(150, {3: (120, 1000)})
    assert leader.manager.maximal_isr(tp(0)) == (1, 3)
    assert leader.manager.high_watermark(tp(0)) == 120


def test_high_watermark_during_a_shrink_still_waits_for_the_leaving_follower() -> None:
    leader = Leader(isr=[1, 2])
    leader.progress(100, {2: (40, 1000)})
    assert leader.manager.high_watermark(tp(0)) == 40
    one_send(leader.poll(1000 + LAG + 1))
    leader.progress(200, {2: (40, 1000)})
    assert leader.manager.high_watermark(tp(0)) == 40  # the removal is not committed yet
    leader.commit_isr(0, [1])
    leader.progress(200, {2: (40, 1000)})
    assert leader.manager.high_watermark(tp(0)) == 200


def test_high_watermark_never_goes_back_within_a_leadership() -> None:
    leader = Leader(isr=[1, 2])
    leader.progress(100, {2: (100, 1000)})
    leader.progress(100, {2: (80, 1000)})  # e.g. a follower that truncated
    assert leader.manager.high_watermark(tp(0)) == 100


def test_high_watermark_is_unknown_until_every_isr_member_reported() -> None:
    leader = Leader(isr=[1, 2, 3])
    leader.progress(100, {2: (100, 1000)})
    assert leader.manager.high_watermark(tp(0)) is None


def test_progress_of_an_older_leader_epoch_is_ignored() -> None:
    leader = Leader(isr=[1, 2])
    leader.commit_isr(0, [1, 2], leader=ME)  # a new leader epoch, same leader
    assert leader.cache.partition(*tp(0)).leader_epoch == 1
    stale = LeaderProgress(0, 100, 0, (FollowerProgress(2, 100, 1000, 20), FollowerProgress(3, 100, 1000, 30)))
    assert leader.manager.update_progress({tp(0): stale}, leader.now).sends == ()
    assert leader.manager.high_watermark(tp(0)) is None
