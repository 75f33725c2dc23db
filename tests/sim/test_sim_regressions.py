"""Core bugs the simulator found, kept as seeded runs (each failed before its fix)."""

from pykraft.sim.runner import run


def test_follower_told_to_fetch_a_snapshot_does_not_commit_its_unvalidated_log() -> None:
    """Seed 0 of leader_partitioned: the old leader (isolated, with an uncommitted epoch-1 tail) rejoined behind
    the new leader's log start. The Fetch answer carried a SnapshotId and HWM 356; the follower adopted
    min(356, its log end) as its HWM and committed its divergent tail (NoDivergence at offset 111)."""
    result = run(0, "leader_partitioned")
    assert result.ok, result.report()
    assert result.stats["snapshot_loads"] > 0  # the path that used to diverge was exercised
