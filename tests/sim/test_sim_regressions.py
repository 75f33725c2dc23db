"""Core bugs the simulator found, kept as seeded runs (each failed before its fix)."""

from pykraft.sim.engine.runner import run
from pykraft.sim.scenarios.common import CONFIG


def test_follower_told_to_fetch_a_snapshot_does_not_commit_its_unvalidated_log() -> None:
    """leader_partitioned, seed 1 (seed 0 before the scenarios drew their storage knobs per seed): the old leader,
    isolated with an uncommitted tail of its epoch, rejoined behind the new leader's log start. The Fetch answer
    carried a SnapshotId and the leader's HWM; the follower adopted min(HWM, its log end) as its HWM and committed
    its divergent tail (NoDivergence). Fixed in raft/handlers/fetch.py (`_apply_partition` returns after starting
    the download)."""
    result = run(1, "leader_partitioned")
    assert result.ok, result.report()
    assert result.stats["elections"] >= 2


def _longest_burst(times: list[int]) -> int:
    """The most polls in a row each at most 1 ms after the previous one."""
    longest = current = 1 if times else 0
    for before, after in zip(times, times[1:]):
        current = current + 1 if after - before <= 1 else 1
        longest = max(longest, current)
    return longest


def test_sole_voter_leader_does_not_poll_every_millisecond_after_its_check_quorum_deadline() -> None:
    """initial_election, seed 23: a one-voter cluster. Once the leader passed its check-quorum deadline (about
    3000 ms in), nothing reset it and the core's next wake-up stayed "now": the trace shows a poll every ms until the
    run ends (74 in a row). Fixed in raft/leader.py (`poll_check_quorum` resets a sole voter's timer)."""
    result = run(23, "initial_election", trace_size=None)
    assert result.ok, result.report()
    assert result.stats["elections"] == 1 and result.stats["max_epoch"] == 1  # it never resigned
    polls: dict[str, list[int]] = {}
    leader_since: int | None = None
    for line in result.trace:
        time_ms, node, kind, *detail = line.split()
        if kind == "poll":
            polls.setdefault(node, []).append(int(time_ms))
            if leader_since is None and detail and detail[0].startswith("Leader"):
                leader_since = int(time_ms)
    # The run must outlast the deadline (at the latest one period after the first poll as leader), or this test
    # would not look at the window where the loop happened.
    assert leader_since is not None
    assert result.sim_ms > leader_since + CONFIG.check_quorum_timeout_ms
    # Each poll serves a due timer, a flush, a linger or a message: a few may land on adjacent ms, a spin does not.
    assert {node: _longest_burst(times) for node, times in polls.items() if _longest_burst(times) > 4} == {}
