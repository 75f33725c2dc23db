"""The metadata CI sweep: 150 seeds of metadata_swarm on two workers, no violation (about 26 s of CPU, so about 13 s on
two idle cores; budget 30 s). Longer: `pykraft sim sweep --seeds 2000 --jobs 2 --scenario
metadata_swarm`."""

from pykraft.sim.engine.sweep import sweep

SEEDS = 150


def test_metadata_swarm_seeds_without_a_violation() -> None:
    summary = sweep(range(SEEDS), "metadata_swarm", jobs=2)
    totals = summary.totals()
    assert totals["runs"] == SEEDS
    assert not summary.violations, [(r.seed, r.invariant, r.detail, r.replay_command()) for r in summary.violations]
    results = summary.sorted()
    assert all(r.stats["topics_created"] == 2 for r in results)
    assert sum(r.stats["activations"] for r in results) > SEEDS  # failovers happened
    assert sum(int(r.stats["isr_shrinks/expands"].split("/")[0]) for r in results) > 0
    print(f"\nmetadata CI sweep: {totals}")
