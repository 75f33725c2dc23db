"""Activation (bootstrap, session re-seeding after failover), periodic work and request dispatch."""

from __future__ import annotations

import random

import pytest
from kio.static.primitive import i16

from pykraft.controller.controller import (
    ControllerConfig,
    NotActiveControllerError,
    QuorumController,
    UnsupportedControllerApiError,
)
from pykraft.controller.metrics import KAFKA_NAMES
from pykraft.records.metadata.schema.broker_registration_change_record import BrokerRegistrationChangeRecordV2
from pykraft.records.metadata.schema.feature_level_record import FeatureLevelRecordV0
from pykraft.records.metadata.schema.no_op_record import NoOpRecordV0
from pykraft.records.metadata.schema.partition_change_record import PartitionChangeRecordV2

from .broker_fakes import CLUSTER_ID, SESSION_MS, heartbeat_request
from .controller_cluster import Quorum


def _fence_changes(records: tuple[object, ...]) -> list[int]:
    return [r.broker_id for r in records if isinstance(r, BrokerRegistrationChangeRecordV2) and r.fenced == 1]


def test_first_activation_of_an_empty_cluster_writes_the_bootstrap_records() -> None:
    q = Quorum()
    result = q.activate(0, now_ms=0)
    assert result.records == (FeatureLevelRecordV0(name="metadata.version", feature_level=i16(27)),)
    assert q.active.features.metadata_version == 27


def test_later_activations_write_no_bootstrap_records() -> None:
    q = Quorum()
    q.activate(0, now_ms=0)
    assert q.activate(1, now_ms=10).records == ()


def test_bootstrap_without_a_metadata_version_uses_the_highest_supported() -> None:
    group = FeatureLevelRecordV0(name="group.version", feature_level=i16(1))
    controller = QuorumController(ControllerConfig(node_id=1, cluster_id=CLUSTER_ID, bootstrap_records=(group,)),
                                  random.Random(1))
    assert controller.activate(0).records == (
        FeatureLevelRecordV0(name="metadata.version", feature_level=i16(27)), group)


def test_requests_reach_only_the_active_controller() -> None:
    q = Quorum()
    with pytest.raises(NotActiveControllerError):
        q.controllers[1].handle(63, heartbeat_request(1, 0, 0), 0, 0)
    q.activate(0, now_ms=0)
    with pytest.raises(UnsupportedControllerApiError):
        q.active.handle(0, object(), 0, q.next_offset)


def test_failover_restarts_every_broker_session_clock() -> None:
    """KAFKA-18138: brokers registered under the old controller are tracked (and fenced) by the new one."""
    q = Quorum()
    q.activate(0, now_ms=0)
    q.start_brokers(1, 2, now_ms=0)
    failover_at = 60_000  # long after the last heartbeat: the new controller must not fence at once
    q.activate(1, now_ms=failover_at)
    assert _fence_changes(q.tick(failover_at + SESSION_MS).records) == []
    assert _fence_changes(q.tick(failover_at + SESSION_MS + 1).records) == [1]
    assert _fence_changes(q.tick(failover_at + SESSION_MS + 2).records) == [2]
    assert q.active.metrics().timed_out_broker_heartbeat_count == 2


def test_a_broker_that_heartbeats_to_the_new_controller_keeps_its_session() -> None:
    q = Quorum()
    q.activate(0, now_ms=0)
    q.start_brokers(1, 2, now_ms=0)
    q.activate(1, now_ms=1000)
    q.heartbeat(1, now_ms=5000)
    assert _fence_changes(q.tick(1000 + SESSION_MS + 1).records) == [2]
    assert _fence_changes(q.tick(1000 + SESSION_MS + 2).records) == []


def test_noop_record_every_max_idle_interval() -> None:
    q = Quorum(auto_leader_rebalance=False)
    q.activate(0, now_ms=1000)
    assert q.tick(1499).records == ()
    assert q.tick(1500).records == (NoOpRecordV0(),)
    assert q.tick(1999).records == ()
    assert q.tick(2000).records == (NoOpRecordV0(),)
    assert q.active.next_wakeup_ms() == 2500


def test_noop_record_can_be_disabled() -> None:
    q = Quorum(auto_leader_rebalance=False, max_idle_interval_ms=0, unclean_check_interval_ms=0)
    q.activate(0, now_ms=0)
    assert q.tick(10_000).records == () and q.active.next_wakeup_ms() is None


def test_inactive_controller_ticks_do_nothing() -> None:
    q = Quorum()
    assert q.controllers[1].tick(10_000, 0).records == () and q.controllers[1].next_wakeup_ms() is None


def test_preferred_leader_balancing_runs_on_its_interval() -> None:
    q = Quorum(max_idle_interval_ms=0, leader_imbalance_check_interval_ms=60_000)
    q.activate(0, now_ms=0)
    q.start_brokers(1, 2)
    q.create_topic("t", partitions=1, replication=2, assignments=[[1, 2]])
    q.heartbeat(1, want_fence=True)
    q.heartbeat(1)  # unfenced again, but leadership stays with 2
    assert q.alter_isr("t", 0, [2, 1]).topics[0].partitions[0].error_code == 0
    (partition,) = q.partitions()
    assert partition.leader == 2 and set(partition.isr) == {1, 2}
    q.heartbeat(1, now_ms=59_000)
    q.heartbeat(2, now_ms=59_000)
    assert q.tick(59_999).records == ()
    (change,) = q.tick(60_000).records
    assert isinstance(change, PartitionChangeRecordV2) and change.leader == 1
    assert q.partitions()[0].leader == 1


def test_balancing_waits_for_a_tick_that_fences_nobody() -> None:
    q = Quorum(max_idle_interval_ms=0, leader_imbalance_check_interval_ms=1)
    q.activate(0, now_ms=0)
    q.start_brokers(1, 2, 3)
    q.create_topic("t", partitions=1, replication=2, assignments=[[1, 2]])
    q.heartbeat(1, want_fence=True)
    q.heartbeat(1)  # unfenced again; leadership stays with 2 until balancing
    q.alter_isr("t", 0, [2, 1])
    q.heartbeat(1, now_ms=SESSION_MS)
    q.heartbeat(2, now_ms=SESSION_MS)  # 3 goes stale
    records = q.tick(SESSION_MS + 1).records
    assert _fence_changes(records) == [3] and not any(isinstance(r, PartitionChangeRecordV2) for r in records)
    assert q.partitions()[0].leader == 2
    (change,) = q.tick(SESSION_MS + 2).records
    assert isinstance(change, PartitionChangeRecordV2) and q.partitions()[0].leader == 1


def test_metrics_report_brokers_partitions_and_activity() -> None:
    q = Quorum()
    q.activate(0, now_ms=0)
    q.start_brokers(1, 2)
    q.register(3)
    q.create_topic("t", partitions=2, replication=1, assignments=[[1], [2]])
    q.heartbeat(2, want_fence=True)
    metrics = q.active.metrics()
    assert (metrics.active_controller_count, metrics.fenced_broker_count, metrics.active_broker_count) == (1, 2, 1)
    assert (metrics.global_topic_count, metrics.global_partition_count, metrics.offline_partitions_count) == (1, 2, 1)
    assert metrics.last_applied_record_offset == q.next_offset - 1 and metrics.new_active_controllers_count == 1
    assert q.controllers[1].metrics().active_controller_count == 0
    named = metrics.by_kafka_name()
    assert set(named) == set(KAFKA_NAMES.values()) and named["FencedBrokerCount"] == 2
