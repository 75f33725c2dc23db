"""`pykraft sim run` and `pykraft sim sweep` through typer's CliRunner."""

import json

from typer.testing import CliRunner

from pykraft.cli.main import app
from pykraft.raft.handlers import vote
from pykraft.raft.states import CandidateState, ProspectiveState, UnattachedState

runner = CliRunner()


def test_run_prints_a_summary_and_exits_zero() -> None:
    result = runner.invoke(app, ["sim", "run", "--seed", "3", "--scenario", "initial_election"])
    assert result.exit_code == 0, result.output
    assert "seed 3 scenario initial_election: OK" in result.output and "elections: 1" in result.output


def test_failing_run_prints_invariant_trace_and_replay_command(monkeypatch) -> None:
    honest = vote.can_grant_vote

    def votes_again(core, candidate, up_to_date, pre_vote):
        if not pre_vote and candidate.id != core.local.node_id and \
                isinstance(core.quorum.state, (UnattachedState, ProspectiveState, CandidateState)):
            return up_to_date
        return honest(core, candidate, up_to_date, pre_vote)

    monkeypatch.setattr(vote, "can_grant_vote", votes_again)
    result = runner.invoke(app, ["sim", "run", "--seed", "227", "--scenario", "swarm_ci", "--trace", "7"])
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert any(line.startswith("violated: SingleLeader") for line in lines), result.output
    trace_at = lines.index("last 7 events:")
    assert len(lines[trace_at + 1: trace_at + 8]) == 7
    assert lines[-1] == "replay: pykraft sim run --seed 227 --scenario swarm_ci"


def test_unknown_scenario_is_a_usage_error() -> None:
    result = runner.invoke(app, ["sim", "run", "--seed", "1", "--scenario", "nope"])
    assert result.exit_code == 2 and "unknown scenario" in result.output


def test_sweep_json_summary() -> None:
    result = runner.invoke(app, ["sim", "sweep", "--seeds", "3", "--start", "5", "--scenario", "swarm_ci", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["seeds"] == [5, 6, 7] and summary["violations"] == [] and summary["events"] > 0
    assert summary["totals"]["runs"] == 3


def test_sweep_table() -> None:
    result = runner.invoke(app, ["sim", "sweep", "--seeds", "2", "--scenario", "swarm_ci"])
    assert result.exit_code == 0, result.output
    assert "violations" in result.output and "events_per_s" in result.output
