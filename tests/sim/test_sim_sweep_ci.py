"""The CI sweep: 500 seeds of the swarm_ci profile on two workers, no violation (about 345,000 events, 1.5
elections per seed, a tail truncated on DivergingEpoch in about 90 runs; about 17 s on the development VM). The
long sweep is a separate command: `pykraft sim sweep --seeds 2000 --jobs 2 --scenario swarm`."""

from pykraft.sim.sweep import sweep

SEEDS = 500


def test_five_hundred_seeds_without_a_violation() -> None:
    summary = sweep(range(SEEDS), "swarm_ci", jobs=2)
    totals = summary.totals()
    assert totals["runs"] == SEEDS
    assert not summary.violations, [(r.seed, r.invariant, r.detail) for r in summary.violations]
    assert totals["acked"] > SEEDS  # the runs did commit work
    print(f"\nCI sweep: {totals}")
