"""The targeted scenarios (sim/scenarios/targeted.py) with the real core: they hold, and they exercise the path they are
for - truncation on DivergingEpoch in `diverging_tail`, concurrent voter changes in `voter_change_storm`. The
long sweeps: `pykraft sim sweep --seeds 200 --jobs 2 --scenario diverging_tail` (and voter_change_storm)."""

import random
import uuid

from pykraft.sim.engine.disk import SimDisk
from pykraft.sim.engine.runner import run
from pykraft.sim.scenarios.registry import SCENARIOS
from pykraft.sim.engine.sweep import sweep
from tests.sim.test_sim_disk import log_with


def test_the_log_counts_truncations_the_core_asks_for_and_not_crash_losses() -> None:
    log = log_with(6, flushed=4)
    log.truncate_to(6)  # nothing past the end: not a truncation
    log.crash(random.Random(0), torn_probability=0.0)  # loses offsets 4 and 5: a crash, not counted
    assert (log.end_offset(), log.truncations, log.max_truncated) == (4, 0, 0)
    log.truncate_to(3)
    log.truncate_to(1)
    assert (log.end_offset(), log.truncations, log.max_truncated) == (1, 2, 2)
    disk = SimDisk(uuid.UUID(int=1), log)
    disk.wipe(uuid.UUID(int=2))  # the counters describe the node's run: they survive a disk replacement
    assert (disk.log.truncations, disk.log.max_truncated) == (2, 2)


def test_both_targeted_scenarios_are_registered() -> None:
    assert {"diverging_tail", "voter_change_storm"} <= set(SCENARIOS)


def test_diverging_tail_truncates_uncommitted_tails_on_every_seed_and_holds() -> None:
    for seed, voters in ((3, 3), (5, 4), (1, 5)):
        result = run(seed, "diverging_tail")
        assert result.ok, result.report()
        assert result.stats["cluster"].startswith(f"{voters} voters")
        cuts = result.stats["minority_cuts"]
        assert cuts >= 2
        # Each cut leaves the old leader (and, with 5 voters, the follower cut off with it) a tail to cut.
        assert result.stats["truncations"] >= cuts * (2 if voters == 5 else 1), result.stats
        assert result.stats["max_truncated"] > 1
        assert result.stats["snapshot_loads"] == 0  # the repair went through truncation, not a snapshot
        assert result.stats["live_after_ms"] is not None


def test_voter_change_storm_holds_and_the_leader_refuses_the_overlapping_requests() -> None:
    for seed in (0, 1, 7, 10):
        result = run(seed, "voter_change_storm")
        assert result.ok, result.report()
        storm = result.stats["storm"]
        assert "answers: none " in storm  # some changes went through
        assert "request_timed_out" in storm  # and overlapping ones were refused
        assert result.stats["live_after_ms"] is not None


def test_small_sweeps_of_both_hold_and_truncation_happens_on_most_seeds() -> None:
    tails = sweep(range(10), "diverging_tail", jobs=2)
    assert not tails.violations, [(r.seed, r.invariant, r.detail) for r in tails.violations]
    assert sum(1 for r in tails.results if r.stats["truncations"] > 0) >= 9
    assert tails.totals()["runs_truncating"] >= 9 and tails.totals()["max_truncated"] > 1
    storm = sweep(range(20), "voter_change_storm", jobs=2)
    assert not storm.violations, [(r.seed, r.invariant, r.detail) for r in storm.violations]
    assert sum(1 for r in storm.results if "answers: none " in r.stats["storm"]) >= 18
