"""Targeted scenarios: each drives the cluster down one code path that the swarm reaches too rarely for the
invariant that guards it to be shown to bite.

- `diverging_tail`: the leader and one follower are cut off from the majority right after a burst of appends, so
  an uncommitted tail reaches only a minority; the majority elects a new leader that writes in a higher epoch;
  the partition heals and the old leader and its follower must cut their tails through a Fetch answered with
  DivergingEpoch (log truncation). Snapshots are rare, so the repair goes through truncation and not a snapshot
  download. Guards: NoTruncationBelowCommitted, NoDivergence, AckedValueNotLost.
- `voter_change_storm`: an admin fires AddVoter and RemoveVoter requests at the leader without waiting for the
  previous answer, over a slow and lossy network, so that a leader without the "one uncommitted voter change"
  guard would hold two VotersRecords above its high watermark. Guard: AtMostOneUncommittedVoterSet.
- `self_removal_cut`: two voters; the leader, cut off, removes itself. Liveness: fails with today's core (see
  its docstring and tests/sim/test_sim_found_bugs.py).
- `promoted_voter_disk_loss`: a reassignment swaps a voter for the observer, and the newly promoted voter loses
  its disk (a flipped bit its restart reads). One disk of a three-voter set: after healing, the replaced disk
  must rejoin through auto-join next to (or racing) the reassignment. Swarm seed 770042 did this in a
  two-voter set, which no raft survives (faults.DiskLossBudget now keeps the swarm out of that).
"""

from __future__ import annotations

from pykraft.raft import reconfig_messages as rm
from pykraft.sim.scenarios import faults
from pykraft.sim.scenarios.admin import AdminTool, voter_node
from pykraft.sim.scenarios.faults import Traced, at
from pykraft.sim.engine.network import LinkProfile
from pykraft.sim.engine.node import CLUSTER_ID
from pykraft.sim.engine.node import Status
from pykraft.sim.scenarios.common import Plan, add_workload, build_cluster, lossy, new_world, scenario
from pykraft.sim.scenarios.storm import VoterChangeStorm
from pykraft.sim.scenarios.workload import newest_leader
from pykraft.sim.engine.world import Params, World

# One round of `diverging_tail`: the cut lasts long enough for the majority to notice (fetch timeout 2000 ms),
# hold an election (timeout 1000 ms plus backoff) and write in its new epoch; then the network heals.
ROUND_MS = 6500
CUT_MIN_MS, CUT_MAX_MS = 4200, 5200
FIRST_ROUND_MS = 2000


class MinorityCut:
    """Cuts the current leader off the majority, together with one follower when the rest still hold a majority
    (5 voters): that follower receives the tail too and must truncate it as well."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.rng = plan.world.stream("cut")
        self.cuts = 0

    def cut(self, world: World) -> Traced:
        leader = faults.leader_id(world)
        if leader is None or leader not in self.plan.voters:
            return None, "minority-cut", "no voter leads"
        others = [n for n in self.plan.voters if n != leader]
        minority = [leader]
        if len(others) - 1 > len(self.plan.voters) // 2:  # the rest still hold a majority without that follower
            minority.append(self.rng.choice(others))
        majority = [n for n in sorted(world.nodes) if n not in minority]
        faults.split(world, [minority, majority])
        self.cuts += 1
        return leader, "minority-cut", f"{sorted(minority)} | {majority}"


@scenario("diverging_tail")
def diverging_tail(seed: int, trace_size: int | None) -> Plan:
    """Rounds of: cut the leader (and one follower) off while it appends, let the majority elect, heal."""
    probe = new_world(seed, 0).stream("diverging")
    voters = probe.choice([3, 4, 5, 5])
    observers = probe.choice([0, 0, 1])
    rounds = probe.choice([2, 3])
    # Snapshots rare or never, and never the log cleaning that would make a snapshot download the repair.
    params = Params(flush_latency_max_ms=probe.choice([0, 2, 5]), snapshot_every=probe.choice([0, 0, 400]),
                    clean_probability=0.0)
    faults_end = FIRST_ROUND_MS + rounds * ROUND_MS
    world = new_world(seed, trace_size, params)
    voter_ids, observer_ids = build_cluster(world, voters, observers)
    plan = Plan("diverging_tail", world, voter_ids, observer_ids, faults_end)
    # A fast appender: the tail a cut-off leader accumulates before the majority elects is tens of batches.
    add_workload(plan, clients=probe.randint(0, 1), interval_ms=probe.choice([5, 10, 20]))
    if probe.random() < 0.5:
        at(world, 0, faults.set_links, LinkProfile(drop=probe.choice([0.0, 0.01]), duplicate=0.0,
                                                   reorder=probe.choice([0.0, 0.02]), delay_min_ms=1,
                                                   delay_max_ms=probe.choice([3, 10])))
    cut = MinorityCut(plan)
    for index in range(rounds):
        start = FIRST_ROUND_MS + index * ROUND_MS
        at(world, start, cut.cut)
        at(world, start + probe.randint(CUT_MIN_MS, CUT_MAX_MS), faults.heal)
    plan.stat_hooks.append(lambda: {"minority_cuts": cut.cuts})
    plan.notes.append(f"{rounds} rounds")
    return plan


@scenario("voter_change_storm")
def voter_change_storm(seed: int, trace_size: int | None) -> Plan:
    """AddVoter/RemoveVoter fired concurrently at the leader over a slow, lossy network."""
    probe = new_world(seed, 0).stream("storm")
    voters, observers = probe.randint(1, 4), probe.randint(1, 3)
    params = Params(flush_latency_max_ms=probe.choice([0, 3, 10]), snapshot_every=probe.choice([0, 60]),
                    clean_probability=probe.choice([0.3, 1.0]))
    faults_end = probe.choice([8000, 10_000])
    world = new_world(seed, trace_size, params)
    voter_ids, observer_ids = build_cluster(world, voters, observers)
    plan = Plan("voter_change_storm", world, voter_ids, observer_ids, faults_end)
    add_workload(plan, clients=probe.randint(0, 1), interval_ms=probe.choice([10, 30]))
    # Slow links: a VotersRecord takes a while to commit, so the next request lands while it is uncommitted.
    at(world, 0, faults.set_links, LinkProfile(drop=probe.choice([0.0, 0.02, 0.05]),
                                               duplicate=probe.choice([0.0, 0.02]),
                                               reorder=probe.choice([0.0, 0.05]),
                                               delay_min_ms=probe.choice([1, 5]),
                                               delay_max_ms=probe.choice([20, 40, 80])))
    storm = VoterChangeStorm(world, voter_ids + observer_ids, voter_ids, until_ms=faults_end - 1000,
                             gap_ms=probe.choice([5, 20, 60]), ack_on_append=probe.choice([0.3, 0.7]))
    at(world, 1500, storm.start)
    plan.stat_hooks.append(storm.stats)
    return plan


@scenario("self_removal_cut")
def self_removal_cut(seed: int, trace_size: int | None) -> Plan:
    """Two voters; the leader is cut off, then asked to remove itself. Its VotersRecord (and what it appends
    after) reaches nobody, and it resigns on check-quorum. After the heal the follower, a voter of the old set,
    needs the old leader's vote, which a longer log refuses; the old leader is no voter in its own (uncommitted)
    view and never stands. The minimal form of what `voter_change_storm` seed 225 found (liveness)."""
    probe = new_world(seed, 0).stream("self-removal")
    world = new_world(seed, trace_size, Params(snapshot_every=0))
    voter_ids, observer_ids = build_cluster(world, 2, probe.randint(0, 1))
    plan = Plan("self_removal_cut", world, voter_ids, observer_ids, 9000)
    add_workload(plan, clients=0, interval_ms=20)
    removal = SelfRemoval(plan)
    at(world, 2500, removal.cut)
    at(world, 2600, removal.remove)
    at(world, 8000, faults.heal)
    return plan


class SelfRemoval:
    """Cuts the leader off the other nodes (the admin still reaches it) and asks it to remove itself."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.leader: int | None = None
        self.admin = VoterChangeStorm(plan.world, [], plan.voters, until_ms=0, gap_ms=1, ack_on_append=0.0)
        plan.stat_hooks.append(self.admin.stats)

    def cut(self, world: World) -> Traced:
        self.leader = faults.leader_id(world)
        if self.leader is None:
            return None, "self-removal-cut", "no leader"
        faults.split(world, [[self.leader], [n for n in sorted(world.nodes) if n != self.leader]])
        return self.leader, "self-removal-cut", ""

    def remove(self, world: World) -> Traced:
        if self.leader is None:
            return None, "self-removal", "no leader"
        key = voter_node(world, self.leader).key
        self.admin.send(self.leader, rm.remove_voter_request(CLUSTER_ID, key), "RemoveVoter")
        return self.leader, "self-removal", "RemoveVoter(itself)"


@scenario("promoted_voter_disk_loss")
def promoted_voter_disk_loss(seed: int, trace_size: int | None) -> Plan:
    """Three voters and an observer; the admin swaps a voter for the observer, and once the observer is a voter
    (in the leader's latest set, committed or not) a bit of its disk flips and it restarts: the start-up scan
    reads the bad batch and the node halts until the liveness phase replaces its disk."""
    probe = new_world(seed, 0).stream("promoted-disk-loss")
    params = Params(flush_latency_max_ms=probe.choice([0, 2, 10]), snapshot_every=probe.choice([0, 0, 60]),
                    clean_probability=probe.choice([0.2, 1.0]))
    world = new_world(seed, trace_size, params)
    voter_ids, observer_ids = build_cluster(world, 3, 1)
    plan = Plan("promoted_voter_disk_loss", world, voter_ids, observer_ids, probe.choice([7000, 9000]))
    add_workload(plan, clients=probe.randint(0, 1), interval_ms=20)
    if probe.random() < 0.5:
        at(world, 0, faults.set_links, lossy(probe))
    plan.admin = admin = AdminTool(world, eager=probe.random() < 0.5)
    newcomer, leaving = observer_ids[0], probe.choice(voter_ids)
    target = sorted([n for n in voter_ids if n != leaving] + [newcomer])
    at(world, probe.randint(1500, 2500), lambda w: admin.set_target(target))
    loss = PromotedDiskLoss(newcomer, delay_ms=probe.randint(0, 1500), until_ms=plan.faults_end_ms - 500)
    at(world, 1500, loss.watch)
    plan.stat_hooks.append(lambda: {"promoted_disk_lost": loss.struck})
    plan.notes.append(f"reassign to {target}")
    return plan


class PromotedDiskLoss:
    """Waits until `node` is a voter of the newest leader's latest set, then (after `delay_ms`) flips a bit of a
    flushed batch on its disk and restarts it, so that its start-up scan finds the corruption."""

    POLL_MS = 50

    def __init__(self, node: int, delay_ms: int, until_ms: int) -> None:
        self.node = node
        self.delay_ms = delay_ms
        self.until_ms = until_ms
        self.struck = False

    def watch(self, world: World) -> Traced | None:
        leader = newest_leader(world)
        promoted = leader is not None and leader.core is not None and self.node in leader.core.voters().voters
        if promoted:
            world.scheduler.after(self.delay_ms, self.strike, world)
            return self.node, "disk-loss", f"a voter now; strikes in {self.delay_ms} ms"
        if world.scheduler.now_ms + self.POLL_MS < self.until_ms:
            world.scheduler.after(self.POLL_MS, self.watch, world)
        return None

    def strike(self, world: World) -> Traced:
        node = world.nodes[self.node]
        if node.status is not Status.UP or node.disk.log.flip_bit(node.rng) is None:
            return self.node, "disk-loss", "nothing flushed or not up: skipped"
        self.struck = True
        faults.kill(world, self.node)
        return faults.restart(world, self.node)
