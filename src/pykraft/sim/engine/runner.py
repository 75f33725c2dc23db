"""Run one seeded simulation: `run(seed, scenario, *, max_events, sim_ms, trace_size) -> RunResult`.

Phases: safety (the scenario's faults, invariants after every event) until the plan's `faults_end_ms`; then
liveness: the network is healed and made perfect, paused nodes resume, down nodes restart, halted (corrupted)
nodes get a new disk, and within `LIVENESS_BOUND_MS` a leader must be elected with its epoch committed, every
node must follow it and apply everything it committed, pending voter changes must be settled, and every client
operation must be answered or timed out. Then the end checks: committed data across nodes, acknowledged values,
and the clients' histories against the linearizability checker (always: a run without it would pass unchecked).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pykraft.sim.checks import linearizability
from pykraft.sim.checks.history import check_clients
from pykraft.sim.scenarios import faults
from pykraft.sim.engine.network import LinkProfile
from pykraft.sim.engine.node import Status
from pykraft.sim.scenarios.registry import SCENARIOS
from pykraft.sim.scenarios.common import LIVENESS_BOUND_MS, Plan
from pykraft.raft.states import FollowerState
from pykraft.sim.scenarios.workload import newest_leader

FULL_CHECK_EVERY = 500  # events between whole-log comparisons
LIVENESS_PROBE_MS = 100


@dataclass(frozen=True)
class RunResult:
    seed: int
    scenario: str
    invariant: str | None  # the first violated invariant, None when the run passed
    detail: str | None
    events: int
    sim_ms: int
    wall_s: float
    trace: tuple[str, ...]
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.invariant is None

    def replay_command(self) -> str:
        return f"pykraft sim run --seed {self.seed} --scenario {self.scenario}"

    def report(self) -> str:
        lines = [f"seed {self.seed} scenario {self.scenario}: {'OK' if self.ok else 'VIOLATION'}; "
                 f"{self.events} events, {self.sim_ms} simulated ms in {self.wall_s:.2f} s"]
        lines += [f"  {k}: {v}" for k, v in self.stats.items()]
        if not self.ok:
            lines.append(f"violated: {self.invariant}: {self.detail}")
            lines.append(f"last {len(self.trace)} events:")
            lines += [f"  {line}" for line in self.trace]
            lines.append(f"replay: {self.replay_command()}")
        return "\n".join(lines)


def run(seed: int, scenario: str = "swarm", *, max_events: int = 400_000, sim_ms: int | None = None,
        trace_size: int | None = 60, finished: Callable[[Plan], object] | None = None) -> RunResult:
    """One seeded run; `finished` sees the plan (its world as the run left it) before the result is returned."""
    if scenario not in SCENARIOS:
        raise KeyError(f"unknown scenario {scenario!r}; known: {', '.join(sorted(SCENARIOS))}")
    started = time.perf_counter()
    plan = SCENARIOS[scenario](seed, trace_size)
    runner = _Runner(plan, max_events, sim_ms)
    runner.loop()
    result = runner.result(seed, scenario, time.perf_counter() - started)
    if finished is not None:
        finished(plan)
    return result


class _Runner:
    def __init__(self, plan: Plan, max_events: int, sim_ms: int | None) -> None:
        self.plan = plan
        self.world = plan.world
        self.max_events = max_events
        self.deadline_ms = sim_ms if sim_ms is not None else plan.faults_end_ms + LIVENESS_BOUND_MS
        self.liveness = False
        self.live_at: int | None = None
        self.gaps: list[str] = []
        self.linearizability = "not checked"

    def loop(self) -> None:
        scheduler, checker = self.world.scheduler, self.world.checker
        while scheduler.events < self.max_events and not checker.violations and self.live_at is None:
            next_time = scheduler.next_time()
            if next_time is None:
                break
            if not self.liveness and next_time >= self.plan.faults_end_ms:
                self._start_liveness()
                continue
            if next_time > self.deadline_ms:
                break
            if scheduler.step():
                checker.now_ms = scheduler.now_ms
                checker.check_event()
                if scheduler.events % FULL_CHECK_EVERY == 0:
                    checker.check_full()
        if checker.violations:
            return
        if self.live_at is None and scheduler.events < self.max_events:
            checker.now_ms = scheduler.now_ms
            checker.violation("Liveness", None, f"not converged {LIVENESS_BOUND_MS} ms after healing: "
                                                f"{'; '.join(self.gaps) or 'no events left'}")
            return
        checker.check_full()
        for check in self.plan.end_checks:
            if not checker.violations:
                check()
        if not checker.violations:
            self._check_histories()

    # ---- liveness ----------------------------------------------------------------------------------------------
    def _start_liveness(self) -> None:
        world = self.world
        self.liveness = True
        scheduler = world.scheduler
        scheduler.now_ms = max(scheduler.now_ms, self.plan.faults_end_ms)
        faults.heal(world)
        faults.set_links(world, LinkProfile())
        for node_id, node in sorted(world.nodes.items()):
            if node.status is Status.PAUSED:
                node.resume()
            elif node.status is Status.FAILED:
                faults.wipe_and_restart(world, node_id)
            elif node.status is Status.DOWN:
                node.start()
        scheduler.trace.append(_line(scheduler.now_ms, "liveness", "faults stop, network healed, all nodes up"))
        scheduler.after(LIVENESS_PROBE_MS, self._probe)

    def _probe(self) -> None:
        for node_id, node in sorted(self.world.nodes.items()):
            if node.status is Status.FAILED:  # a flipped bit found only now: the operator replaces the disk
                faults.wipe_and_restart(self.world, node_id)
            elif node.status is Status.DOWN:  # a graceful shutdown that completed after the faults stopped
                node.start()
        self.gaps = liveness_gaps(self.plan)
        if not self.gaps:
            self.live_at = self.world.scheduler.now_ms
            return None
        self.world.scheduler.after(LIVENESS_PROBE_MS, self._probe)
        return None

    # ---- end checks ------------------------------------------------------------------------------------------
    def _check_histories(self) -> None:
        problem, self.linearizability = check_clients(linearizability, self.plan.clients)
        if problem is not None:
            self.world.checker.violation("Linearizability", None, problem)

    def result(self, seed: int, scenario: str, wall_s: float) -> RunResult:
        world, checker = self.world, self.world.checker
        violation = checker.violations[0] if checker.violations else None
        return RunResult(
            seed=seed, scenario=scenario, invariant=violation.invariant if violation else None,
            detail=violation.format() if violation else None, events=world.scheduler.events,
            sim_ms=world.scheduler.now_ms, wall_s=wall_s,
            trace=tuple(line.format() for line in world.scheduler.trace), stats={**run_stats(self.plan, self.live_at), "linearizability": self.linearizability},
        )


def _line(time_ms: int, kind: str, detail: str):
    from pykraft.sim.engine.scheduler import TraceLine

    return TraceLine(time_ms, None, kind, detail)


def _follows(core: Any, leader_id: int, epoch: int) -> bool:
    state = core.quorum.state
    return isinstance(state, FollowerState) and state.leader_id == leader_id and state.epoch == epoch


def liveness_gaps(plan: Plan) -> list[str]:
    """What still keeps the cluster from the converged state (empty: converged)."""
    world = plan.world
    leader = newest_leader(world)
    if leader is None or leader.core is None or leader.core.high_watermark is None:
        return ["no leader with a committed epoch"]
    gaps: list[str] = []
    hwm, epoch = leader.core.high_watermark, leader.core.quorum.epoch
    for node_id, node in sorted(world.nodes.items()):
        core = node.core
        if core is None:
            gaps.append(f"node {node_id} is {node.status.value}")
        elif node is not leader and not _follows(core, leader.node_id, epoch):
            gaps.append(f"node {node_id} is {core.quorum.role.value}@{core.quorum.epoch}")
        elif node.machine.next_offset < hwm:
            gaps.append(f"node {node_id} applied {node.machine.next_offset} < hwm {hwm}")
    busy = [c.id for c in plan.clients if not c.idle()]
    if busy:
        gaps.append(f"clients {busy} waiting")
    if plan.admin is not None and not plan.admin.done():
        gaps.append("reassignment pending")
    for check in plan.gap_checks:
        gaps += check()
    return gaps


def run_stats(plan: Plan, live_at: int | None) -> dict[str, Any]:
    world, checker = plan.world, plan.world.checker
    nodes = world.nodes.values()
    stats: dict[str, Any] = {
        "cluster": f"{len(plan.voters)} voters, {len(plan.observers)} observers",
        "elections": len(checker.elections),
        "max_epoch": max((n.disk.election.epoch for n in nodes if n.disk.election is not None), default=0),
        "hwm": checker.newest_hwm[1],
        "acked": len(checker.acked),
        "appended": plan.appender.appended if plan.appender else 0,
        "client_ops": sum(len(c.history) for c in plan.clients),
        "snapshots": sum(n.snapshots_taken for n in nodes),
        "snapshot_loads": sum(n.machine.snapshot_loads for n in nodes),
        "truncations": sum(getattr(n.disk.log, "truncations", 0) for n in nodes),
        "max_truncated": max((getattr(n.disk.log, "max_truncated", 0) for n in nodes), default=0),
        "storage_faults": len(checker.storage_faults),
        "live_after_ms": None if live_at is None else live_at - plan.faults_end_ms,
        "messages": world.network.stats.sent,
    }
    if plan.admin is not None:
        stats["admin"] = f"{plan.admin.stats.ok} ok, errors {plan.admin.stats.errors}, blocked {plan.admin.blocked}"
    for hook in plan.stat_hooks:
        stats.update(hook())
    if plan.notes:
        stats["notes"] = "; ".join(plan.notes)
    return stats
