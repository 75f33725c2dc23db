"""Voter set and kraft.version as of every offset between the latest snapshot and the log end (KIP-853), and
the target of a quorum reassignment (KIP-642's TargetVoters: pykraft's target tag on a VotersRecord, see
records/control.py).

Fed with every control record the log receives (snapshot load, leader append, follower append). A VotersRecord
takes effect when appended, not when committed; truncation reverts it. The static voter set (kraft.version 0)
is the base entry at offset -1. Targets are kept the same way, from the VotersRecords that carry the tag (an entry of
None: the target was cleared); a VotersRecord without it leaves the target as it was. The leader acts on a target
only once it is committed (handlers/reassign_voters.py).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable
from typing import Any

from pykraft.raft.log import OffsetAndEpoch
from pykraft.raft.voter_set import VoterSet
from pykraft.records import RecordsError, iter_batches
from pykraft.records.control import ControlRecordType, decode_control_record


class VoterHistory:
    def __init__(self, static_voters: VoterSet | None) -> None:
        self._voter_offsets: list[int] = []
        self._voter_sets: list[VoterSet] = []
        self._version_offsets: list[int] = []
        self._versions: list[int] = []
        self._target_offsets: list[int] = []
        self._targets: list[VoterSet | None] = []
        self._static = static_voters
        if static_voters is not None:
            self._voter_offsets.append(-1)
            self._voter_sets.append(static_voters)

    # ---- updates -----------------------------------------------------------------------------------------
    def add_voter_set(self, offset: int, voters: VoterSet) -> None:
        assert not self._voter_offsets or offset > self._voter_offsets[-1], "voter sets out of order"
        self._voter_offsets.append(offset)
        self._voter_sets.append(voters)

    def add_kraft_version(self, offset: int, version: int) -> None:
        assert not self._version_offsets or offset > self._version_offsets[-1], "kraft versions out of order"
        self._version_offsets.append(offset)
        self._versions.append(version)

    def add_target(self, offset: int, target: VoterSet | None) -> None:
        assert not self._target_offsets or offset > self._target_offsets[-1], "targets out of order"
        self._target_offsets.append(offset)
        self._targets.append(target)

    def apply_batches(self, records: bytes | memoryview) -> int:
        """Scan encoded batches for KRaftVersion and Voters records. Returns how many bad control records were
        skipped (a corrupt control record must not crash the node; it is counted)."""
        bad = 0
        try:
            for batch in iter_batches(records, verify_crc=False):
                if not batch.is_control:
                    continue
                for record in batch.records():
                    try:
                        control = decode_control_record(record)
                    except RecordsError:
                        bad += 1
                        continue
                    bad += self._apply_control(record.offset, control.type, control.message, control.voters_target)
        except RecordsError:
            bad += 1
        return bad

    def apply_snapshot(self, records: bytes | memoryview, snapshot_id: OffsetAndEpoch) -> int:
        """Load the KRaftVersion and Voters records of a snapshot. They take effect at the snapshot's last
        contained offset (end offset - 1) and replace whatever the history held from there on; so the bootstrap
        snapshot (0, 0), whose records sit at -1, overrides static voters. Returns the count of bad records."""
        at = snapshot_id.offset - 1
        found: dict[ControlRecordType, Any] = {}  # kio messages
        target_record = None
        bad = 0
        try:
            for batch in iter_batches(records, verify_crc=False):
                if not batch.is_control:
                    continue
                for record in batch.records():
                    try:
                        control = decode_control_record(record)
                    except RecordsError:
                        bad += 1
                        continue
                    if control.type in _SNAPSHOT_TYPES:
                        found[control.type] = control.message
                    if control.type is ControlRecordType.KRAFT_VOTERS:
                        target_record = control.voters_target
        except RecordsError:
            bad += 1
        if ControlRecordType.KRAFT_VERSION in found:
            cut = bisect.bisect_left(self._version_offsets, at)
            del self._version_offsets[cut:], self._versions[cut:]
            self.add_kraft_version(at, found[ControlRecordType.KRAFT_VERSION].k_raft_version)
        if ControlRecordType.KRAFT_VOTERS in found:
            voters = VoterSet.from_voters_record(found[ControlRecordType.KRAFT_VOTERS])
            if voters is None:
                return bad + 1
            cut = bisect.bisect_left(self._voter_offsets, at)
            del self._voter_offsets[cut:], self._voter_sets[cut:]
            self.add_voter_set(at, voters)
        # A snapshot holds a target only while a reassignment is in progress: without one, none is in force there.
        target = _target_of(target_record)
        if target is _CORRUPT:
            return bad + 1
        cut = bisect.bisect_left(self._target_offsets, at)
        del self._target_offsets[cut:], self._targets[cut:]
        if target is not None or self._targets:
            self.add_target(at, target)  # type: ignore[arg-type]
        return bad

    def _apply_control(self, offset: int, kind: ControlRecordType, message: Any, target_record: object) -> int:
        if kind is ControlRecordType.KRAFT_VERSION:
            if self._version_offsets and offset <= self._version_offsets[-1]:
                return 0  # already seen (a re-read of the same log)
            self.add_kraft_version(offset, message.k_raft_version)
        elif kind is ControlRecordType.KRAFT_VOTERS:
            voters = VoterSet.from_voters_record(message)
            if voters is None:
                return 1
            if self._voter_offsets and offset <= self._voter_offsets[-1]:
                return 0
            self.add_voter_set(offset, voters)
            if target_record is not None:
                target = _target_of(target_record)
                if target is _CORRUPT:
                    return 1
                self.add_target(offset, target)  # type: ignore[arg-type]
        return 0

    def truncate_new_entries(self, end_offset: int) -> None:
        """Forget entries at or after `end_offset` (follower truncation)."""
        cut = bisect.bisect_left(self._voter_offsets, end_offset)
        del self._voter_offsets[cut:], self._voter_sets[cut:]
        cut = bisect.bisect_left(self._version_offsets, end_offset)
        del self._version_offsets[cut:], self._versions[cut:]
        cut = bisect.bisect_left(self._target_offsets, end_offset)
        del self._target_offsets[cut:], self._targets[cut:]

    def truncate_old_entries(self, start_offset: int) -> None:
        """Drop entries made obsolete by a snapshot at `start_offset`, keeping the one in force there."""
        keep = max(bisect.bisect_right(self._voter_offsets, start_offset - 1) - 1, 0)
        del self._voter_offsets[:keep], self._voter_sets[:keep]
        keep = max(bisect.bisect_right(self._version_offsets, start_offset - 1) - 1, 0)
        del self._version_offsets[:keep], self._versions[:keep]
        keep = max(bisect.bisect_right(self._target_offsets, start_offset - 1) - 1, 0)
        del self._target_offsets[:keep], self._targets[:keep]

    def reset(self, entries: Iterable[tuple[int, VoterSet]] = ()) -> None:
        self.__init__(self._static)  # type: ignore[misc]
        for offset, voters in entries:
            self.add_voter_set(offset, voters)

    # ---- queries -----------------------------------------------------------------------------------------
    def last_voter_set(self) -> VoterSet:
        return self._voter_sets[-1] if self._voter_sets else VoterSet()

    def last_voter_set_offset(self) -> int | None:
        """Offset of the last VotersRecord (None for static voters or none yet)."""
        if not self._voter_offsets or self._voter_offsets[-1] < 0:
            return None
        return self._voter_offsets[-1]

    def voters_before_uncommitted(self, high_watermark: int | None) -> VoterSet | None:
        """The voter set before the last VotersRecord while that record is not known to be committed (at or above
        `high_watermark`, or the high watermark unknown); None when it is committed or there is no earlier set."""
        offset = self.last_voter_set_offset()
        if offset is None or len(self._voter_sets) < 2:
            return None
        if high_watermark is not None and high_watermark > offset:
            return None
        return self._voter_sets[-2]

    def voter_set_at(self, offset: int) -> VoterSet:
        index = bisect.bisect_right(self._voter_offsets, offset) - 1
        return self._voter_sets[index] if index >= 0 else VoterSet()

    def kraft_version_at(self, offset: int) -> int:
        index = bisect.bisect_right(self._version_offsets, offset) - 1
        return self._versions[index] if index >= 0 else 0

    def last_kraft_version(self) -> int:
        return self._versions[-1] if self._versions else 0

    def has_voters_record(self) -> bool:
        return self.last_voter_set_offset() is not None

    def last_target(self) -> tuple[int, VoterSet] | None:
        """(offset, target) of the reassignment in progress in the log (committed or not); None when the last
        target record cleared it or there is none."""
        if not self._targets or self._targets[-1] is None:
            return None
        return self._target_offsets[-1], self._targets[-1]

    def last_target_offset(self) -> int | None:
        """Offset of the last target record, clearing ones included (None: none since the latest snapshot)."""
        return self._target_offsets[-1] if self._target_offsets else None

    def target_at(self, offset: int) -> VoterSet | None:
        """The reassignment target in force at `offset` (None: no reassignment), e.g. for a snapshot there."""
        entry = self.target_entry_at(offset)
        return None if entry is None else entry[1]

    def target_entry_at(self, offset: int) -> tuple[int, VoterSet | None] | None:
        """(offset of the target record in force at `offset`, its target or None if it cleared one); None when no
        target record is known at or before `offset`."""
        index = bisect.bisect_right(self._target_offsets, offset) - 1
        return (self._target_offsets[index], self._targets[index]) if index >= 0 else None


_SNAPSHOT_TYPES = (ControlRecordType.KRAFT_VERSION, ControlRecordType.KRAFT_VOTERS)
_CORRUPT = object()


def _target_of(record: Any) -> VoterSet | None | object:
    """The target a VotersRecord's target tag names: None for no voters (cleared) or no tag, `_CORRUPT` for one whose
    voters repeat an id or carry a negative id."""
    if record is None or not record.voters:
        return None
    voters = VoterSet.from_voters_record(record)
    return _CORRUPT if voters is None else voters
