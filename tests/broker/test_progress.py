"""MetadataOnlyProgress: what the metadata log alone says about followers, until the data plane reports offsets."""

from __future__ import annotations

from pykraft.broker.isr_manager import IsrManager, IsrManagerConfig
from pykraft.broker.progress import MetadataOnlyProgress
from pykraft.controller.cluster import IN_CONTROLLED_SHUTDOWN

from .records import TOPIC_ID, change, partition, register, topic
from .test_metadata_cache import cache_with


def test_only_registered_unfenced_followers_not_shutting_down_are_reported_caught_up() -> None:
    cache = cache_with(register(1, 10), register(2, 11), register(3, 12, fenced=True), register(4, 13),
                       change(4, 13, shutting_down=IN_CONTROLLED_SHUTDOWN), topic(),
                       partition(0, [1, 2, 3, 4, 5], [1], leader=1), partition(1, [2, 1], [2], leader=2))
    found = MetadataOnlyProgress(cache, broker_id=1).progress([(TOPIC_ID, 0), (TOPIC_ID, 1)], now_ms=500)
    assert list(found) == [(TOPIC_ID, 0)]  # partition 1 is led by broker 2: nothing to say as broker 1
    progress = found[(TOPIC_ID, 0)]
    assert [(f.replica_id, f.broker_epoch, f.last_caught_up_ms) for f in progress.followers] == [(2, 11, 500)]
    assert progress.log_end_offset == 0 and all(f.log_end_offset == 0 for f in progress.followers)


def test_a_returning_follower_is_proposed_for_the_isr_by_the_isr_manager() -> None:
    cache = cache_with(register(1, 10), register(2, 11), topic(), partition(0, [1, 2], [1], leader=1))
    manager = IsrManager(IsrManagerConfig(broker_id=1), cache)
    manager.sync_metadata(0)
    ready = manager.update_progress(MetadataOnlyProgress(cache, 1).progress(manager.led_partitions(), 0), 0)
    (send,) = ready.sends
    (topic_data,) = send.request.topics
    (data,) = topic_data.partitions
    assert [(int(b.broker_id), int(b.broker_epoch)) for b in data.new_isr_with_epochs] == [(1, 10), (2, 11)]
