"""A run that crashes inside the simulated world is reported against its seed, and the sweep goes on."""

import pytest

from pykraft.sim.engine import sweep as sweep_module
from pykraft.sim.engine.runner import run as real_run


def test_a_crashing_seed_is_a_violation_with_its_replay_command(monkeypatch: pytest.MonkeyPatch) -> None:
    def run(seed: int, scenario: str, **kwargs: object):  # stands in for runner.run
        if seed == 1:
            raise ValueError("empty range for randrange()")
        return real_run(seed, scenario, **kwargs)

    monkeypatch.setattr(sweep_module, "run", run)
    summary = sweep_module.sweep(range(3), "swarm_ci", jobs=1)
    assert summary.totals()["runs"] == 3
    [crashed] = summary.violations
    assert (crashed.seed, crashed.invariant) == (1, "SimulatorError")
    assert "ValueError: empty range" in (crashed.detail or "")
    assert crashed.replay_command() == "pykraft sim run --seed 1 --scenario swarm_ci"


def test_a_run_whose_linearizability_check_ran_out_of_time_is_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    from pykraft.sim.checks import history

    seeds = range(0, 4, 2)  # two swarm_ci seeds whose clients wrote
    summary = sweep_module.sweep(seeds, "swarm_ci", jobs=1)
    assert summary.totals()["linearizable"] == 2 and summary.totals()["linearizability_unknown"] == 0
    monkeypatch.setattr(history, "CHECK_TIMEOUT_S", 0.0)  # no time to search: no verdict
    summary = sweep_module.sweep(seeds, "swarm_ci", jobs=1)
    assert summary.totals()["linearizability_unknown"] == 2 and summary.totals()["linearizable"] == 0
    assert not summary.violations  # unknown is reported, never a violation
