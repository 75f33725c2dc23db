"""The metadata scenarios: controllers and brokers (metadata_cluster.py) under controller failover, broker
crashes, partitions and controlled shutdowns. Listed with the raft scenarios (registry.py), so
`pykraft sim run --scenario metadata_basic --seed N` and `sim sweep` run them.

- metadata_basic: 3 controllers, 3 brokers, two topics (RF 3), no faults.
- metadata_failover: the active controller is killed or isolated, repeatedly, and comes back.
- metadata_brokers: brokers crash (and restart as new incarnations), are cut off from the controllers or from
  everyone, and shut down gracefully (controlled shutdown), one broker at a time, or all crash at once.
- metadata_swarm: a per-seed draw of cluster size (1-3 controllers, 3-4 brokers), lossy links, storage knobs and
  a mix of all of the above, bounded like the raft swarm (a minority of controllers, one broker at a time),
  plus, for half the seeds, the raft swarm's node faults (crashes, raft shutdowns, pauses, isolation, clock
  jumps) on any node.
"""

from __future__ import annotations

import random

from pykraft.sim.scenarios import faults
from pykraft.sim.hosts.brokers import BrokerNode
from pykraft.sim.scenarios.faults import FaultMix, LeaderVictim, Traced, at
from pykraft.sim.hosts.metadata_cluster import TopicSpec, attach, build_metadata_cluster
from pykraft.sim.scenarios.common import Plan, lossy, new_world, scenario
from pykraft.sim.engine.world import Params, World

TOPICS = [TopicSpec("orders", 4, 3), TopicSpec("events", 2, 3)]


def _plan(name: str, seed: int, trace_size: int | None, controllers: int, brokers: int, faults_end_ms: int,
          params: Params | None = None) -> Plan:
    world = new_world(seed, trace_size, params or Params(snapshot_every=40, clean_probability=0.5))
    voters, observers = build_metadata_cluster(world, controllers, brokers)
    plan = Plan(name, world, voters, observers, faults_end_ms)
    attach(plan, TOPICS, producer=True)
    plan.notes.append(f"{controllers} controllers, brokers {observers}")
    return plan


# ---- broker faults -------------------------------------------------------------------------------------------------
def crash_broker(world: World, node_id: int) -> Traced:
    return faults.kill(world, node_id)


def shutdown_broker(world: World, node_id: int) -> Traced:
    node = world.nodes[node_id]
    assert isinstance(node, BrokerNode)
    return node_id, "ctl-shutdown", node.controlled_shutdown()


def cut_from_controllers(world: World, node_id: int, controllers: list[int]) -> Traced:
    world.network.split([[node_id], controllers])
    return node_id, "cut-brokers", f"from controllers {controllers}"


def schedule_broker_faults(world: World, rng: random.Random, brokers: list[int], controllers: list[int],
                           start_ms: int, end_ms: int, kinds: list[str]) -> None:
    """One broker fault at a time (or an outage of all of them), each lasting a drawn while, then recovered."""
    time = start_ms
    while kinds:
        time += rng.randint(300, 1200)
        if time >= end_ms:
            return
        node, kind = rng.choice(brokers), rng.choice(kinds)
        until = min(time + rng.randint(500, 4000), end_ms)
        if kind == "crash":
            at(world, time, crash_broker, node)
            at(world, until, faults.restart, node)
        elif kind == "shutdown":
            at(world, time, shutdown_broker, node)
            at(world, until, faults.restart, node)
        elif kind == "cut":
            at(world, time, cut_from_controllers, node, controllers)
            at(world, until, faults.heal)
        elif kind == "isolate":
            at(world, time, faults.isolate, node)
            at(world, until, faults.heal)
        elif kind == "outage":  # every broker dies: partitions keep their last ISR member, leaderless
            for index, broker in enumerate(brokers):
                at(world, time + 50 * index, crash_broker, broker)
                at(world, until + 300 * index, faults.restart, broker)
            until += 300 * len(brokers)
        time = until


def schedule_controller_failovers(world: World, rng: random.Random, start_ms: int, end_ms: int) -> None:
    time = start_ms
    while True:
        time += rng.randint(800, 2500)
        if time >= end_ms:
            return
        victim = LeaderVictim()
        until = min(time + rng.randint(500, 3000), end_ms)
        if rng.random() < 0.5:
            at(world, time, victim.kill)
            at(world, until, victim.restart)
        else:
            at(world, time, victim.isolate)
            at(world, until, faults.heal)
        time = until


# ---- scenarios -------------------------------------------------------------------------------------------------------
@scenario("metadata_basic")
def metadata_basic(seed: int, trace_size: int | None) -> Plan:
    return _plan("metadata_basic", seed, trace_size, 3, 3, 4000)


@scenario("metadata_failover")
def metadata_failover(seed: int, trace_size: int | None) -> Plan:
    plan = _plan("metadata_failover", seed, trace_size, 3, 3, 12_000)
    schedule_controller_failovers(plan.world, plan.world.stream("failover"), 2500, 11_000)
    return plan


@scenario("metadata_brokers")
def metadata_brokers(seed: int, trace_size: int | None) -> Plan:
    plan = _plan("metadata_brokers", seed, trace_size, 3, 4, 14_000)
    schedule_broker_faults(plan.world, plan.world.stream("broker-faults"), plan.observers, plan.voters, 2500,
                           13_000, ["crash", "shutdown", "cut", "isolate", "outage"])
    return plan


@scenario("metadata_swarm")
def metadata_swarm(seed: int, trace_size: int | None) -> Plan:
    probe = new_world(seed, 0).stream("metadata-swarm")
    controllers, brokers = probe.choice([1, 3, 3]), probe.randint(3, 4)
    params = Params(flush_latency_max_ms=probe.choice([0, 2, 10]), torn_write_probability=probe.choice([0, 0.5]),
                    snapshot_every=probe.choice([0, 20, 60]), clean_probability=probe.choice([0.2, 1.0]))
    faults_end = probe.choice([4000, 6000])
    plan = _plan("metadata_swarm", seed, trace_size, controllers, brokers, faults_end, params)
    world = plan.world
    if probe.random() < 0.5:
        at(world, 0, faults.set_links, lossy(probe))
    kinds = [k for k in ("crash", "shutdown", "cut", "isolate", "outage") if probe.random() < 0.5]
    schedule_broker_faults(world, probe, plan.observers, plan.voters, 1500, faults_end, kinds)
    if controllers > 1 and probe.random() < 0.6:
        schedule_controller_failovers(world, probe, 1500, faults_end)
        kinds.append("failover")
    if probe.random() < 0.5:
        # The raft swarm's node faults on any node (pauses: a broker or controller stalls, then resumes late),
        # without bit flips: a replaced disk rejoins by auto-join, which would make a broker a voter.
        mix = FaultMix.draw(probe)
        mix = FaultMix(mix.crashes, mix.shutdowns, mix.pauses, mix.partitions, False, mix.clock_jumps,
                       mix.mean_gap_ms)
        faults.schedule_random_faults(world, probe, plan.voters, 1500, faults_end, mix)
        kinds.append("raft-mix:" + "+".join(mix.kinds()))
    plan.notes.append(f"faults: {','.join(kinds) or 'none'}")
    return plan
