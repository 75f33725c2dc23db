"""End to end, in one process: brokers built from pykraft.broker against a real QuorumController.

One scenario, step by step: registration and unfencing, a topic, a follower shrunk out and expanded back,
a controlled shutdown that moves leadership away, and a fenced broker that no leader re-adds (the leaders'
caches and the controller's AlterPartition checks agree on who is eligible)."""

from __future__ import annotations

from kio.schema.alter_partition.v3 import request as ap_req
from kio.schema.types import BrokerId
from kio.static.primitive import i32, i64

from pykraft.broker.actions import BrokerState
from pykraft.controller.controller import ALTER_PARTITION

from .cluster_harness import HEARTBEAT_MS, LAG_MS, SESSION_MS, STEP_MS, Cluster


def _running(cluster: Cluster) -> bool:
    return all(n.lifecycle.state is BrokerState.RUNNING for n in cluster.brokers.values())


def _started_cluster_with_topic() -> Cluster:
    cluster = Cluster([1, 2, 3])
    cluster.run_until(lambda: _running(cluster), limit_ms=10_000)
    cluster.create_topic("events", partitions=6, replication=3)
    cluster.run(500)
    return cluster


def test_brokers_register_catch_up_and_are_unfenced() -> None:
    cluster = Cluster([1, 2, 3])
    cluster.run_until(lambda: _running(cluster), limit_ms=10_000)
    cluster.run(STEP_MS)  # the brokers replay the records of the last answers
    for broker_id, node in cluster.brokers.items():
        assert node.states[:2] == [BrokerState.RECOVERY, BrokerState.RUNNING]
        assert cluster.controller.cluster.is_active(broker_id)
        # The broker's epoch is the offset of its RegisterBrokerRecord, and its cache agrees with the controller.
        assert node.lifecycle.broker_epoch == cluster.controller.cluster.broker_epoch(broker_id)
        assert node.cache.cluster.image() == cluster.controller.cluster.image()


def test_topic_leaders_take_over_and_the_high_watermark_follows_the_log() -> None:
    cluster = _started_cluster_with_topic()
    led = {tp for n in cluster.brokers.values() for tp in n.isr.led_partitions()}
    assert led == set(cluster.partitions())
    for node in cluster.brokers.values():
        for tp in node.isr.led_partitions():
            # Every follower copies at once, so the high watermark is the leader's log end.
            assert node.isr.high_watermark(tp) == cluster.leo[tp]


def test_a_lagging_follower_is_shrunk_out_then_expanded_back() -> None:
    cluster = _started_cluster_with_topic()
    cluster.lagging.add(3)
    frozen = {tp: cluster.follower_leo[(tp, 3)][0] for tp, p in cluster.partitions().items() if p.leader != 3}
    cluster.run(LAG_MS - 200)
    assert all(3 in p.isr for p in cluster.partitions().values())
    for tp, leo in frozen.items():  # still in the ISR: it holds every high watermark back
        leader = cluster.brokers[cluster.partitions()[tp].leader]
        assert leader.isr.high_watermark(tp) == leo
    cluster.run(1000)
    shrunk = {tp for tp, p in cluster.partitions().items() if 3 not in p.isr}
    assert shrunk == set(frozen)
    for tp in shrunk:
        leader = cluster.brokers[cluster.partitions()[tp].leader]
        assert leader.isr.high_watermark(tp) == cluster.leo[tp]  # free again
    assert sum(n.isr.metrics.isr_shrinks for n in cluster.brokers.values()) == len(frozen)

    cluster.lagging.discard(3)
    cluster.run(500)
    assert all(set(p.isr) == {1, 2, 3} for p in cluster.partitions().values())
    assert sum(n.isr.metrics.isr_expands for n in cluster.brokers.values()) == len(frozen)


def test_controlled_shutdown_moves_leadership_away_before_the_broker_stops() -> None:
    cluster = _started_cluster_with_topic()
    node = cluster.brokers[2]
    assert node.isr.led_partitions()
    cluster.collect(node, "lifecycle", node.lifecycle.begin_controlled_shutdown(cluster.now))
    cluster.run_until(lambda: node.shutdown is not None, limit_ms=10_000)
    assert node.shutdown.clean
    assert BrokerState.PENDING_CONTROLLED_SHUTDOWN in node.states
    assert all(p.leader != 2 for p in cluster.partitions().values())
    assert all(2 not in p.isr for p in cluster.partitions().values())
    assert cluster.controller.cluster.in_controlled_shutdown(2)
    # The remaining leaders keep their partitions fully replicated among themselves.
    cluster.run(500)
    assert all(set(p.isr) == {1, 3} for p in cluster.partitions().values())


def test_a_fenced_broker_is_never_re_added_by_any_leader() -> None:
    cluster = _started_cluster_with_topic()
    node3 = cluster.brokers[3]
    node3.heartbeats_reach_controller = False  # cut off from the controller, still fetching from leaders
    cluster.run(SESSION_MS + 2 * HEARTBEAT_MS)
    assert cluster.controller.cluster.is_fenced(3)
    assert all(3 not in p.isr for p in cluster.partitions().values())
    # Broker 3 keeps fetching and is fully caught up, yet for many lag periods no leader proposes it...
    cluster.run(3 * LAG_MS)
    assert all(3 not in p.isr for p in cluster.partitions().values())
    assert cluster.ineligible_answers == 0
    for broker_id in (1, 2):
        assert not cluster.brokers[broker_id].cache.is_isr_eligible(3, node3.lifecycle.broker_epoch)
    # ...and the controller refuses it too: the two sides agree.
    assert _alter_with(cluster, 3) == 107  # INELIGIBLE_REPLICA
    # Once it can heartbeat again it is unfenced and comes back through the normal expansion.
    node3.heartbeats_reach_controller = True
    cluster.run(2000)
    assert cluster.controller.cluster.is_active(3)
    assert all(set(p.isr) == {1, 2, 3} for p in cluster.partitions().values())


def test_a_leader_with_stale_metadata_is_refused_rolls_back_and_retries_only_at_a_bounded_rate() -> None:
    cluster = _started_cluster_with_topic()
    tp, partition = next((tp, p) for tp, p in cluster.partitions().items() if p.leader == 1)
    leader = cluster.brokers[1]
    cluster.lagging.add(3)
    cluster.run(LAG_MS + 500)
    assert 3 not in cluster.partitions()[tp].isr
    # Broker 1 stops following the metadata log; broker 3 is fenced meanwhile, then catches up its log.
    leader.follow_metadata = False
    cluster.brokers[3].heartbeats_reach_controller = False
    cluster.run(SESSION_MS + 2 * HEARTBEAT_MS)
    assert cluster.controller.cluster.is_fenced(3)
    cluster.lagging.discard(3)
    cluster.run(2000)
    # Broker 1 still believes 3 is eligible, proposed it, was refused (INELIGIBLE_REPLICA) and rolled back.
    assert cluster.ineligible_answers >= 1
    refused = cluster.ineligible_answers
    assert leader.isr.maximal_isr(tp) == tuple(b for b in partition.isr if b != 3)
    cluster.run(3 * LAG_MS)
    # While its cache is unchanged it tries again once per ineligible_retry_ms (1 s) at most per partition, always
    # refused.
    partitions = sum(1 for p in cluster.partitions().values() if p.leader == 1 and 3 in p.replicas)
    assert cluster.ineligible_answers - refused <= (3 * LAG_MS // 1000 + 1) * partitions
    assert leader.isr.maximal_isr(tp) == tuple(b for b in partition.isr if b != 3)
    leader.follow_metadata = True
    cluster.run(500)
    assert not leader.cache.is_isr_eligible(3, -1)
    assert all(3 not in p.isr for p in cluster.partitions().values())


def _alter_with(cluster: Cluster, replica: int) -> int:
    """An AlterPartition from a partition's current leader adding `replica`; the partition-level error code."""
    tp, p = next((tp, p) for tp, p in cluster.partitions().items() if replica not in p.isr)
    image = cluster.controller.cluster
    members = tuple(p.isr) + (replica,)
    request = ap_req.AlterPartitionRequest(
        broker_id=BrokerId(p.leader), broker_epoch=i64(image.broker_epoch(p.leader)),
        topics=(ap_req.TopicData(topic_id=tp[0], partitions=(ap_req.PartitionData(
            partition_index=i32(tp[1]), leader_epoch=i32(p.leader_epoch), partition_epoch=i32(p.partition_epoch),
            new_isr_with_epochs=tuple(ap_req.BrokerState(broker_id=BrokerId(b),
                                                         broker_epoch=i64(image.broker_epoch(b)))
                                      for b in members)),)),))
    response = cluster.request(ALTER_PARTITION, request)
    return int(response.topics[0].partitions[0].error_code)
