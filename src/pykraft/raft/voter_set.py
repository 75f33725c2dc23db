"""Replica keys, endpoints and the voter set (KIP-853). Every change is a pure function returning a new
`VoterSet` or a `VoterSetError`; nothing here mutates.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kio.schema.voters_record.v0 import data as voters_record
from kio.schema.types import BrokerId
from kio.static.primitive import i16, u16

# The zero uuid is how Kafka's wire and file formats say "no directory id".
ZERO_UUID = uuid.UUID(int=0)


def normalize_directory_id(directory_id: uuid.UUID | None) -> uuid.UUID | None:
    return None if directory_id is None or directory_id == ZERO_UUID else directory_id


def majority_of(count: int) -> int:
    """How many of `count` voters make a majority: the one quorum size every rule uses (votes, the high
    watermark, check-quorum)."""
    return count // 2 + 1


@dataclass(frozen=True, slots=True, order=True)
class ReplicaKey:
    """A replica: node id plus the id of the metadata log directory (None at kraft.version 0)."""

    id: int
    directory_id: uuid.UUID | None = None

    @staticmethod
    def of(id: int, directory_id: uuid.UUID | None) -> ReplicaKey:
        return ReplicaKey(id, normalize_directory_id(directory_id))

    def __str__(self) -> str:
        return f"{self.id}" if self.directory_id is None else f"{self.id}:{self.directory_id}"


@dataclass(frozen=True, slots=True, order=True)
class Endpoint:
    name: str
    host: str
    port: int


@dataclass(frozen=True, slots=True)
class Endpoints:
    """Listener name -> address, kept as a sorted tuple so that equal endpoint sets compare equal."""

    items: tuple[Endpoint, ...] = ()

    @staticmethod
    def of(endpoints: Iterable[Endpoint]) -> Endpoints:
        by_name = {e.name: e for e in endpoints}
        return Endpoints(tuple(sorted(by_name.values())))

    def address(self, listener: str) -> Endpoint | None:
        for endpoint in self.items:
            if endpoint.name == listener:
                return endpoint
        return None

    def is_empty(self) -> bool:
        return not self.items


@dataclass(frozen=True, slots=True)
class SupportedVersionRange:
    min_version: int = 0
    max_version: int = 0

    def contains(self, version: int) -> bool:
        return self.min_version <= version <= self.max_version


@dataclass(frozen=True, slots=True)
class VoterNode:
    key: ReplicaKey
    endpoints: Endpoints = Endpoints()
    supported_kraft: SupportedVersionRange = SupportedVersionRange()

    def matches(self, key: ReplicaKey) -> bool:
        """A voter without a directory id (kraft.version 0) matches any directory of its id."""
        if key.id != self.key.id:
            return False
        return self.key.directory_id is None or self.key.directory_id == key.directory_id


class VoterSetError(enum.Enum):
    DUPLICATE_ID = "duplicate id"
    NOT_FOUND = "voter not found"
    LAST_VOTER = "cannot remove the last voter"


@dataclass(frozen=True, slots=True)
class VoterSet:
    """An immutable map id -> VoterNode. Ids are unique: replacing a disk is remove (id, old) then add (id, new)."""

    voters: Mapping[int, VoterNode] = field(default_factory=dict)

    @staticmethod
    def of(nodes: Iterable[VoterNode]) -> VoterSet:
        by_id: dict[int, VoterNode] = {}
        for node in nodes:
            assert node.key.id not in by_id, f"duplicate voter id {node.key.id}"
            by_id[node.key.id] = node
        return VoterSet(dict(sorted(by_id.items())))

    # ---- queries -----------------------------------------------------------------------------------------
    def ids(self) -> frozenset[int]:
        return frozenset(self.voters)

    def keys(self) -> frozenset[ReplicaKey]:
        return frozenset(node.key for node in self.voters.values())

    def node(self, voter_id: int) -> VoterNode | None:
        return self.voters.get(voter_id)

    def is_voter(self, key: ReplicaKey) -> bool:
        node = self.voters.get(key.id)
        return node is not None and node.matches(key)

    def is_only_voter(self, key: ReplicaKey) -> bool:
        return len(self.voters) == 1 and self.is_voter(key)

    def majority(self) -> int:
        return majority_of(len(self.voters))

    def __len__(self) -> int:
        return len(self.voters)

    def has_overlapping_majority(self, other: VoterSet) -> bool:
        """True when at most one key is added or removed: every majority of one set meets every majority of the
        other, which is why one change at a time needs no joint consensus."""
        return len(self.keys() ^ other.keys()) <= 1

    def needs_update(self, node: VoterNode) -> bool:
        current = self.voters.get(node.key.id)
        return current is not None and current.matches(node.key) and current != node

    def endpoints_of(self, voter_id: int) -> Endpoints:
        node = self.voters.get(voter_id)
        return node.endpoints if node is not None else Endpoints()

    # ---- kio conversion ----------------------------------------------------------------------------------
    def to_voters_record(self) -> voters_record.VotersRecord:
        return voters_record.VotersRecord(
            version=i16(0),
            voters=tuple(
                voters_record.Voter(
                    voter_id=BrokerId(node.key.id),
                    voter_directory_id=node.key.directory_id or ZERO_UUID,
                    endpoints=tuple(
                        voters_record.Endpoint(name=e.name, host=e.host, port=u16(e.port))
                        for e in node.endpoints.items
                    ),
                    k_raft_version_feature=voters_record.KRaftVersionFeature(
                        min_supported_version=i16(node.supported_kraft.min_version),
                        max_supported_version=i16(node.supported_kraft.max_version),
                    ),
                )
                for node in self.voters.values()
            ),
        )

    @staticmethod
    def from_voters_record(record: voters_record.VotersRecord) -> VoterSet | None:
        """None when the record is unusable (empty or duplicate ids): a log holding it is corrupt."""
        nodes: dict[int, VoterNode] = {}
        for voter in record.voters:
            if voter.voter_id < 0 or voter.voter_id in nodes:
                return None
            feature = voter.k_raft_version_feature
            nodes[voter.voter_id] = VoterNode(
                ReplicaKey.of(voter.voter_id, voter.voter_directory_id),
                Endpoints.of(Endpoint(e.name, e.host, e.port) for e in voter.endpoints),
                SupportedVersionRange(feature.min_supported_version, feature.max_supported_version),
            )
        return VoterSet.of(nodes.values()) if nodes else None


# ---- changes (pure) ----------------------------------------------------------------------------------------
def add_voter(voters: VoterSet, node: VoterNode) -> VoterSet | VoterSetError:
    if node.key.id in voters.voters:
        return VoterSetError.DUPLICATE_ID
    return VoterSet.of([*voters.voters.values(), node])


def remove_voter(voters: VoterSet, key: ReplicaKey) -> VoterSet | VoterSetError:
    node = voters.voters.get(key.id)
    if node is None or node.key != key:
        return VoterSetError.NOT_FOUND
    if len(voters) == 1:
        return VoterSetError.LAST_VOTER
    return VoterSet.of(n for n in voters.voters.values() if n.key.id != key.id)


def update_voter(voters: VoterSet, node: VoterNode) -> VoterSet | VoterSetError:
    current = voters.voters.get(node.key.id)
    if current is None or not current.matches(node.key):
        return VoterSetError.NOT_FOUND
    # Keep the stored key unless it had no directory id yet (a kraft.version 0 voter learning its directory).
    key = current.key if current.key.directory_id is not None else node.key
    replaced = VoterNode(key, node.endpoints, node.supported_kraft)
    return VoterSet.of(replaced if n.key.id == node.key.id else n for n in voters.voters.values())
