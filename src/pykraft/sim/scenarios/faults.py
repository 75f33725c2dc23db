"""Fault actions (each a traced event) and the random fault schedule of swarm runs, drawn from the seed.

The swarm's fault model is bounded, like TigerBeetle's fault atlas: at any time at most a minority of the
initial voters is down, paused, failed or cut off by a node-level fault, so that a fully healed cluster can
always recover; message-level faults (drop, delay, duplication, reordering) are unbounded during the safety
phase. Lost disks (a flipped bit halts its node until the disk is replaced) outlast the healing, so they are
bounded further by `DiskLossBudget`: a minority of every voter set the run passes through, reassignments included.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pykraft.sim.engine.network import LinkProfile
from pykraft.sim.engine.node import Status
from pykraft.sim.engine.wire import ADMIN

if TYPE_CHECKING:
    from pykraft.sim.engine.world import World

Traced = tuple[int | None, str, str]


def leader_id(world: World) -> int | None:
    # workload imports node, which imports us not
    from pykraft.sim.scenarios.workload import newest_leader

    leader = newest_leader(world)
    return None if leader is None else leader.node_id


# ---- actions -----------------------------------------------------------------------------------------------------
def kill(world: World, node_id: int) -> Traced:
    world.nodes[node_id].kill(world.params.torn_write_probability)
    return node_id, "kill", ""


def restart(world: World, node_id: int) -> Traced:
    node = world.nodes[node_id]
    if node.status is Status.PAUSED:
        node.resume()
    if node.status is Status.UP:
        return node_id, "restart", "already up"
    node.start()
    return node_id, "restart", node.status.value


def shutdown(world: World, node_id: int) -> Traced:
    world.nodes[node_id].shutdown()
    return node_id, "shutdown", ""


def pause(world: World, node_id: int) -> Traced:
    world.nodes[node_id].pause()
    return node_id, "pause", ""


def resume(world: World, node_id: int) -> Traced:
    world.nodes[node_id].resume()
    return node_id, "resume", ""


def wipe_and_restart(world: World, node_id: int) -> Traced:
    """Disk replacement: kill, wipe (new directory id), start again as an observer; a node meant to vote rejoins
    the quorum through auto-join."""
    node = world.nodes[node_id]
    node.kill()
    rejoins = meant_to_vote(world, node_id)
    node.wipe(auto_join=rejoins)
    node.start()
    return node_id, "wipe", f"new directory {node.disk.directory_id}{', auto-join' if rejoins else ''}"


def meant_to_vote(world: World, node_id: int) -> bool:
    """What the operator who replaces a disk knows: whether the node should be a voter. With a reassignment under
    way or done, that is its target; otherwise the newest voter set a live replica holds (all down: yes).

    Kafka's auto-join adds any observer that has it enabled, so a controller the operator removed must not get
    it: swarm_disks seed 298 reassigned {0..4} to {0, 1, 2, 4, 5, 6}, node 3 lost its disk, came back with
    auto-join and made itself a voter again, against the finished reassignment (liveness: "reassignment
    pending" forever)."""
    target = getattr(world.endpoints.get(ADMIN), "target", None)
    if target is not None:
        return node_id in target
    live = [n.core for n in world.nodes.values() if n.core is not None]
    if not live:
        return True
    newest = max(live, key=lambda core: (core.quorum.epoch, core.log.end_offset()))
    return node_id in newest.voters().voters


def flip_bit(world: World, node_id: int) -> Traced:
    node = world.nodes[node_id]
    offset = node.disk.log.flip_bit(node.rng)
    return node_id, "bit-flip", f"batch at {offset}"


def clock_jump(world: World, node_id: int, forward_ms: int) -> Traced:
    node = world.nodes[node_id]
    node.clock.jump(forward_ms)
    if node.core is not None and node.status is Status.UP:
        node._schedule_poll(world.scheduler.now_ms)  # timers may be due now
    return node_id, "clock-jump", f"+{forward_ms} ms"


def isolate(world: World, node_id: int) -> Traced:
    world.network.isolate(node_id, [*world.nodes, *world.endpoints])
    return node_id, "isolate", ""


def split(world: World, groups: list[list[int]]) -> Traced:
    world.network.split(groups)
    return None, "split", " | ".join(",".join(map(str, g)) for g in groups)


def block(world: World, src: int, dst: int) -> Traced:
    world.network.block(src, dst)
    return src, "block", f"-> {dst}"


def heal(world: World) -> Traced:
    world.network.heal()
    return None, "heal", ""


def set_links(world: World, profile: LinkProfile) -> Traced:
    world.network.set_profile(profile)
    return None, "links", f"drop={profile.drop:.2f} dup={profile.duplicate:.2f} reorder={profile.reorder:.2f} " \
                          f"delay={profile.delay_min_ms}-{profile.delay_max_ms}"


def at(world: World, time_ms: int, action: Callable[..., Traced | None], *args: Any) -> None:
    world.scheduler.at(time_ms, action, world, *args)


# ---- the swarm's random schedule -------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class FaultMix:
    """Which kinds of faults a swarm run uses and how often (mean gap between node faults, ms)."""

    crashes: bool
    shutdowns: bool
    pauses: bool
    partitions: bool
    bit_flips: bool
    clock_jumps: bool
    mean_gap_ms: int

    @staticmethod
    def draw(rng: random.Random) -> FaultMix:
        return FaultMix(rng.random() < 0.7, rng.random() < 0.4, rng.random() < 0.4, rng.random() < 0.6,
                        rng.random() < 0.2, rng.random() < 0.3, rng.choice([300, 700, 1500]))

    def kinds(self) -> list[str]:
        return [name for name in ("crashes", "shutdowns", "pauses", "partitions", "bit_flips", "clock_jumps")
                if getattr(self, name)]


@dataclass
class DiskLossBudget:
    """How many disks a run may lose for good, and whose losses count.

    A replaced disk rejoins as a new replica (a new directory id): its old replica is gone, and a voter set whose
    majority is gone cannot elect anyone nor commit the change that would replace it, in any raft (Kafka refuses a
    second voter change until the first commits, KIP-853). So the lost disks of the nodes that are voters in some
    set the run passes through must stay a minority of the smallest such set. A reassignment's planner moves one
    voter at a time and never below min(|initial|, |target|) voters (raft/reassignment.py), so that size bounds
    every set on the way (swarm seed 770042: voters {0, 1} reassigned to {0, 4}, then 4's disk lost - one of a
    two-voter set, a majority; the leader of {0, 4} could commit nothing after healing).

    The random schedule already bounds bit flips by the initial voters' minority; `flip` enforces the rest when
    the flip fires, so the seed's random draws stay as they were and a flip the budget forbids is traced as
    skipped."""

    limit: int
    counted: set[int]
    lost: set[int] = field(default_factory=set)
    # Restart a node right after its flip, so that the start-up scan reads the bad batch and the disk is lost
    # for sure (otherwise only a read of that old batch finds it, which most runs never make).
    restart_after_flip: bool = False

    @staticmethod
    def of_voters(voters: list[int], counted: Sequence[int] = ()) -> DiskLossBudget:
        return DiskLossBudget((len(voters) - 1) // 2, {*voters, *counted})

    def cover_reassignment(self, voters: list[int], target: list[int]) -> None:
        """The run will also move the voter set from `voters` to `target`."""
        self.limit = min(self.limit, (min(len(voters), len(target)) - 1) // 2)
        self.counted |= {*voters, *target}

    def admits(self, node_id: int) -> bool:
        return node_id not in self.counted or node_id in self.lost or len(self.lost) < self.limit

    def flip(self, world: World, node_id: int) -> Traced:
        if not self.admits(node_id):
            return node_id, "bit-flip", f"skipped: {len(self.lost)} of at most {self.limit} voter disks lost " \
                                        f"already"
        if node_id in self.counted:
            self.lost.add(node_id)
        traced = flip_bit(world, node_id)
        if self.restart_after_flip and world.nodes[node_id].status is Status.UP:
            kill(world, node_id)
            restart(world, node_id)
            return node_id, "bit-flip", f"{traced[2]}, restarted: {world.nodes[node_id].status.value}"
        return traced


def schedule_random_faults(world: World, rng: random.Random, voters: list[int], start_ms: int, end_ms: int,
                           mix: FaultMix, leader_bias: float = 0.0, promotable: Sequence[int] = ()) -> DiskLossBudget:
    """Node faults that each last a drawn while, at most a minority of the voters affected at a time.

    `promotable` nodes (observers a reassignment may turn into voters) count against that minority like voters:
    a promoted observer whose disk was lost is a lost voter, and with a voter of the initial set lost too a
    four-voter set would have no majority left (swarm_ci seed 1008 did exactly that).

    With `leader_bias`, that share of the faults (crash, shutdown, pause, isolation) strikes whichever node leads
    when it fires: a node drawn in advance is rarely the leader, and a fault elsewhere seldom forces an election.
    Such a fault takes a voter slot of the budget for its whole duration, so the minority bound still holds.

    Returns the budget of lost disks the bit flips obey; a caller that plans a reassignment widens it."""
    disks = DiskLossBudget.of_voters(voters, promotable)
    kinds = mix.kinds()
    if not kinds:
        return disks
    budget = (len(voters) - 1) // 2
    busy_until: dict[int, int] = {}
    leader_slots: list[int] = []  # end times of the leader faults: each holds one voter slot until then
    time = start_ms
    while True:
        time += rng.randint(mix.mean_gap_ms // 2, mix.mean_gap_ms * 3 // 2)
        if time >= end_ms:
            return disks
        counted = [*voters, *promotable]
        active = [n for n, until in busy_until.items() if until > time]
        voters_busy = len([n for n in active if n in counted]) + len([u for u in leader_slots if u > time])
        leader_kinds = [k for k in kinds if k in _LEADER_FAULTS]
        if leader_bias and leader_kinds and voters_busy < budget and rng.random() < leader_bias:
            until = min(time + rng.randint(200, 2500), end_ms)
            leader_slots.append(until)
            _schedule_on_leader(world, rng.choice(leader_kinds), time, until)
            continue
        candidates = [n for n in sorted(world.nodes) if n not in active]
        if not candidates or (voters_busy >= budget and all(n in counted for n in candidates)):
            continue
        if voters_busy >= budget:
            candidates = [n for n in candidates if n not in counted]
        node = rng.choice(candidates)
        duration = rng.randint(200, 2500)
        until = min(time + duration, end_ms)
        kind = rng.choice(kinds)
        # A flipped bit halts the node when it is read, until its disk is replaced in the liveness phase.
        busy_until[node] = end_ms if kind == "bit_flips" else until
        _schedule_one(world, rng, kind, node, time, until, disks)


# Node faults that can strike "the leader at that moment": (start, end) actions taking a node id.
_LEADER_FAULTS: dict[str, tuple[Callable[..., Traced], Callable[..., Traced]]] = {
    "crashes": (kill, restart), "shutdowns": (shutdown, restart), "pauses": (pause, resume),
    "partitions": (isolate, lambda world, _node: heal(world)),
}


def _schedule_on_leader(world: World, kind: str, time: int, until: int) -> None:
    start, end = _LEADER_FAULTS[kind]
    struck: list[int] = []

    def strike(w: World) -> Traced:
        node = leader_id(w)
        if node is None or w.nodes[node].status is not Status.UP:
            return None, f"{kind}-leader", "no leader up: skipped"
        struck.append(node)
        return start(w, node)

    def undo(w: World) -> Traced:
        return end(w, struck[0]) if struck else (None, f"{kind}-leader", "nothing to undo")

    at(world, time, strike)
    at(world, until, undo)


def _schedule_one(world: World, rng: random.Random, kind: str, node: int, time: int, until: int,
                  disks: DiskLossBudget) -> None:
    if kind == "crashes":
        at(world, time, kill, node)
        at(world, until, restart, node)
    elif kind == "shutdowns":
        at(world, time, shutdown, node)
        at(world, until, restart, node)
    elif kind == "pauses":
        at(world, time, pause, node)
        at(world, until, resume, node)
    elif kind == "partitions":
        at(world, time, isolate, node)
        at(world, until, heal)
    elif kind == "bit_flips":
        at(world, time, disks.flip, node)
    elif kind == "clock_jumps":
        at(world, time, clock_jump, node, rng.randint(100, 3000))


class LeaderVictim:
    """Resolves "the leader" when the fault fires and remembers it for the matching recovery."""

    def __init__(self) -> None:
        self.node: int | None = None

    def pick(self, world: World) -> int | None:
        self.node = leader_id(world)
        return self.node

    def kill(self, world: World) -> Traced:
        node = self.pick(world)
        return kill(world, node) if node is not None else (None, "kill", "no leader")

    def shutdown(self, world: World) -> Traced:
        node = self.pick(world)
        return shutdown(world, node) if node is not None else (None, "shutdown", "no leader")

    def isolate(self, world: World) -> Traced:
        node = self.pick(world)
        return isolate(world, node) if node is not None else (None, "isolate", "no leader")

    def restart(self, world: World) -> Traced:
        return restart(world, self.node) if self.node is not None else (None, "restart", "nobody")
