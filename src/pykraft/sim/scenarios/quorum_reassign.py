"""`quorum_reassign`: quorum reassignment as KIP-642 designs it (AlterPartitionReassignments on
`__cluster_metadata-0`, the core's `ReassignVotersRequest`), driven by an operator under faults: the leader killed
mid-way (and restarted), a target voter paused, a new target replacing the old one, a cancellation (sometimes
followed by yet another target), lossy links, the leader cut off.

The operator (`ReassignOperator`) behaves as `metadata-quorum reassign` does: it sends its target to the newest
leader, takes NONE or REQUEST_TIMED_OUT as accepted, and then watches the newest leader (an omniscient shortcut for
ListPartitionReassignments and DescribeQuorum); it sends again when the target is gone without being reached (its
record lost with a leader) or when it was refused for a reason that passes (NOT_LEADER, a target voter lagging or
not yet known to a new leader). The candidates it names are every node with its endpoint, as the controllers'
registrations would. Every target keeps the first voter (the anchor): the initial voters are every node's
bootstrap servers, and a quorum moved off all of them strands a node that forgot the leader (voter_change_storm's
note; an operator's configuration matter, not this scenario's).

Checks: the engine's invariants after every event (SingleLeader, AtMostOneUncommittedVoterSet,
TargetSurvivesFailover, ...); liveness: once the faults stop, the committed voter set becomes the operator's last
target (or, after a last cancellation, stops moving) and no target stays in the log.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pykraft.protocol.errors import ErrorCode
from pykraft.raft.voter_change import ReassignVotersRequest, VoterCandidate
from pykraft.raft.voter_set import SupportedVersionRange
from pykraft.sim.engine.network import LinkProfile
from pykraft.sim.engine.wire import ADMIN, AdminRequest, AdminResponse, endpoints_of
from pykraft.sim.scenarios import faults
from pykraft.sim.scenarios.common import Plan, add_workload, build_cluster, lossy, new_world, scenario
from pykraft.sim.scenarios.faults import LeaderVictim, Traced, at
from pykraft.sim.scenarios.workload import newest_leader
from pykraft.sim.engine.world import Params

if TYPE_CHECKING:
    from pykraft.sim.engine.network import Envelope
    from pykraft.sim.engine.world import World

RETRY_MS = 200
ANSWER_TIMEOUT_MS = 6000  # a request's own timeout (at most 5000) plus the network
REQUEST_TIMEOUTS_MS = (0, 500, 5000)


@dataclass
class OperatorStats:
    sent: int = 0
    answers: dict[str, int] = field(default_factory=dict)
    goals: list[str] = field(default_factory=list)


class ReassignOperator:
    def __init__(self, world: World, pool: list[int]) -> None:
        self.world = world
        self.pool = sorted(pool)
        self.rng = world.stream("reassign-operator")
        self.goal: tuple[int, ...] | None = None  # None: cancel
        self.active = False  # an operation is under way
        self.accepted = False
        self.in_flight: int | None = None
        self.next_op = 0
        self.stats = OperatorStats()
        self.candidates = {i: VoterCandidate(endpoints_of(i), SupportedVersionRange(0, 1)) for i in self.pool}
        world.endpoints[ADMIN] = self

    # ---- what the scenario asks ------------------------------------------------------------------------------------
    def set_target(self, ids: list[int]) -> Traced:
        return self._start(tuple(sorted(ids)), f"target {sorted(ids)}")

    def cancel(self) -> Traced:
        return self._start(None, "cancel")

    def _start(self, goal: tuple[int, ...] | None, label: str) -> Traced:
        self.goal, self.accepted, self.in_flight = goal, False, None
        self.stats.goals.append(label)
        if not self.active:  # one loop at a time: a running one takes the new goal over
            self.active = True
            self.world.scheduler.after(0, self.tick)
        return ADMIN, "reassign-goal", label

    # ---- the loop ----------------------------------------------------------------------------------------------------
    def tick(self) -> Traced | None:
        if not self.active:
            return None
        self.world.scheduler.after(RETRY_MS, self.tick)
        if self.in_flight is not None:
            return None
        leader = newest_leader(self.world)
        if leader is None or leader.core is None or leader.core.high_watermark is None:
            return None
        if self.accepted:
            state = self._state(leader.core)
            if state == "reached":
                self.active = False
                return ADMIN, "reassign-done", str(self.goal)
            if state == "lost":
                self.accepted = False  # gone without being reached: its record was lost with a leader
            return None
        return self._send(leader.node_id)

    def _state(self, core: Any) -> str:
        active = core.history.last_target()
        if active is None:
            committed = set(core.history.voter_set_at(core.high_watermark - 1).ids())
            return "reached" if self.goal is None or committed == set(self.goal) else "lost"
        if self.goal is None and set(active[1].ids()) != set(core.voters().ids()):
            return "lost"  # the old target still moves the voters: the cancellation was lost
        return "waiting"

    def _send(self, node_id: int) -> Traced:
        self.next_op += 1
        self.in_flight = self.next_op
        self.stats.sent += 1
        request = ReassignVotersRequest(self.goal, self.rng.choice(REQUEST_TIMEOUTS_MS), self.candidates)
        self.world.send(ADMIN, node_id, AdminRequest(self.next_op, request), "ReassignVoters")
        self.world.scheduler.after(ANSWER_TIMEOUT_MS, self._timed_out, self.next_op)
        return ADMIN, "reassign-send", f"{'cancel' if self.goal is None else list(self.goal)} -> n{node_id}"

    def _timed_out(self, op_id: int) -> Traced | None:
        if self.in_flight != op_id:
            return None
        self.in_flight = None
        self._count("no answer")
        return ADMIN, "reassign-timeout", f"#{op_id}"

    def deliver(self, envelope: Envelope) -> Traced | None:
        if not self.world.network.admit(envelope):
            return None
        response: AdminResponse = envelope.payload
        code = ErrorCode.of(response.response.error_code)
        self._count(code.name)
        if response.op_id != self.in_flight:
            return ADMIN, "reassign-stale-answer", f"#{response.op_id} {code.name}"
        self.in_flight = None
        if code in (ErrorCode.NONE, ErrorCode.REQUEST_TIMED_OUT, ErrorCode.NO_REASSIGNMENT_IN_PROGRESS):
            self.accepted = True  # the loop watches the leader from here
        return ADMIN, "reassign-answer", f"#{response.op_id} {code.name}: {response.response.message}"

    def _count(self, what: str) -> None:
        self.stats.answers[what] = self.stats.answers.get(what, 0) + 1

    # ---- the runner's liveness check and statistics ----------------------------------------------------------------
    def gaps(self) -> list[str]:
        leader = newest_leader(self.world)
        if leader is None or leader.core is None or leader.core.high_watermark is None:
            return []  # the runner reports it
        core = leader.core
        committed = sorted(core.history.voter_set_at(leader.core.high_watermark - 1).ids())
        active = core.history.last_target()
        if active is not None:
            return [f"a quorum reassignment to {sorted(active[1].ids())} is still in progress (voters {committed})"]
        if self.goal is not None and committed != list(self.goal):
            return [f"the voters are {committed}, not the target {list(self.goal)}"]
        return []

    def report(self) -> dict[str, Any]:
        answers = ", ".join(f"{k} {v}" for k, v in sorted(self.stats.answers.items()))
        return {"reassign": f"{'; '.join(self.stats.goals)}; {self.stats.sent} sent; answers: {answers or 'none'}"}


class MidwayKill:
    """Kills the newest leader once it drives a committed target and has taken `steps` steps of it (or when the
    reassignment is over before that), and restarts it `down_ms` later."""

    POLL_MS = 5
    GIVE_UP_MS = 3000  # no target driven by then (refused, no leader): kill the leader anyway

    def __init__(self, steps: int, down_ms: int, until_ms: int) -> None:
        self.steps, self.down_ms, self.until_ms = steps, down_ms, until_ms
        self.outcome = "not yet"
        self.started: int | None = None
        self.seen = False

    def watch(self, world: World) -> Traced | None:
        now = world.scheduler.now_ms
        self.started = now if self.started is None else self.started
        leader = newest_leader(world)
        core = None if leader is None else leader.core
        patience = now - self.started < self.GIVE_UP_MS
        if leader is None or core is None or core.high_watermark is None:
            world.scheduler.after(self.POLL_MS, self.watch, world)
            return None
        active = core.history.last_target()
        driving = active is not None and active[0] < core.high_watermark
        self.seen = self.seen or driving
        if (driving and core.reconfig.reassign_steps < self.steps) or (not self.seen and patience):
            world.scheduler.after(self.POLL_MS, self.watch, world)
            return None
        self.outcome = f"after {core.reconfig.reassign_steps} steps" if driving else "no reassignment in progress"
        world.scheduler.after(min(self.down_ms, max(0, self.until_ms - world.scheduler.now_ms)),
                              faults.restart, world, leader.node_id)
        faults.kill(world, leader.node_id)
        return leader.node_id, "kill-midway", self.outcome


def _target(rng: Any, pool: list[int], anchor: int, avoid: list[int]) -> list[int]:
    """A target of 1-5 voters holding the anchor, other than `avoid`."""
    others = [n for n in pool if n != anchor]
    while True:
        size = rng.randint(0, min(4, len(others)))
        target = sorted([anchor, *rng.sample(others, size)])
        if target != sorted(avoid) or not others:
            return target


@scenario("quorum_reassign")
def quorum_reassign(seed: int, trace_size: int | None) -> Plan:
    """Reassignments through the leader-driven API under failovers, pauses, replacement and cancellation."""
    probe = new_world(seed, 0).stream("quorum-reassign")
    voters, observers = probe.randint(1, 4), probe.randint(1, 3)
    params = Params(flush_latency_max_ms=probe.choice([0, 2, 5]), snapshot_every=probe.choice([0, 40, 150]),
                    clean_probability=probe.choice([0.3, 1.0]), torn_write_probability=probe.choice([0.0, 0.5]))
    faults_end = probe.choice([9000, 12_000])
    world = new_world(seed, trace_size, params)
    voter_ids, observer_ids = build_cluster(world, voters, observers)
    plan = Plan("quorum_reassign", world, voter_ids, observer_ids, faults_end)
    add_workload(plan, clients=probe.randint(0, 1), interval_ms=probe.choice([10, 20, 40]))
    pool, anchor = voter_ids + observer_ids, voter_ids[0]
    operator = ReassignOperator(world, pool)
    plan.gap_checks.append(operator.gaps)
    plan.stat_hooks.append(operator.report)
    start = probe.randint(1500, 2500)
    first = _target(probe, pool, anchor, voter_ids)
    at(world, start, lambda w: operator.set_target(first))
    plan.notes.append(f"target {first} at {start}")
    _schedule_faults(plan, probe, operator, start, first)
    return plan


def _schedule_faults(plan: Plan, rng: Any, operator: ReassignOperator, start: int, first: list[int]) -> None:
    world, end = plan.world, plan.faults_end_ms - 500
    pool, anchor = plan.voters + plan.observers, plan.voters[0]
    if rng.random() < 0.3:
        at(world, 0, faults.set_links, lossy(rng))
    if rng.random() < 0.7:  # the leader killed mid-way (after 0-2 steps of its own), restarted later
        killer = MidwayKill(rng.randint(0, 2), rng.randint(1000, 3000), end)
        at(world, start, killer.watch)
        plan.stat_hooks.append(lambda: {"midway_kill": killer.outcome})
    if rng.random() < 0.5:  # a target voter paused (before or after the request), resumed later
        paused, when = rng.choice(first), start + rng.randint(-300, 1500)
        at(world, when, faults.pause, paused)
        at(world, min(end, when + rng.randint(500, 4000)), faults.resume, paused)
        plan.notes.append(f"{paused} paused at {when}")
    if rng.random() < 0.2:  # the leader cut off for a while
        victim, when = LeaderVictim(), start + rng.randint(500, 3000)
        at(world, when, victim.isolate)
        at(world, min(end, when + rng.randint(1000, 3000)), faults.heal)
    later = start + rng.randint(100, 3000)
    if rng.random() < 0.5:  # a new target replaces the old one
        second = _target(rng, pool, anchor, first)
        at(world, later, lambda w: operator.set_target(second))
        plan.notes.append(f"replaced by {second} at {later}")
    if rng.random() < 0.35:  # a cancellation, sometimes followed by yet another target
        when = later + rng.randint(0, 2000)
        at(world, when, lambda w: operator.cancel())
        plan.notes.append(f"cancel at {when}")
        if rng.random() < 0.5:
            third = _target(rng, pool, anchor, [])
            at(world, min(end, when + rng.randint(200, 2000)), lambda w: operator.set_target(third))
            plan.notes.append(f"then {third}")
    if rng.random() < 0.3:
        at(world, start + rng.randint(0, 2000), faults.set_links, LinkProfile(
            drop=rng.choice([0.01, 0.05]), duplicate=0.0, reorder=0.02, delay_min_ms=1, delay_max_ms=rng.choice([5, 20])))
