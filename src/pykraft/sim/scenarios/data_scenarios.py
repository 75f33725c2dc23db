"""The data-plane scenarios: 3 controllers, 3 brokers running the real partition host, a topic of 3 partitions
(RF 3, min.insync.replicas 2) and producers of every kind (acks 0, 1 and all; idempotent or not), under faults that
stay within what Kafka promises to survive (data_cluster.FaultBudget: one replica failed or out of sync at a time),
except where a scenario says otherwise.

- data_basic: no faults.
- data_broker_faults: one broker at a time is killed (a process kill or a machine crash losing the unflushed
  tail), paused, cut off from everyone or from the controllers, or shut down (controlled shutdown), and comes back.
- data_disk_loss: a broker loses its disk (every partition log and its metadata log) and comes back empty.
- data_controller_failover: the active controller is killed or cut off, repeatedly, while producers write.
- data_delete_records: DeleteRecords moves log starts while brokers fail one at a time.
- data_unclean_refused / data_unclean_allowed: both followers of every partition are cut off from its leader until
  they leave the ISR, then the leader dies: without unclean.leader.election.enable the partitions stay leaderless
  until it returns (`UncleanElectionRefused`); with it, a follower outside the ISR takes over (`UncleanElection`:
  some partition must get one) and acknowledged records may be lost (that invariant is off there).
- data_transactions: transactional producers and a read_committed consumer on a topic of 2 partitions, the
  coordinator played by the harness (sim/hosts/txn_workload.py), with broker faults, coordinator failovers
  and a zombie producer fenced by a second instance.
- data_swarm: a per-seed draw of all of the above (faults, links, producers, DeleteRecords).
"""

from __future__ import annotations

import random
from typing import Any

from pykraft.sim.engine.network import LinkProfile
from pykraft.sim.engine.world import World
from pykraft.sim.hosts.brokers import BrokerNode
from pykraft.sim.hosts.data_cluster import ALL_KINDS, DataCluster, FaultBudget, ProducerSpec, build_data_cluster
from pykraft.sim.scenarios import faults
from pykraft.sim.scenarios.common import Plan, scenario
from pykraft.sim.scenarios.faults import Traced, at
from pykraft.sim.scenarios.metadata_scenarios import shutdown_broker

FAULTS_FROM_MS = 2500
RECOVERY_GAP_MS = 500
BROKER_FAULTS = ("kill", "pause", "isolate", "cut", "shutdown")


def _broker_fault(world: World, kind: str, node_id: int, controllers: list[int]) -> tuple[Any, Any]:
    """(fault, undo) of one kind on one broker."""
    if kind == "kill":
        return (lambda w: faults.kill(w, node_id)), (lambda w: faults.restart(w, node_id))
    if kind == "pause":
        return (lambda w: faults.pause(w, node_id)), (lambda w: faults.resume(w, node_id))
    if kind == "isolate":
        return (lambda w: faults.isolate(w, node_id)), faults.heal
    if kind == "cut":
        def cut(w: World) -> Traced:
            w.network.split([[node_id], controllers])
            return node_id, "cut-brokers", f"from controllers {controllers}"
        return cut, faults.heal
    if kind == "wipe":
        def lose_disk(w: World) -> Traced:
            faults.kill(w, node_id)
            # A broker's disk comes back without auto-join: that is a controller's setting (data_swarm seed 334094
            # wiped broker 5 with it on; the broker joined the voters, won an election and no controller was active).
            w.nodes[node_id].wipe(auto_join=False)
            return node_id, "disk-lost", "every partition log and the metadata log"
        return lose_disk, (lambda w: faults.restart(w, node_id))
    assert kind == "shutdown", kind
    return (lambda w: shutdown_broker(w, node_id)), (lambda w: faults.restart(w, node_id))


def _coordinator_fault(kind: str) -> tuple[Any, Any]:
    chosen: list[int] = []

    def strike(w: World) -> Traced:
        from pykraft.broker.group_log import OFFSETS_TOPIC
        from pykraft.records.group_records import partition_for
        from pykraft.sim.scenarios.data_workload import leader_of

        leader = leader_of(w, w.stream("coordinator-fault"), OFFSETS_TOPIC, partition_for("g", 3))
        if leader is None:
            return None, "coordinator-fault", "no coordinator known"
        chosen.append(leader)
        return _broker_fault(w, kind, leader, [])[0](w)

    def undo(w: World) -> Traced:
        if not chosen:
            return None, "coordinator-fault", "nothing to undo"
        return _broker_fault(w, kind, chosen[0], [])[1](w)

    return strike, undo


def chain_faults(cluster: DataCluster, rng: random.Random, kinds: tuple[str, ...], start_ms: int, end_ms: int,
                 on_controllers: bool = False) -> FaultBudget:
    """Faults one after the other, each struck only while the cluster is whole, lasting 300-2500 ms."""
    plan = cluster.plan
    world = plan.world
    budget = FaultBudget(world, plan.observers, end_ms)

    def next_fault(after_ms: int) -> None:
        time = after_ms + RECOVERY_GAP_MS + rng.randint(0, 1000)
        if time >= end_ms or not kinds:
            return
        kind = rng.choice(kinds)
        if kind == "controller":
            victim = faults.LeaderVictim()
            fault, undo = (victim.kill, victim.restart) if rng.random() < 0.5 else (victim.isolate, faults.heal)
        elif kind == "coordinator":  # whoever coordinates group "g" when it strikes: a coordinator failover
            fault, undo = _coordinator_fault(rng.choice(["kill", "shutdown", "isolate"]))
        else:
            fault, undo = _broker_fault(world, kind, rng.choice(plan.observers), plan.voters)
        budget.strike(time, fault, undo, rng.randint(300, 2500), next_fault)

    next_fault(start_ms - RECOVERY_GAP_MS)
    plan.stat_hooks.append(lambda: {"faults_struck/skipped": f"{budget.struck}/{budget.skipped}"})
    return budget


def _cluster(name: str, seed: int, trace_size: int | None, faults_end_ms: int, **options: Any) -> DataCluster:
    return build_data_cluster(name, seed, trace_size, faults_end_ms, **options)


@scenario("data_basic")
def data_basic(seed: int, trace_size: int | None) -> Plan:
    return _cluster("data_basic", seed, trace_size, 5000).plan


@scenario("data_broker_faults")
def data_broker_faults(seed: int, trace_size: int | None) -> Plan:
    cluster = _cluster("data_broker_faults", seed, trace_size, 12_000)
    chain_faults(cluster, cluster.plan.world.stream("data-faults"), BROKER_FAULTS, FAULTS_FROM_MS, 12_000)
    return cluster.plan


@scenario("data_disk_loss")
def data_disk_loss(seed: int, trace_size: int | None) -> Plan:
    cluster = _cluster("data_disk_loss", seed, trace_size, 10_000)
    chain_faults(cluster, cluster.plan.world.stream("data-faults"), ("wipe",), FAULTS_FROM_MS, 10_000)
    return cluster.plan


@scenario("data_controller_failover")
def data_controller_failover(seed: int, trace_size: int | None) -> Plan:
    cluster = _cluster("data_controller_failover", seed, trace_size, 10_000)
    chain_faults(cluster, cluster.plan.world.stream("data-faults"), ("controller",), FAULTS_FROM_MS, 10_000)
    return cluster.plan


@scenario("data_delete_records")
def data_delete_records(seed: int, trace_size: int | None) -> Plan:
    cluster = _cluster("data_delete_records", seed, trace_size, 10_000)
    rng = cluster.plan.world.stream("data-faults")
    chain_faults(cluster, rng, ("kill", "pause", "isolate"), FAULTS_FROM_MS, 10_000)
    for _ in range(4):
        at(cluster.plan.world, rng.randint(3000, 9500), cluster.deleter.delete, rng.randrange(3))
    return cluster.plan


def _unclean(name: str, seed: int, trace_size: int | None, allowed: bool) -> Plan:
    configs = (("unclean.leader.election.enable", "true"),) if allowed else ()
    cluster = _cluster(name, seed, trace_size, 12_500, loss_allowed=True, topic_configs=configs,
                       unclean_check_interval_ms=1000 if allowed else 300_000,
                       producers=(ProducerSpec(1, False), ProducerSpec(-1, True)))
    world, plan = cluster.plan.world, cluster.plan
    chosen: list[int] = []
    stranded: list[tuple[Any, int]] = []  # (topic id, partition) whose ISR was only the killed leader

    def cut_followers(w: World) -> Traced:
        leader = _leader_broker(w, plan.observers)
        if leader is None:
            return None, "cut-followers", "no leader yet"
        chosen.append(leader)
        for other in plan.observers:
            if other != leader:
                w.network.block(other, leader)
                w.network.block(leader, other)
        return leader, "cut-followers", "the other brokers cannot fetch from it"

    def kill_leader(w: World) -> Traced:
        if not chosen:
            return None, "kill-leader", "nobody chosen"
        image = _image(w)
        if image is not None:
            stranded.extend((t.topic_id, pid) for t in image.replication.topics.values()
                            for pid, p in t.partitions.items() if tuple(p.isr) == (chosen[0],))
        faults.heal(w)
        w.nodes[chosen[0]].partition_logs.crash_keeps = True  # a process kill: no acknowledged record is lost
        return faults.kill(w, chosen[0])

    def check(w: World) -> Traced:
        image = _image(w)
        if not chosen or image is None:
            return None, "unclean-check", "nothing to check"
        elected = [f"{image.replication.topics[t].name}-{pid}" for t, pid in stranded
                   if t in image.replication.topics
                   and image.replication.topics[t].partitions[pid].leader not in (-1, chosen[0])]
        if allowed and stranded and not elected:
            w.checker.violation("UncleanElection", None, f"no partition of {len(stranded)} stranded with broker "
                                                         f"{chosen[0]} elected a replica outside its ISR")
        if not allowed and elected:
            w.checker.violation("UncleanElectionRefused", None, f"{elected} elected a leader outside the ISR")
        return None, "unclean-check", f"stranded {len(stranded)}, elected outside the ISR: {elected}"

    at(world, 3800, cut_followers)
    at(world, 6500, kill_leader)  # fenced 4 s later (the session timeout), then the periodic unclean check
    at(world, 12_300, check)
    at(world, 12_400, lambda w: faults.restart(w, chosen[0]) if chosen else (None, "restart", "nobody"))
    world.checker.enabled = world.checker.enabled | {"UncleanElection", "UncleanElectionRefused"}
    plan.stat_hooks.append(lambda: {"stranded_partitions": len(stranded)})
    return plan


def _leader_broker(world: World, brokers: list[int]) -> int | None:
    """The broker leading the most data partitions (in its own view)."""
    counts = {}
    for b in brokers:
        node = world.nodes[b]
        if isinstance(node, BrokerNode) and node.data is not None and node.data.open:
            counts[b] = sum(r.leading is not None for r in node.data.host.replicas.values())
    return max(counts, key=lambda b: (counts[b], -b)) if counts and max(counts.values()) else None


def _image(world: World) -> Any:
    """The committed image of the newest raft leader (the active controller's)."""
    from pykraft.sim.scenarios.workload import newest_leader

    return getattr(newest_leader(world), "committed_image", None)


@scenario("data_unclean_refused")
def data_unclean_refused(seed: int, trace_size: int | None) -> Plan:
    return _unclean("data_unclean_refused", seed, trace_size, allowed=False)


@scenario("data_unclean_allowed")
def data_unclean_allowed(seed: int, trace_size: int | None) -> Plan:
    return _unclean("data_unclean_allowed", seed, trace_size, allowed=True)


@scenario("data_swarm")
def data_swarm(seed: int, trace_size: int | None) -> Plan:
    probe = random.Random(seed * 7919 + 17)
    specs = tuple(probe.sample(ALL_KINDS, probe.randint(2, len(ALL_KINDS))))
    if not any(s.acks == -1 for s in specs):
        specs += (ALL_KINDS[0],)
    end = probe.choice([8000, 12_000])
    cluster = _cluster("data_swarm", seed, trace_size, end, producers=specs)
    world = cluster.plan.world
    if probe.random() < 0.5:
        at(world, 0, faults.set_links, LinkProfile(drop=probe.choice([0.0, 0.01, 0.03]),
                                                   reorder=probe.choice([0.0, 0.05]),
                                                   delay_max_ms=probe.choice([3, 10, 20])))
    kinds = tuple(k for k in (*BROKER_FAULTS, "wipe", "controller") if probe.random() < 0.6)
    chain_faults(cluster, world.stream("data-faults"), kinds, FAULTS_FROM_MS, end)
    for _ in range(probe.randint(0, 3)):
        at(world, probe.randint(3000, end - 500), cluster.deleter.delete, probe.randrange(3))
    cluster.plan.notes.append(f"faults: {','.join(kinds) or 'none'}")
    return cluster.plan


@scenario("data_reassign")
def data_reassign(seed: int, trace_size: int | None) -> Plan:
    """KIP-455 moves of the data topic's partitions among 4 brokers while producers write, with faults one at a
    time: a move copies the log to the adding replicas before the removing ones go, so no acknowledged record is
    lost (the reassignment driver of reassign_scenarios.py, its ReassignmentTarget check included)."""
    from pykraft.sim.hosts.data_cluster import DATA_TOPIC, PARTITIONS, REPLICATION_FACTOR
    from pykraft.sim.hosts.metadata_cluster import TopicSpec
    from pykraft.sim.scenarios.reassign_scenarios import ReassignmentDriver

    cluster = _cluster("data_reassign", seed, trace_size, 11_000, brokers=4)
    plan = cluster.plan
    driver = ReassignmentDriver(plan.world, plan.voters, plan.observers,
                                [TopicSpec(DATA_TOPIC, PARTITIONS, REPLICATION_FACTOR)], 3000, 10_000, (300, 900))
    plan.gap_checks.append(driver.gaps)
    plan.stat_hooks.append(driver.stats)
    chain_faults(cluster, plan.world.stream("data-faults"), ("kill", "pause", "isolate", "controller"),
                 FAULTS_FROM_MS, 11_000)
    return plan


@scenario("data_groups")
def data_groups(seed: int, trace_size: int | None) -> Plan:
    """A consumer group of three reads the data topic while producers write: coordinator failovers (the brokers
    fail one at a time, so the leadership of `__consumer_offsets` partitions moves) and members leaving and coming
    back (rebalances); a group's committed offsets never go back within a generation (GroupOffsetMonotonic)."""
    from pykraft.sim.hosts.data_cluster import DATA_TOPIC, PARTITIONS
    from pykraft.sim.hosts.metadata_cluster import TopicSpec
    from pykraft.sim.scenarios.group_workload import GroupConsumer

    cluster = _cluster("data_groups", seed, trace_size, 12_000,
                       extra_topics=(TopicSpec("__consumer_offsets", 3, 3),))
    plan = cluster.plan
    world = plan.world
    rng = world.stream("group-faults")
    consumers = [GroupConsumer(world, i, "g", DATA_TOPIC, PARTITIONS) for i in range(3)]
    for consumer in consumers:
        at(world, 2000 + rng.randint(0, 500), consumer.start)
    leaver = rng.choice(consumers)
    at(world, rng.randint(5000, 7000), leaver.stop)
    at(world, rng.randint(8000, 10_000), leaver.start)
    chain_faults(cluster, rng, ("coordinator", "coordinator", "kill", "pause", "isolate", "shutdown"),
                 FAULTS_FROM_MS, 12_000)
    plan.stat_hooks.append(lambda: {"consumers": "; ".join(f"{c.id}: {c.stats}" for c in consumers),
                                    "coordinator_loads": sum(getattr(n, "coordinator_loads", 0) + (
                                        n.groups.loads if getattr(n, "groups", None) else 0)
                                        for n in world.nodes.values())})
    return plan


@scenario("data_transactions")
def data_transactions(seed: int, trace_size: int | None) -> Plan:
    """Transactional producers ("alpha", "beta") write to both partitions of topic `txn` and commit or abort, a
    read_committed consumer reads it through the brokers' fetch path, while brokers fail one at a time (kill,
    pause, isolation, controlled shutdown, the controller): the transaction coordinator is the harness's, which
    writes the markers through the partition leaders, fails over (a new coordinator epoch) and fences "alpha"'s
    first instance with a second one. TxnReadCommittedClean, TxnFencedNeverCommits, TxnAtomicCommit."""
    from pykraft.sim.hosts.metadata_cluster import TopicSpec
    from pykraft.sim.hosts.txn_workload import TXN_PARTITIONS, TXN_TOPIC, TxnDriver

    end = 10_000
    cluster = _cluster("data_transactions", seed, trace_size, end, producers=ALL_KINDS[:1],
                       extra_topics=(TopicSpec(TXN_TOPIC, TXN_PARTITIONS, 3),))
    plan = cluster.plan
    world = plan.world
    rng = world.stream("txn-faults")
    driver = TxnDriver(world, end)
    at(world, 2000, driver.start)
    at(world, rng.randint(3000, 7000), driver.fence)
    for _ in range(rng.randint(1, 3)):
        at(world, rng.randint(2500, end - 500), driver.failover)
    chain_faults(cluster, rng, ("kill", "kill", "pause", "isolate", "shutdown", "controller"), FAULTS_FROM_MS, end)
    plan.gap_checks.append(driver.gaps)
    plan.end_checks.append(driver.check_atomic)
    plan.stat_hooks.append(driver.describe)
    return plan
