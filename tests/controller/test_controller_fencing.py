"""Fencing, controlled shutdown, unfencing and re-registration against the real ReplicationControl (KIP-841).

After every step the images of the active controller and of a replica that replays only the committed log keep
the invariants: no fenced or shutting-down broker leads or shares an ISR.
"""

from __future__ import annotations

from kio.schema.types import BrokerId
from kio.schema.unregister_broker.v0.request import UnregisterBrokerRequest

from pykraft.controller.controller import UNREGISTER_BROKER
from pykraft.records.metadata.schema.broker_registration_change_record import BrokerRegistrationChangeRecordV2
from pykraft.records.metadata.schema.partition_change_record import PartitionChangeRecordV2
from pykraft.records.metadata.schema.register_broker_record import RegisterBrokerRecordV3

from .broker_fakes import SESSION_MS, heartbeat_request
from .controller_cluster import Quorum, kip841_violations


def _three_brokers_one_topic() -> Quorum:
    q = Quorum(max_idle_interval_ms=0, auto_leader_rebalance=False)
    q.activate(0, now_ms=0)
    q.start_brokers(1, 2, 3)
    q.create_topic("t", partitions=3, replication=3, assignments=[[1, 2, 3], [2, 3, 1], [3, 1, 2]])
    return q


def _check(q: Quorum) -> None:
    q.sync(1)
    assert kip841_violations(q.active) == []
    assert kip841_violations(q.controllers[1]) == []
    assert q.controllers[1].image() == q.active.image()


def _kinds(records: tuple[object, ...]) -> list[str]:
    return [type(r).__name__.removesuffix("V2").removesuffix("V3") for r in records]


def test_session_expiry_fences_a_leader_after_moving_its_partitions() -> None:
    q = _three_brokers_one_topic()
    q.heartbeat(2, now_ms=SESSION_MS)
    q.heartbeat(3, now_ms=SESSION_MS)
    result = q.tick(SESSION_MS + 1)
    assert _kinds(result.records) == ["PartitionChangeRecord"] * 3 + ["BrokerRegistrationChangeRecord"]
    assert q.active.cluster.is_fenced(1) and q.active.replication.partitions_led_by(1) == 0
    assert all(1 not in p.isr for p in q.partitions())
    _check(q)


def test_controlled_shutdown_moves_leadership_then_shuts_down_once_others_caught_up() -> None:
    q = _three_brokers_one_topic()
    result = q.write(q.active.handle(63, _hb(q, 1, want_shut_down=True), 0, q.next_offset))
    assert not result.response.should_shut_down and not result.response.is_fenced
    assert _kinds(result.records)[0] == "BrokerRegistrationChangeRecord"
    assert set(_kinds(result.records)[1:]) == {"PartitionChangeRecord"}
    assert q.active.cluster.in_controlled_shutdown(1) and q.active.replication.partitions_led_by(1) == 0
    _check(q)
    q.heartbeat(2, offset=0)  # still behind the shutdown record
    q.heartbeat(3)
    assert not q.heartbeat(1, want_shut_down=True).should_shut_down
    q.heartbeat(2)
    response = q.heartbeat(1, want_shut_down=True)
    assert response.should_shut_down and response.is_fenced and q.active.cluster.is_fenced(1)
    _check(q)


def test_unfencing_elects_leaders_for_leaderless_partitions() -> None:
    q = Quorum(max_idle_interval_ms=0, auto_leader_rebalance=False)
    q.activate(0, now_ms=0)
    q.start_brokers(1)
    q.create_topic("solo", partitions=1, replication=1, assignments=[[1]])
    q.heartbeat(1, want_fence=True)
    (partition,) = q.partitions()
    assert partition.leader == -1 and partition.isr == (1,)  # Kafka keeps the last ISR member
    assert q.active.metrics().offline_partitions_count == 1
    _check(q)
    before = q.next_offset
    assert not q.heartbeat(1).is_fenced
    records = q.log[before:]
    assert isinstance(records[0], BrokerRegistrationChangeRecordV2) and records[0].fenced == -1
    assert isinstance(records[1], PartitionChangeRecordV2) and records[1].leader == 1
    assert q.partitions()[0].leader == 1 and q.active.metrics().offline_partitions_count == 0
    _check(q)


def test_new_incarnation_of_a_silent_leader_takes_it_out_of_partitions_first() -> None:
    q = _three_brokers_one_topic()
    q.heartbeat(2, now_ms=SESSION_MS + 1)
    q.heartbeat(3, now_ms=SESSION_MS + 1)
    before = q.next_offset
    response = q.register(1, inc=2, now_ms=SESSION_MS + 1)  # broker 1 restarted before its session was fenced
    records = q.log[before:]
    assert _kinds(records) == ["PartitionChangeRecord"] * 3 + ["RegisterBrokerRecord"]
    assert isinstance(records[-1], RegisterBrokerRecordV3) and response.broker_epoch == before + 3
    assert q.active.cluster.is_fenced(1) and q.active.replication.partitions_led_by(1) == 0
    _check(q)


def test_unregistering_a_broker_removes_it_from_partitions_and_the_image() -> None:
    q = _three_brokers_one_topic()
    response = q.request(UNREGISTER_BROKER, UnregisterBrokerRequest(broker_id=BrokerId(2)))
    assert response.error_code == 0 and not q.active.cluster.is_registered(2)
    assert all(2 not in p.isr and p.leader != 2 for p in q.partitions())
    _check(q)


def test_alter_partition_may_not_add_a_broker_in_controlled_shutdown() -> None:
    q = _three_brokers_one_topic()
    q.heartbeat(3, want_shut_down=True)
    assert q.active.cluster.in_controlled_shutdown(3)
    partition = q.active.replication.partition(q.active.replication.topics_by_name["t"], 0)
    response = q.alter_isr("t", 0, [*partition.isr, 3])
    assert response.topics[0].partitions[0].error_code == 107  # INELIGIBLE_REPLICA
    _check(q)


def _hb(q: Quorum, broker_id: int, **kwargs: bool) -> object:
    return heartbeat_request(broker_id, q.active.cluster.broker_epoch(broker_id), q.next_offset, **kwargs)
