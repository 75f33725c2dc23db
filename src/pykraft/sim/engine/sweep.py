"""Many seeds at once: a multiprocessing pool over `runner.run`, and the summary a sweep prints.

Every run is independent and deterministic, so the summary of a sweep does not depend on `jobs` (results are
sorted by seed). Workers use the `fork` start method where the platform has it (cheap start-up).
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from statistics import mean
from typing import Any

from pykraft.sim.engine.runner import RunResult, run


@dataclass(frozen=True, slots=True)
class SweepTask:
    seed: int
    scenario: str
    max_events: int
    sim_ms: int | None


def _run_task(task: SweepTask) -> RunResult:
    """One seed. An exception inside the simulated world is a bug like a violated invariant: it is reported
    against its seed (the replay command shows the traceback), and the sweep goes on with the other seeds."""
    started = time.perf_counter()
    try:
        return run(task.seed, task.scenario, max_events=task.max_events, sim_ms=task.sim_ms, trace_size=40)
    except Exception as error:  # any crash of one run is that run's verdict
        return RunResult(task.seed, task.scenario, "SimulatorError", f"{type(error).__name__}: {error}", 0, 0,
                         time.perf_counter() - started, ())


def iter_results(seeds: range, scenario: str, *, jobs: int = 1, max_events: int = 400_000,
                 sim_ms: int | None = None) -> Iterator[RunResult]:
    """Results as they finish (in seed order with jobs=1)."""
    tasks = [SweepTask(seed, scenario, max_events, sim_ms) for seed in seeds]
    if jobs <= 1:
        yield from map(_run_task, tasks)
        return
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    with context.Pool(jobs) as pool:
        yield from pool.imap_unordered(_run_task, tasks, chunksize=1)


@dataclass
class SweepSummary:
    results: list[RunResult] = field(default_factory=list)

    def add(self, result: RunResult) -> None:
        self.results.append(result)

    def sorted(self) -> list[RunResult]:
        return sorted(self.results, key=lambda r: (r.scenario, r.seed))

    @property
    def violations(self) -> list[RunResult]:
        return [r for r in self.sorted() if not r.ok]

    def totals(self) -> dict[str, Any]:
        results = self.results
        wall = sum(r.wall_s for r in results) or 1e-9
        sim = sum(r.sim_ms for r in results)
        events = sum(r.events for r in results)
        live = [v for r in results if (v := r.stats.get("live_after_ms")) is not None]
        return {
            "runs": len(results),
            "events": events,
            "violations": len(self.violations),
            "elections_mean": round(mean(r.stats.get("elections", 0) for r in results), 2) if results else 0,
            "max_epoch": max((r.stats.get("max_epoch", 0) for r in results), default=0),
            "acked": sum(r.stats.get("acked", 0) for r in results),
            "client_ops": sum(r.stats.get("client_ops", 0) for r in results),
            # repair by truncation on DivergingEpoch: how many runs took that path, how often, how deep at most
            "runs_truncating": sum(1 for r in results if r.stats.get("truncations", 0) > 0),
            "truncations": sum(r.stats.get("truncations", 0) for r in results),
            "max_truncated": max((r.stats.get("max_truncated", 0) for r in results), default=0),
            "liveness_ms_max": max(live, default=None),
            # the client histories' linearizability verdicts: a search that ran out of time (UNKNOWN) is counted
            # here, so a sweep never passes a run it could not check without saying so
            "linearizable": sum(1 for r in results if r.stats.get("linearizability") == "OK"),
            "linearizability_unknown": sum(1 for r in results if r.stats.get("linearizability") == "UNKNOWN"),
            "events_per_s": round(events / wall),
            "sim_per_wall": round(sim / 1000 / wall, 2),
            "cpu_s": round(wall, 2),
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "seeds": [r.seed for r in self.sorted()],
            "scenarios": sorted({r.scenario for r in self.results}),
            "events": sum(r.events for r in self.results),
            "violations": [{"seed": r.seed, "scenario": r.scenario, "invariant": r.invariant, "detail": r.detail,
                            "replay": r.replay_command()} for r in self.violations],
            "totals": self.totals(),
        }


def sweep(seeds: range, scenario: str, *, jobs: int = 1, max_events: int = 400_000, sim_ms: int | None = None,
          on_result: Callable[[RunResult], None] | None = None) -> SweepSummary:
    summary = SweepSummary()
    for result in iter_results(seeds, scenario, jobs=jobs, max_events=max_events, sim_ms=sim_ms):
        summary.add(result)
        if on_result is not None:
            on_result(result)
    return summary
