"""The CI sweep: 500 seeds of the short swarm profile on two workers, no violation. Budget: well under 90 s on
two cores (about 65 s measured on the development VM). The long sweep is a separate command:
`pykraft sim sweep --seeds 2000 --jobs 2 --scenario swarm`."""

from pykraft.sim.sweep import sweep

SEEDS = 500


def test_five_hundred_seeds_without_a_violation() -> None:
    summary = sweep(range(SEEDS), "swarm_ci", jobs=2)
    totals = summary.totals()
    assert totals["runs"] == SEEDS
    assert not summary.violations, [(r.seed, r.invariant, r.detail) for r in summary.violations]
    assert totals["acked"] > SEEDS  # the runs did commit work
    print(f"\nCI sweep: {totals}")
