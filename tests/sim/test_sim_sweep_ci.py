"""The CI sweep: 500 seeds of the swarm_ci profile on two workers, no violation (about 345,000 events, 1.5
elections per seed, a tail truncated on DivergingEpoch in about 90 runs; about 17 s on the development VM), and
150 seeds of swarm_disks (lost disks next to reassignments, the class of swarm seed 770042: a disk is lost in
about one run in five, a flip beyond the minority of the smallest voter set skipped in about a quarter; about
15 s). The long sweep is a separate command: `pykraft sim sweep --seeds 2000 --jobs 2 --scenario swarm`."""

from pykraft.sim.engine.sweep import sweep

SEEDS = 500
DISK_SEEDS = 150


def test_five_hundred_seeds_without_a_violation() -> None:
    summary = sweep(range(SEEDS), "swarm_ci", jobs=2)
    totals = summary.totals()
    assert totals["runs"] == SEEDS
    assert not summary.violations, [(r.seed, r.invariant, r.detail) for r in summary.violations]
    assert totals["acked"] > SEEDS  # the runs did commit work
    print(f"\nCI sweep: {totals}")


def test_lost_disks_next_to_reassignments_without_a_violation() -> None:
    summary = sweep(range(DISK_SEEDS), "swarm_disks", jobs=2)
    totals = summary.totals()
    assert totals["runs"] == DISK_SEEDS
    assert not summary.violations, [(r.seed, r.invariant, r.detail) for r in summary.violations]
    lost = sum(1 for r in summary.results if r.stats["storage_faults"] > 0)
    assert lost >= DISK_SEEDS // 10, lost  # disks were lost (and replaced), not only flips skipped
    print(f"\nCI disk sweep: {totals}, runs with a lost disk: {lost}")
