"""The simulator's linearizability check is never skipped silently: the runner imports the checker itself (an
import that fails fails the run's import, not the check), and a run with client operations reports its outcome."""

from __future__ import annotations

import pathlib

import pykraft.sim.engine.runner as runner
from pykraft.sim.engine.runner import run


def test_the_runner_has_no_fallback_for_a_missing_checker() -> None:
    source = pathlib.Path(runner.__file__).read_text()
    assert "except ImportError" not in source
    assert runner.linearizability.check_operations is not None


def test_a_run_with_client_operations_is_checked() -> None:
    result = next(r for r in (run(seed, "initial_election") for seed in range(5)) if r.stats["client_ops"])
    assert result.ok, result.report()
    assert result.stats["linearizability"] not in ("not checked", "empty")
