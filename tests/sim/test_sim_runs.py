"""The simulator itself: determinism, a clean initial election, and the phases of a run."""

from pykraft.sim.engine.runner import run
from pykraft.sim.scenarios.registry import SCENARIOS


def test_same_seed_gives_the_same_run_event_for_event() -> None:
    first = run(7, "swarm", trace_size=None)
    second = run(7, "swarm", trace_size=None)
    assert first.events > 500
    assert first.trace == second.trace
    assert first.stats == second.stats


def test_different_seeds_give_different_runs() -> None:
    assert run(1, "swarm", trace_size=None).trace != run(2, "swarm", trace_size=None).trace


def test_initial_election_commits_and_converges_over_seeds() -> None:
    for seed in range(8):
        result = run(seed, "initial_election")
        assert result.ok, result.report()
        assert result.stats["elections"] >= 1 and result.stats["acked"] > 0
        assert result.stats["live_after_ms"] is not None
        assert result.stats["linearizability"] in ("OK", "empty")


def test_every_kafka_scenario_is_registered() -> None:
    assert {"initial_election", "leader_failure_graceful", "leader_failure_hard", "all_killed_majority_restart",
            "leader_partitioned", "majority_reachable", "back_to_back_leader_failures", "single_node_data_loss",
            "add_and_remove_voters", "prevote_partial_partition", "swap_partitioned_voter", "swarm"} <= set(SCENARIOS)
