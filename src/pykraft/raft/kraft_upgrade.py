"""Upgrade of the `kraft.version` feature from 0 (static voters, KIP-595) to 1 (voters in the log, KIP-853).

The controller calls `RaftCore.upgrade_kraft_version` when an UpdateFeatures request finalizes kraft.version on
the active controller (KIP-853 "UpdateFeatures" handling). The leader:

 1. refuses unless it is the leader (NotLeaderError) and the version is 0 or 1; a downgrade is refused;
    the version already finalized is a no-op;
 2. refuses while a voter change is pending or uncommitted, or before its epoch committed (HWM unknown):
    the upgrade writes a VotersRecord, and at most one voter change may be uncommitted;
 3. checks that every voter supports the new version, from what each voter reported in UpdateVoter this epoch
    (the leader uses its own local range); a voter that has not reported blocks the upgrade;
 4. appends, atomically in one control batch, KRaftVersionRecord(new version) and the VotersRecord of the
    reported voters (with their directory ids, endpoints and ranges), and returns its offset: the caller
    answers UpdateFeatures once the high watermark passes it.

Observers' (brokers') support is the controller's check (it knows their registrations); it is not done here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kio.schema.k_raft_version_record.v0.data import KRaftVersionRecord
from kio.static.primitive import i16

from pykraft.raft.handlers import membership
from pykraft.raft.handlers.update_voter import volatile_voter_set
from pykraft.raft.voter_change import KRaftVersionUpgradeError
from pykraft.raft.voter_set import VoterSet

if TYPE_CHECKING:
    from pykraft.raft.client import RaftCore

MAX_KRAFT_VERSION = 1


def upgrade(core: RaftCore, version: int, now_ms: int, validate_only: bool) -> int | None:
    """Returns the offset of the appended control batch's VotersRecord, or None when nothing was appended
    (already at `version`, or `validate_only`). Raises KRaftVersionUpgradeError when refused."""
    leader = core.leader_state()
    assert leader is not None  # the caller raised NotLeaderError
    current = core.history.last_kraft_version()
    if not 0 <= version <= MAX_KRAFT_VERSION:
        raise KRaftVersionUpgradeError(f"kraft.version {version} is not supported (max {MAX_KRAFT_VERSION})")
    if version < current:
        raise KRaftVersionUpgradeError(f"kraft.version cannot be downgraded from {current} to {version}")
    if version == current:
        return None
    blocked = membership.change_blocked(core, leader, kraft0_allowed=True)
    if blocked is not None:
        raise KRaftVersionUpgradeError(f"cannot upgrade kraft.version now: {blocked[1]}")
    nodes, missing = volatile_voter_set(core, leader)
    if missing:
        raise KRaftVersionUpgradeError(f"voters {missing} have not reported their supported kraft.version")
    unsupported = sorted(n.key.id for n in nodes if not n.supported_kraft.contains(version))
    if unsupported:
        raise KRaftVersionUpgradeError(f"voters {unsupported} do not support kraft.version {version}")
    if validate_only:
        return None
    record = KRaftVersionRecord(version=i16(0), k_raft_version=i16(version))
    return membership.append_voters_record(core, leader, VoterSet.of(nodes), now_ms, extra_first=(record,))
