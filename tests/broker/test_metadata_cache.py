"""The broker's metadata cache: replay of registrations and partitions, KIP-841 eligibility, snapshots."""

from __future__ import annotations

from pykraft.broker.metadata_cache import MetadataCache
from pykraft.controller.cluster import FENCE, IN_CONTROLLED_SHUTDOWN, UNFENCE
from pykraft.records.metadata.schema.no_op_record import NoOpRecordV0

from .records import TOPIC_ID, change, isr_change, partition, register, topic, unregister


def cache_with(*records) -> MetadataCache:
    cache = MetadataCache()
    cache.replay_all(enumerate(records))
    return cache


def test_registered_unfenced_broker_with_matching_epoch_is_isr_eligible() -> None:
    cache = cache_with(register(1, epoch=10))
    assert cache.is_isr_eligible(1, 10)


def test_unknown_fetch_epoch_skips_the_epoch_check() -> None:
    assert cache_with(register(1, epoch=10)).is_isr_eligible(1, -1)


def test_fetch_epoch_of_another_incarnation_is_not_eligible() -> None:
    assert not cache_with(register(1, epoch=10)).is_isr_eligible(1, 9)


def test_unregistered_broker_is_not_eligible() -> None:
    cache = cache_with(register(1, epoch=0), unregister(1, 0))
    assert not cache.is_isr_eligible(1, -1)
    assert cache.registration(1) is None


def test_fenced_broker_is_not_eligible_until_unfenced() -> None:
    cache = cache_with(register(1, epoch=0), change(1, 0, fenced=FENCE))
    assert not cache.is_isr_eligible(1, 0)
    cache.replay(change(1, 0, fenced=UNFENCE), 2)
    assert cache.is_isr_eligible(1, 0)


def test_broker_in_controlled_shutdown_is_not_eligible() -> None:
    cache = cache_with(register(1, epoch=0), change(1, 0, shutting_down=IN_CONTROLLED_SHUTDOWN))
    assert not cache.is_isr_eligible(1, 0)
    assert not cache.is_active(1)


def test_partitions_led_by_follow_leader_changes() -> None:
    cache = cache_with(register(1, 0), register(2, 1), topic(), partition(0, [1, 2], [1, 2], leader=1),
                       partition(1, [2, 1], [2, 1], leader=2))
    assert list(cache.partitions_led_by(1)) == [(TOPIC_ID, 0)]
    cache.replay(isr_change(0, [2], leader=2), 5)
    assert cache.partitions_led_by(1) == {}
    assert sorted(cache.partitions_led_by(2)) == [(TOPIC_ID, 0), (TOPIC_ID, 1)]
    moved = cache.partition(TOPIC_ID, 0)
    assert (moved.isr, moved.leader_epoch, moved.partition_epoch) == ((2,), 1, 1)


def test_last_applied_offset_moves_with_every_record_including_noops() -> None:
    cache = cache_with(register(1, 0))
    cache.replay(NoOpRecordV0(), 7)
    assert cache.last_applied_offset == 7


def test_a_record_that_does_not_fit_is_counted_and_changes_nothing() -> None:
    cache = cache_with(register(1, 0))
    cache.replay(change(1, 99, fenced=FENCE), 1)  # wrong broker epoch
    cache.replay(isr_change(0, [1]), 2)  # unknown partition
    assert cache.apply_errors == 2
    assert cache.is_isr_eligible(1, 0)
    assert cache.last_applied_offset == 2


def test_snapshot_round_trip_gives_the_same_image() -> None:
    cache = cache_with(register(1, 0), register(2, 1, fenced=True), topic(), partition(0, [1, 2], [1], leader=1))
    copy = MetadataCache()
    copy.load_snapshot(cache.snapshot_records(), last_contained_offset=3)
    assert copy.cluster.image() == cache.cluster.image()
    assert copy.partition(TOPIC_ID, 0) == cache.partition(TOPIC_ID, 0)
    assert copy.last_applied_offset == 3
    assert not copy.is_isr_eligible(2, 1)
