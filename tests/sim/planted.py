"""Runs for tests whose outcome depends on a run's shape: a planted bug caught, or a scenario exercising what it
claims, within the first seeds. A fixed seed broke each time the runs' timing changed (one message answered a turn
earlier reshuffles every later event), while the property does not depend on which seed shows it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pykraft.sim.engine.runner import RunResult, run

SEEDS = range(1, 31)


def caught(scenario: str, invariant: str, detail: str = "", seeds: range = SEEDS, **options: Any) -> RunResult:
    """The first run of `scenario` among `seeds` that violates `invariant` with `detail` in its report (a planted
    bug bites, the way it should)."""
    seen = []
    for seed in seeds:
        result = run(seed, scenario, **options)
        if result.invariant == invariant and detail in (result.detail or ""):
            return result
        seen.append((seed, result.invariant))
    raise AssertionError(f"{invariant} ({detail!r}) not violated in {scenario} seeds {seeds.start}-{seeds.stop - 1}: "
                         f"{seen}")


def passing_run(scenario: str, shape: Callable[[RunResult], bool], seeds: range = SEEDS, **options: Any) -> RunResult:
    """The first run of `scenario` among `seeds` with the wanted `shape`; every run tried on the way must pass."""
    for seed in seeds:
        result = run(seed, scenario, **options)
        assert result.ok, result.report()
        if shape(result):
            return result
    raise AssertionError(f"no run of {scenario} among seeds {seeds.start}-{seeds.stop - 1} has the wanted shape")
