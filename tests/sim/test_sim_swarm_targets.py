"""The swarm's reassignment targets keep a bootstrap server among the voters (catalog.keep_a_bootstrap_voter),
found by `pykraft sim run --seed 2001553 --scenario swarm`: voters {0} reassigned to {1, 2}; node 0, removed and
its own only bootstrap server, lost the leader when leadership changed and fetched from itself until the end
(an operator's configuration mistake, not a raft fault: Kafka's observers ask the bootstrap servers alone)."""

from pykraft.sim.scenarios.catalog import keep_a_bootstrap_voter
from pykraft.sim.engine.runner import run
from pykraft.sim.scenarios.registry import SCENARIOS


def test_swarm_seed_2001553_converges() -> None:
    result = run(2001553, "swarm")
    assert result.ok, result.report()


def test_a_target_without_an_initial_voter_gets_the_lowest_one() -> None:
    assert keep_a_bootstrap_voter([1, 2], [0]) == [0, 1, 2]
    assert keep_a_bootstrap_voter([4], [1, 2, 3]) == [1, 4]
    assert keep_a_bootstrap_voter([2, 4], [1, 2, 3]) == [2, 4]


def test_no_swarm_plan_reassigns_away_from_every_bootstrap_server() -> None:
    reassigned = 0
    for seed in range(1500):
        plan = SCENARIOS["swarm"](seed, 0)
        notes = "; ".join(plan.notes)
        if "reassign to" not in notes:
            continue
        reassigned += 1
        target = [int(n) for n in notes.split("reassign to [")[1].split("]")[0].split(", ")]
        assert set(target) & set(plan.voters), (seed, plan.voters, target)
    assert reassigned > 100
