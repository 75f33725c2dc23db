"""The durable election state (what the `quorum-state` file holds)."""

from __future__ import annotations

from dataclasses import dataclass

from pykraft.raft.voter_set import ReplicaKey


@dataclass(frozen=True, slots=True)
class ElectionState:
    """Epoch, the leader if known and the vote cast in this epoch if any (4.0+ may hold both)."""

    epoch: int
    leader_id: int | None = None
    voted_key: ReplicaKey | None = None

    @staticmethod
    def with_voted_candidate(epoch: int, key: ReplicaKey) -> ElectionState:
        return ElectionState(epoch, None, key)

    @staticmethod
    def with_elected_leader(epoch: int, leader_id: int, voted_key: ReplicaKey | None = None) -> ElectionState:
        return ElectionState(epoch, leader_id, voted_key)

    @staticmethod
    def with_unknown_leader(epoch: int, voted_key: ReplicaKey | None = None) -> ElectionState:
        return ElectionState(epoch, None, voted_key)

    def is_leader(self, node_id: int | None) -> bool:
        return node_id is not None and self.leader_id == node_id

    def is_voted_candidate(self, key: ReplicaKey) -> bool:
        """A stored vote without a directory id matches any directory of that id."""
        if self.voted_key is None or self.voted_key.id != key.id:
            return False
        return self.voted_key.directory_id is None or self.voted_key.directory_id == key.directory_id
