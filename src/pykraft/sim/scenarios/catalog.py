"""The scenarios: each of Kafka's RaftEventSimulationTest scenarios (reference §5.2) and the randomized swarm.

A scenario draws its cluster from the seed where Kafka's does (1-5 voters, observers), schedules its faults, and
adds checks of its own: `ProgressWithMajority` (the leader's high watermark advances while a majority is up and
connected) and `StableLeadership` (no new leader during the KIP-996 partial partition).
"""

from __future__ import annotations

from dataclasses import replace

from pykraft.sim.scenarios import faults
from pykraft.sim.scenarios.admin import AdminTool
from pykraft.sim.scenarios.faults import FaultMix, LeaderVictim, Traced, at
from pykraft.sim.scenarios.common import Plan, add_workload, build_cluster, lossy, new_world, scenario
from pykraft.sim.engine.world import Params, World


def expect_progress(world: World, from_ms: int, to_ms: int) -> None:
    """Kafka's canMakeProgress checks: the newest leader's HWM at `to_ms` is above the one at `from_ms`."""
    mark: list[int] = []

    def start(w: World) -> Traced:
        mark.append(w.checker.newest_hwm[1])
        return None, "progress-mark", f"hwm {mark[0]}"

    def finish(w: World) -> Traced:
        now = w.checker.newest_hwm[1]
        if now <= mark[0]:
            w.checker.violation("ProgressWithMajority", None, f"hwm {mark[0]} at {from_ms} ms, {now} at {to_ms} ms")
        return None, "progress-check", f"hwm {mark[0]} -> {now}"

    at(world, from_ms, start)
    at(world, to_ms, finish)


def _plan(name: str, seed: int, trace_size: int | None, voters: int, observers: int, faults_end_ms: int,
          params: Params | None = None, clients: int = 1, interval_ms: int = 20) -> Plan:
    if params is None:  # storage knobs drawn per seed: some runs never clean the log, so followers that fall
        # behind are repaired by truncation (diverging epochs) rather than by snapshots
        knobs = new_world(seed, 0).stream("params")
        params = Params(snapshot_every=knobs.choice([0, 40, 150]), clean_probability=knobs.choice([0.3, 1.0]),
                        torn_write_probability=knobs.choice([0.0, 0.5]))
    world = new_world(seed, trace_size, params)
    voter_ids, observer_ids = build_cluster(world, voters, observers)
    plan = Plan(name, world, voter_ids, observer_ids, faults_end_ms)
    add_workload(plan, clients=clients, interval_ms=interval_ms)
    return plan


def _size(seed: int, low: int = 1, high: int = 5) -> tuple[int, int]:
    rng = new_world(seed, 0).stream("size")
    return rng.randint(low, high), rng.randint(0, 3)


@scenario("initial_election")
def initial_election(seed: int, trace_size: int | None) -> Plan:
    voters, observers = _size(seed)
    plan = _plan("initial_election", seed, trace_size, voters, observers, 3000)
    expect_progress(plan.world, 2500, 3000)
    return plan


def _leader_failure(name: str, seed: int, trace_size: int | None, graceful: bool) -> Plan:
    voters, observers = _size(seed, 3, 5)
    plan = _plan(name, seed, trace_size, voters, observers, 7000)
    victim = LeaderVictim()
    at(plan.world, 2500, victim.shutdown if graceful else victim.kill)
    at(plan.world, 5500, victim.restart)
    expect_progress(plan.world, 5000, 7000)
    return plan


@scenario("leader_failure_graceful")
def leader_failure_graceful(seed: int, trace_size: int | None) -> Plan:
    return _leader_failure("leader_failure_graceful", seed, trace_size, graceful=True)


@scenario("leader_failure_hard")
def leader_failure_hard(seed: int, trace_size: int | None) -> Plan:
    return _leader_failure("leader_failure_hard", seed, trace_size, graceful=False)


@scenario("all_killed_majority_restart")
def all_killed_majority_restart(seed: int, trace_size: int | None) -> Plan:
    voters, observers = _size(seed, 1, 5)
    plan = _plan("all_killed_majority_restart", seed, trace_size, voters, observers,
                 9000, Params(torn_write_probability=0.5))
    world = plan.world
    for node in plan.voters + plan.observers:
        at(world, 2500, faults.kill, node)
    for node in plan.voters[: len(plan.voters) // 2 + 1]:
        at(world, 3000, faults.restart, node)
    expect_progress(world, 6500, 9000)
    return plan


@scenario("leader_partitioned")
def leader_partitioned(seed: int, trace_size: int | None) -> Plan:
    voters, observers = _size(seed, 3, 5)
    plan = _plan("leader_partitioned", seed, trace_size, voters, observers, 8000)
    victim = LeaderVictim()
    at(plan.world, 2500, victim.isolate)
    at(plan.world, 7000, faults.heal)
    expect_progress(plan.world, 5500, 7000)
    return plan


@scenario("majority_reachable")
def majority_reachable(seed: int, trace_size: int | None) -> Plan:
    plan = _plan("majority_reachable", seed, trace_size, 5, 0, 9000)
    at(plan.world, 2500, faults.split, [[0, 1], [2, 3, 4]])
    expect_progress(plan.world, 6000, 8000)
    at(plan.world, 8000, faults.heal)
    return plan


@scenario("back_to_back_leader_failures")
def back_to_back_leader_failures(seed: int, trace_size: int | None) -> Plan:
    voters, observers = _size(seed, 3, 5)
    plan = _plan("back_to_back_leader_failures", seed, trace_size, voters, observers, 10_000)
    first, second = LeaderVictim(), LeaderVictim()
    at(plan.world, 2500, first.kill)
    at(plan.world, 5000, first.restart)
    at(plan.world, 5100, second.kill)  # whoever leads now (the new leader, or the restarted one again)
    at(plan.world, 8000, second.restart)
    expect_progress(plan.world, 7800, 10_000)
    return plan


@scenario("single_node_data_loss")
def single_node_data_loss(seed: int, trace_size: int | None) -> Plan:
    """Kafka's canRecoverFromSingleNodeCommittedDataLoss: a voter loses its disk and comes back with a new
    directory id (KIP-853), rejoining by auto-join."""
    voters, observers = _size(seed, 3, 5)
    plan = _plan("single_node_data_loss", seed, trace_size, voters, observers, 9000)
    rng = plan.world.stream("victim")
    victim = rng.choice(plan.voters)
    at(plan.world, 3000, faults.wipe_and_restart, victim)
    expect_progress(plan.world, 6000, 9000)
    return plan


@scenario("add_and_remove_voters")
def add_and_remove_voters(seed: int, trace_size: int | None) -> Plan:
    """canAddAndRemoveVoters: grow to include the observers, then shrink to a drawn subset, with crashes."""
    voters, observers = _size(seed, 1, 4)
    observers = max(observers, 1)
    plan = _plan("add_and_remove_voters", seed, trace_size, voters, observers, 12_000)
    world = plan.world
    rng = world.stream("targets")
    plan.admin = admin = AdminTool(world, eager=rng.random() < 0.5, ack_on_append=rng.choice([0.0, 0.3, 1.0]))
    everyone = plan.voters + plan.observers
    at(world, 2500, lambda w: admin.set_target(everyone))
    final = sorted(rng.sample(everyone, rng.randint(1, len(everyone))))
    at(world, 6000, lambda w: admin.set_target(final))
    at(world, 4000, faults.kill, rng.choice(everyone))
    at(world, 4800, lambda w: _restart_all(w))
    return plan


def _restart_all(world: World) -> Traced:
    for node_id, node in sorted(world.nodes.items()):
        if not node.is_up():
            faults.restart(world, node_id)
    return None, "restart-all", ""


@scenario("prevote_partial_partition")
def prevote_partial_partition(seed: int, trace_size: int | None) -> Plan:
    """KIP-996's 5-node topology: only A-C, B-D, C-D, C-E, D-E work. The leader is labelled C; with pre-vote
    nobody can depose it while its majority (A, D, E) is reachable."""
    plan = _plan("prevote_partial_partition", seed, trace_size, 5, 0, 9000)
    world = plan.world
    marks: list[set[tuple[int, int]]] = []

    def partition(w: World) -> Traced:
        leader = faults.leader_id(w)
        if leader is None:
            return None, "partial-partition", "no leader yet"
        c = leader
        a, b, d, e = [n for n in sorted(w.nodes) if n != c]
        allowed = {(a, c), (b, d), (c, d), (c, e), (d, e)}
        for x in w.nodes:
            for y in w.nodes:
                if x != y and (x, y) not in allowed and (y, x) not in allowed:
                    w.network.block(x, y)
        marks.append(set(w.checker.elections))
        return c, "partial-partition", f"A={a} B={b} C={c} D={d} E={e}"

    def check(w: World) -> Traced:
        if marks:
            new = set(w.checker.elections) - marks[0]
            if new:
                w.checker.violation("StableLeadership", None, f"new leaders during the partition: {sorted(new)}")
        return None, "stable-check", ""

    at(world, 3000, partition)
    at(world, 8000, check)
    at(world, 8000, faults.heal)
    return plan


@scenario("swap_partitioned_voter")
def swap_partitioned_voter(seed: int, trace_size: int | None) -> Plan:
    """canSwapPartitionedVoterForObserver: a voter is cut off; the admin adds the observer and removes it."""
    plan = _plan("swap_partitioned_voter", seed, trace_size, 3, 1, 12_000)
    world = plan.world
    plan.admin = admin = AdminTool(world)
    chosen: list[int] = []

    def cut(w: World) -> Traced:
        leader = faults.leader_id(w)
        victim = next(n for n in plan.voters if n != leader)
        chosen.append(victim)
        faults.isolate(w, victim)
        return victim, "isolate", "voter to swap out"

    at(world, 2500, cut)
    at(world, 3000, lambda w: admin.set_target([n for n in plan.voters if n not in chosen] + plan.observers))
    return plan


@scenario("swarm")
def swarm(seed: int, trace_size: int | None) -> Plan:
    """Each seed draws its own cluster (1-5 voters, 0-3 observers), network, storage knobs and fault mix."""
    return _swarm("swarm", seed, trace_size, [5000, 8000], 3, 20)


@scenario("swarm_short")
def swarm_short(seed: int, trace_size: int | None) -> Plan:
    """The swarm with a short fault phase and a slower appender: the CI sweep's profile (about 0.2 s a seed)."""
    return _swarm("swarm_short", seed, trace_size, [2500, 3500], 2, 50)


@scenario("swarm_ci")
def swarm_ci(seed: int, trace_size: int | None) -> Plan:
    """The CI sweep's profile: the swarm's draws with at most one observer and a fault phase from 1.2 s (after the
    first election) to 3-4.5 s, half of its node faults striking whoever leads at that moment; the observer counts
    against the minority bound, since the reassignment may make it a voter while its disk is lost."""
    return _swarm("swarm_ci", seed, trace_size, [3000, 4500], 1, 60, faults_start_ms=1200, leader_bias=0.5,
                  observers_in_budget=True)


@scenario("swarm_disks")
def swarm_disks(seed: int, trace_size: int | None) -> Plan:
    """The CI sweep's second profile, for the class of swarm seed 770042: every run has bit flips, each followed by
    a restart whose start-up scan finds it (the disk is lost), and reassigns its voters to a drawn set of old
    voters and 1-2 observers, so lost disks meet voter sets that grow and shrink; `faults.DiskLossBudget` keeps
    them a minority of each set, so every run must recover."""
    return _swarm("swarm_disks", seed, trace_size, [3000, 4500], 2, 60, faults_start_ms=1200, leader_bias=0.5,
                  min_observers=1, reassign_chance=1.0, bit_flips=True)


def _swarm(name: str, seed: int, trace_size: int | None, fault_ends: list[int], max_observers: int,
           interval_ms: int, faults_start_ms: int | None = None, leader_bias: float = 0.0,
           observers_in_budget: bool = False, min_observers: int = 0, reassign_chance: float = 0.4,
           bit_flips: bool = False) -> Plan:
    probe = new_world(seed, 0).stream("swarm")
    voters, observers = probe.randint(1, 5), probe.randint(min_observers, max_observers)
    params = Params(flush_latency_max_ms=probe.choice([0, 2, 10]), torn_write_probability=probe.choice([0, 0.5]),
                    snapshot_every=probe.choice([0, 20, 60]), clean_probability=probe.choice([0.2, 1.0]))
    faults_end = probe.choice(fault_ends)
    plan = _plan(name, seed, trace_size, voters, observers, faults_end, params, clients=probe.randint(0, 2),
                 interval_ms=interval_ms)
    world = plan.world
    if probe.random() < 0.6:
        at(world, 0, faults.set_links, lossy(probe))
    mix = FaultMix.draw(probe)
    if bit_flips:
        mix = replace(mix, bit_flips=True)
    plan.notes.append(f"faults: {','.join(mix.kinds()) or 'none'}")
    start = min(1500, faults_end // 2) if faults_start_ms is None else faults_start_ms
    disks = faults.schedule_random_faults(world, probe, plan.voters, start, faults_end, mix, leader_bias,
                                          promotable=plan.observers if observers_in_budget else [])
    disks.restart_after_flip = bit_flips
    if observers and probe.random() < reassign_chance:
        plan.admin = admin = AdminTool(world, eager=probe.random() < 0.5)
        everyone = plan.voters + plan.observers
        target = keep_a_bootstrap_voter(sorted(probe.sample(everyone, probe.randint(1, len(everyone)))),
                                        plan.voters)
        disks.cover_reassignment(plan.voters, target)
        at(world, probe.randint(2000, 4000), lambda w: admin.set_target(target))
        plan.notes.append(f"reassign to {target}")
    return plan


def keep_a_bootstrap_voter(target: list[int], initial_voters: list[int]) -> list[int]:
    """The target with at least one initial voter (the lowest id when it drew none).

    The initial voters' endpoints are every node's bootstrap servers (`build_cluster`), the only place where an
    observer that has lost track of the leader can ask for it (Kafka's observers fetch from
    controller.quorum.bootstrap.servers alone). A voter set without any of them strands such a node: swarm seed
    2001553 reassigned voters {0} to {1, 2}; node 0, an observer from then on and its own only bootstrap server,
    lost the leader in an election and asked itself forever. An operator's configuration mistake (the
    bootstrap list must reach the quorum), not a raft fault; voter_change_storm keeps such an anchor too."""
    if set(target) & set(initial_voters):
        return target
    return sorted([*target, min(initial_voters)])

