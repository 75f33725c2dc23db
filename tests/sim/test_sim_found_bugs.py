"""Bugs in the core found by the targeted scenarios, kept as regression tests. Each names its replay command.

Liveness, found by `pykraft sim run --seed 225 --scenario voter_change_storm`, minimal form
`pykraft sim run --seed 0 --scenario self_removal_cut`: with two voters {A, B}, leader B appends
VotersRecord {A} (RemoveVoter of itself) and more data that A never receives (A's Fetch was lost, or A is cut
off). B loses leadership (check-quorum). From then on nobody can be elected, forever (checked to 200 s
simulated):
- A's voter set is still {A, B} (the record never reached it): it needs B's vote, and B refuses it (B's log is
  longer, so A's is not up to date);
- B's voter set is {A} (uncommitted, but a voter set takes effect on append), so B is no voter in its own view
  and never stands for election; nobody leads, so nobody makes B truncate.
Final state of seed 0: node 0 Unattached@2 voters [0, 1] log end 66; node 1 Unattached@2 voters [0] log end 217.
Kafka's rules as written in the reference (§1.7-1.8) seem to share it; openraft issue #2091 describes the same
class of deadlock ("the node with the newest log cannot campaign, the others cannot obtain its vote").
Fixed in the core (QuorumState.is_voter): a replica stays a candidate-eligible voter of the set before its
removal while the removal is not known to be committed; it counts the votes of the latest set (here A's alone),
wins, commits the removal and leaves. Unit tests: tests/raft/test_pending_self_removal.py.
"""

from pykraft.sim.engine.runner import run


def test_a_leader_that_removed_itself_uncommitted_and_lost_leadership_does_not_leave_the_quorum_leaderless() -> None:
    result = run(0, "self_removal_cut")
    assert result.ok, result.report()


def test_voter_change_storm_seed_225_converges() -> None:
    result = run(225, "voter_change_storm")
    assert result.ok, result.report()


def test_observer_snapshot_download_never_freezes_behind_the_log_start() -> None:
    """voter_change_storm seeds 2004584 and 2001608 (SnapshotAtLogStart: "log start 114, earliest snapshot 108").
    Observer n2 had a discovery Fetch (to a bootstrap server, the leader itself) and a Fetch to the leader out at
    once, both at offset 105; the late one was answered with snapshot 108 (the leader's new log start) after the
    first had brought n2 to 108, so n2 began downloading 108. Its FetchSnapshot was lost, the leader connection
    backed off, and a discovery Fetch brought n2's log to 178 while the download stayed open; n2 snapshotted 114
    itself and cleaned its log to 114, then the download completed and froze 108 below the log start. Fixed in the
    core (handlers/fetch.py): an observer sends one request at a time, and a Fetch answered with records or a
    divergence abandons an open download. Unit tests: tests/raft/test_snapshot_download.py."""
    for seed in (2004584, 2001608):
        result = run(seed, "voter_change_storm")
        assert result.ok, result.report()


def test_eager_admin_waits_for_its_target_to_commit_before_it_is_done() -> None:
    """swarm seed 2006845 (Liveness, "reassignment pending" forever): the eager admin tool sent RemoveVoter(4), the
    last step to [1, 2, 3, 6, 7]; it timed out uncommitted, the tool saw the target in leader 2's (uncommitted)
    voter set and stopped for good; leader 3 of the next epoch had never received the removal, so 4 stayed a voter.
    Not a raft fault (an unacknowledged change may be lost); the tool now declares done only once the set commits."""
    result = run(2006845, "swarm")
    assert result.ok, result.report()
