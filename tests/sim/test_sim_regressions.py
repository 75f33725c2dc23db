"""Core bugs the simulator found, kept as seeded runs (each failed before its fix)."""

from pykraft.sim.runner import run


def test_follower_told_to_fetch_a_snapshot_does_not_commit_its_unvalidated_log() -> None:
    """leader_partitioned, seed 1 (seed 0 before the scenarios drew their storage knobs per seed): the old leader,
    isolated with an uncommitted tail of its epoch, rejoined behind the new leader's log start. The Fetch answer
    carried a SnapshotId and the leader's HWM; the follower adopted min(HWM, its log end) as its HWM and committed
    its divergent tail (NoDivergence). Fixed in raft/handlers/fetch.py (`_apply_partition` returns after starting
    the download)."""
    result = run(1, "leader_partitioned")
    assert result.ok, result.report()
    assert result.stats["elections"] >= 2
