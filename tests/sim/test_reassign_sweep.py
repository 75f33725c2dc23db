"""The metadata_reassign simulation (sim/scenarios/reassign_scenarios.py): partitions moved and moves cancelled
under broker faults and controller failovers; every image keeps KIP-841, no move is left unfinished after healing
and each partition ends on the target last accepted for it. 60 seeds on two workers (`pykraft sim sweep --seeds
2000 --jobs 2 --scenario metadata_reassign` for more); found the ISR manager's stuck refusals (isr_manager.py)."""

from pykraft.sim.engine.runner import run
from pykraft.sim.engine.sweep import sweep

SEEDS = 60


def test_one_run_moves_partitions_and_converges() -> None:
    result = run(4, "metadata_reassign", trace_size=None)
    assert result.invariant is None, result.detail
    assert result.stats["reassign_accepted"] > 5


def test_metadata_reassign_seeds_without_a_violation() -> None:
    summary = sweep(range(SEEDS), "metadata_reassign", jobs=2)
    assert summary.totals()["runs"] == SEEDS
    assert not summary.violations, [(r.seed, r.invariant, r.detail, r.replay_command()) for r in summary.violations]
    assert sum(r.stats["reassign_accepted"] for r in summary.sorted()) > 5 * SEEDS
