"""The long KIP-848 group sweep (`sim_sweep` tier): many seeds of full-length runs."""

from __future__ import annotations

from pykraft.sim.consumer_groups import run


def test_three_hundred_seeds_of_consumer_group_faults():
    failed = [r.violation for r in (run(seed) for seed in range(1000, 1300)) if not r.ok]
    assert not failed, failed[:3]
