"""Kafka's RaftEventSimulationTest scenarios (reference §5.2), each over a few seeds: every invariant holds after
every event, the scenario's own progress checks pass, and the cluster converges after healing. The long sweep
(`pykraft sim sweep --scenario NAME --seeds N`) runs the same scenarios over many more seeds."""

import pytest

from pykraft.sim.engine.runner import run

SEEDS = (0, 1)


@pytest.mark.parametrize("scenario", [
    "initial_election", "leader_failure_graceful", "leader_failure_hard", "all_killed_majority_restart",
    "leader_partitioned", "majority_reachable", "back_to_back_leader_failures", "single_node_data_loss",
    "add_and_remove_voters", "prevote_partial_partition", "swap_partitioned_voter", "swarm",
])
def test_scenario_holds_over_seeds(scenario: str) -> None:
    for seed in SEEDS:
        result = run(seed, scenario)
        assert result.ok, result.report()
        assert result.stats["live_after_ms"] is not None
        assert result.stats["acked"] > 0


def test_a_leader_failure_elects_a_new_leader() -> None:
    result = run(0, "leader_failure_hard")
    assert result.ok and result.stats["elections"] >= 2 and result.stats["max_epoch"] >= 2


def test_swap_completes_the_reassignment() -> None:
    result = run(0, "swap_partitioned_voter")
    assert result.ok and result.stats["admin"].startswith("2 ok"), result.stats


def test_data_loss_run_turns_off_only_majority_reached() -> None:
    from pykraft.sim.scenarios.catalog import single_node_data_loss
    from pykraft.sim.checks.invariants import ALL_INVARIANTS

    plan = single_node_data_loss(0, 10)
    world = plan.world
    while world.scheduler.now_ms < 3500 and world.scheduler.pending():
        world.scheduler.step()
    assert ALL_INVARIANTS - world.checker.enabled == {"MajorityReachedHighWatermark"}
