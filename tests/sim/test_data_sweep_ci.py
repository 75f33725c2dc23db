"""The data-plane CI sweep: a CI-sized number of seeds of every data scenario on two workers, no violation. Longer
(the session's sweeps ran thousands per scenario): `pykraft sim sweep --seeds 2000 --jobs 2 --scenario data_swarm`."""

import pytest

from pykraft.sim.engine.sweep import sweep

SEEDS = {"data_swarm": 40, "data_broker_faults": 12, "data_disk_loss": 8, "data_controller_failover": 8,
         "data_delete_records": 8, "data_unclean_refused": 4, "data_unclean_allowed": 4, "data_reassign": 6,
         "data_groups": 6, "data_transactions": 6}


@pytest.mark.parametrize("scenario", sorted(SEEDS))
def test_data_scenario_seeds_without_a_violation(scenario: str) -> None:
    summary = sweep(range(1000, 1000 + SEEDS[scenario]), scenario, jobs=2)
    assert summary.totals()["runs"] == SEEDS[scenario]
    assert not summary.violations, [(r.seed, r.invariant, r.detail, r.replay_command()) for r in summary.violations]
    assert sum(r.stats["acked_all"] for r in summary.sorted()) > 0
