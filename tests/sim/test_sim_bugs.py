"""The invariants bite: a deliberate bug patched into the core must be found by a small sweep.

Each test patches one core function with monkeypatch (undone after the test), runs seeds until the first
violation, and checks which invariant reported it. The seed ranges are where these bugs show up quickly; the
same seeds pass without the bug (test_sim_scenarios and the CI sweep).
"""

from pykraft.raft import leader as leader_module
from pykraft.raft.handlers import fetch, membership, vote
from pykraft.raft.log import truncation_offset
from pykraft.raft.states import CandidateState, ProspectiveState, UnattachedState
from pykraft.sim.engine.runner import run


def first_violation(scenario: str, seeds: range) -> tuple[int, str | None]:
    for seed in seeds:
        result = run(seed, scenario)
        if not result.ok:
            return seed, result.invariant
    return -1, None


def test_leader_counting_itself_twice_breaks_majority_reached_high_watermark(monkeypatch) -> None:
    def counts_itself_twice(self) -> bool:
        offsets = [p.end_offset if p.end_offset is not None else -1 for p in self.voter_progress.values()]
        own = self.voter_progress.get(self.local_key.id)
        if own is not None:
            offsets.append(own.end_offset if own.end_offset is not None else -1)
        offsets.sort(reverse=True)
        candidate = offsets[len(self.voter_progress) // 2]
        if candidate > self.epoch_start_offset and (self.high_watermark is None or candidate > self.high_watermark):
            self.high_watermark = candidate
            return True
        return False

    monkeypatch.setattr(leader_module.LeaderState, "_maybe_advance_high_watermark", counts_itself_twice)
    seed, invariant = first_violation("leader_partitioned", range(3))
    assert invariant == "MajorityReachedHighWatermark", (seed, invariant)


def test_voting_twice_in_one_epoch_breaks_single_leader(monkeypatch) -> None:
    honest = vote.can_grant_vote

    def votes_again(core, candidate, up_to_date, pre_vote):
        state = core.quorum.state
        if not pre_vote and candidate.id != core.local.node_id and \
                isinstance(state, (UnattachedState, ProspectiveState, CandidateState)):
            return up_to_date  # ignores the vote already cast (or the candidate's vote for itself)
        return honest(core, candidate, up_to_date, pre_vote)

    monkeypatch.setattr(vote, "can_grant_vote", votes_again)
    seed, invariant = first_violation("swarm_ci", range(220, 300))
    assert invariant == "SingleLeader", (seed, invariant)


def _truncating_at(monkeypatch, where) -> None:  # where(core, honest offset) -> buggy offset
    def truncate(core, diverging) -> None:  # fetch._truncate without its clamp to the HWM
        offset = max(where(core, truncation_offset(core.log, diverging)), core.log.start_offset())
        core.log.truncate_to(offset)
        core.history.truncate_new_entries(offset)

    monkeypatch.setattr(fetch, "_truncate", truncate)


def test_follower_truncating_past_the_divergence_breaks_no_truncation_below_committed(monkeypatch) -> None:
    # Three records further back than the divergence point: into data the follower has already applied.
    _truncating_at(monkeypatch, lambda core, honest: honest - 3)
    seed, invariant = first_violation("diverging_tail", range(3))
    assert invariant == "NoTruncationBelowCommitted", (seed, invariant)


def test_follower_truncating_below_its_high_watermark_breaks_no_truncation_below_committed(monkeypatch) -> None:
    # To HWM - 1 whatever the leader said (the honest offset when the follower knows no HWM).
    _truncating_at(monkeypatch, lambda core, honest: honest if core.high_watermark is None
                   else core.high_watermark - 1)
    seed, invariant = first_violation("diverging_tail", range(3))
    assert invariant == "NoTruncationBelowCommitted", (seed, invariant)


def test_two_voter_changes_in_flight_break_at_most_one_uncommitted_voter_set(monkeypatch) -> None:
    # The leader forgets step 4 of AddVoter/RemoveVoter (refuse while the last VotersRecord is uncommitted); the
    # pending-change check alone lets a second change through once the first was answered on append or timed out.
    monkeypatch.setattr(membership, "has_uncommitted_voter_change", lambda core, leader: False)
    seed, invariant = first_violation("voter_change_storm", range(3))
    assert invariant == "AtMostOneUncommittedVoterSet", (seed, invariant)
