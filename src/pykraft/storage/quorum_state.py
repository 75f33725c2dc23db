"""The `quorum-state` file: the node's epoch, leader and vote, which no other node can give back.

Primary copy: `quorum-state`, exactly as Kafka's `FileQuorumStateStore` writes it (one line of JSON with
`data_version` 0 or 1, reference §3.5), so Kafka's tools read it.

Hardening (Protocol-Aware Recovery keeps two checksummed copies of this metainfo): `quorum-state.backup` holds
the same JSON line plus a `crc32c:<hex>` line. Each write goes backup first, then primary, each through a
temporary file, fsync, rename and directory fsync. So at any moment the backup is at least as new as the primary.

Reading:
- backup valid (checksum matches): it is the truth; a primary that differs is repaired from it (it is either older,
  because a crash fell between the two writes, or damaged);
- backup missing or damaged, primary parses: the primary is used and the backup rewritten (a directory Kafka wrote
  has no backup at all);
- neither copy usable (both damaged, or one damaged and the other missing): `QuorumStateCorruptError`; the node
  must not start, because guessing could make it vote twice in an epoch or forget an epoch it has seen. The way
  out is the KIP-853 disk-replacement flow (reformat with a new directory id, rejoin).
- neither file exists: a fresh node, `read()` returns None.
`read()` = `load()` (reading only: it refuses before anything is written) then `repair()` (the rewrites above), so
a node start can run every check that may refuse before it repairs anything.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass
from typing import Any

from pykraft.records.crc import crc32c
from pykraft.records.uuids import kafka_str_to_uuid, uuid_to_kafka_str

from .errors import DISK_REPLACEMENT_ADVICE, QuorumStateCorruptError
from .files import atomic_write

QUORUM_STATE = "quorum-state"
BACKUP = "quorum-state.backup"
NO_ID = -1


@dataclass(frozen=True, slots=True)
class QuorumStateData:
    """The content of `quorum-state`. Ids use -1 for "none" like Kafka; `data_version` is kraft.version."""

    leader_epoch: int
    leader_id: int = NO_ID
    voted_id: int = NO_ID
    voted_directory_id: uuid.UUID | None = None
    data_version: int = 1
    current_voters: tuple[int, ...] | None = None  # v0 only; Kafka 3.x wrote the static voters here

    @staticmethod
    def from_election(state: Any, kraft_version: int) -> QuorumStateData:
        """From `pykraft.raft.election.ElectionState` (epoch, leader_id, voted_key) without importing it."""
        voted = state.voted_key
        return QuorumStateData(
            leader_epoch=state.epoch,
            leader_id=NO_ID if state.leader_id is None else state.leader_id,
            voted_id=NO_ID if voted is None else voted.id,
            voted_directory_id=None if voted is None or kraft_version == 0 else voted.directory_id,
            data_version=1 if kraft_version >= 1 else 0,
            current_voters=None if kraft_version >= 1 else (),
        )

    def to_json(self) -> str:
        if self.data_version == 0:
            fields: dict[str, Any] = {
                "clusterId": "",
                "leaderId": self.leader_id,
                "leaderEpoch": self.leader_epoch,
                "votedId": self.voted_id,
                "appliedOffset": 0,
                "currentVoters": None
                if self.current_voters is None
                else [{"voterId": v} for v in self.current_voters],
            }
        else:
            fields = {
                "leaderId": self.leader_id,
                "leaderEpoch": self.leader_epoch,
                "votedId": self.voted_id,
                "votedDirectoryId": uuid_to_kafka_str(self.voted_directory_id),
            }
        fields["data_version"] = self.data_version
        return json.dumps(fields, separators=(",", ":"))

    @staticmethod
    def from_json(text: str) -> QuorumStateData:
        """Parse one line of Kafka's JSON. Raises ValueError for anything Kafka would reject."""
        doc = json.loads(text)
        if not isinstance(doc, dict):
            raise ValueError("quorum-state is not a JSON object")
        version = doc.get("data_version")
        if version not in (0, 1) or isinstance(version, bool):
            raise ValueError(f"unsupported data_version {version!r}")

        def integer(name: str) -> int:
            value = doc.get(name, NO_ID)
            if not isinstance(value, int) or isinstance(value, bool) or not -1 <= value < 1 << 31:
                raise ValueError(f"{name} is not an int32: {value!r}")
            return value

        voters = None
        directory = None
        if version == 0:
            raw = doc.get("currentVoters")
            if raw is not None:
                voters = tuple(int(v["voterId"]) for v in raw)
        else:
            directory = kafka_str_to_uuid(doc.get("votedDirectoryId", uuid_to_kafka_str(None)))
            directory = None if directory.int == 0 else directory
        return QuorumStateData(
            leader_epoch=integer("leaderEpoch"),
            leader_id=integer("leaderId"),
            voted_id=integer("votedId"),
            voted_directory_id=directory,
            data_version=version,
            current_voters=voters,
        )


class QuorumStateStore:
    """Reads and writes the two copies. Blocking (four fsyncs per write); call it where blocking is fine."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.primary_path = os.path.join(directory, QUORUM_STATE)
        self.backup_path = os.path.join(directory, BACKUP)
        self.repaired: str | None = None  # what the last read() or repair() repaired, for logs and tests
        # What load() found to rewrite: the primary from the backup's verified line, or the backup from the primary.
        self._repair: str | QuorumStateData | None = None

    def write(self, state: QuorumStateData) -> None:
        line = state.to_json()
        backup = f"{line}\ncrc32c:{crc32c(line.encode()):08x}\n"
        atomic_write(self.backup_path, backup.encode())
        atomic_write(self.primary_path, (line + "\n").encode())

    def read(self) -> QuorumStateData | None:
        state = self.load()
        self.repair()
        return state

    def load(self) -> QuorumStateData | None:
        """The stored state, reading only; what needs rewriting is kept for `repair()`. Raises
        QuorumStateCorruptError when neither copy is usable."""
        self.repaired, self._repair = None, None
        primary = _read_text(self.primary_path)
        backup = _read_text(self.backup_path)
        if primary is None and backup is None:
            return None
        backup_line = _verified_backup_line(backup)
        if backup_line is not None:
            state = QuorumStateData.from_json(backup_line)
            if primary is None or primary.strip() != backup_line:
                self._repair = backup_line
            return state
        primary_state = _parse(primary)
        if primary_state is not None:
            self._repair = primary_state
            return primary_state
        raise QuorumStateCorruptError(
            f"both copies of the quorum state are unusable: {self.primary_path} "
            f"({'missing' if primary is None else 'damaged'}) and {self.backup_path} "
            f"({'missing' if backup is None else 'damaged'}). Starting would risk forgetting this node's epoch or "
            f"vote and voting twice. {DISK_REPLACEMENT_ADVICE}"
        )

    def repair(self) -> None:
        """Rewrite the stale or damaged copy the last `load()` found, from the good one."""
        if isinstance(self._repair, str):
            atomic_write(self.primary_path, (self._repair + "\n").encode())
            self.repaired = self.primary_path
        elif self._repair is not None:
            self.write(self._repair)
            self.repaired = self.backup_path
        self._repair = None


def _read_text(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", errors="replace")
    except FileNotFoundError:
        return None


def _verified_backup_line(text: str | None) -> str | None:
    if text is None:
        return None
    lines = text.split("\n")
    if len(lines) < 2 or not lines[1].startswith("crc32c:"):
        return None
    line = lines[0]
    if f"crc32c:{crc32c(line.encode()):08x}" != lines[1] or _parse(line) is None:
        return None
    return line


def _parse(text: str | None) -> QuorumStateData | None:
    if text is None:
        return None
    try:
        return QuorumStateData.from_json(text.strip())
    except (ValueError, TypeError, KeyError):
        return None
