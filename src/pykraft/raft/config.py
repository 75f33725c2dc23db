"""Quorum configuration (Kafka's `controller.quorum.*` defaults) and the local replica's identity."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from pykraft.raft.voter_set import Endpoint, Endpoints, ReplicaKey, SupportedVersionRange, VoterSet

METADATA_TOPIC = "__cluster_metadata"
METADATA_PARTITION = 0
METADATA_TOPIC_ID = uuid.UUID(int=1)  # Uuid.ONE_UUID, "AAAAAAAAAAAAAAAAAAAAAQ"

MAX_FETCH_WAIT_MS = 500
# The highest epoch a peer may name. Epochs are int32 on the wire and every election adds one: a quorum moved to
# 2**31 - 1 by one request (a Vote from any candidate with the cluster id) could never elect again, and the node's
# next election overflowed (the core task failed encoding it). 2**20 elections of headroom is years of elections.
MAX_PEER_EPOCH = 2**31 - 1 - 2**20
MAX_BATCH_SIZE_BYTES = 8 * 1024 * 1024
MAX_FETCH_SIZE_BYTES = 8 * 1024 * 1024
RETRY_BACKOFF_BASE_MS = 100
OBSERVER_SESSION_TIMEOUT_MS = 300_000
CAUGHT_UP_WINDOW_MS = 3_600_000
CHECK_QUORUM_TIMEOUT_FACTOR = 1.5


@dataclass(frozen=True, slots=True)
class QuorumConfig:
    election_timeout_ms: int = 1000
    fetch_timeout_ms: int = 2000
    election_backoff_max_ms: int = 1000
    append_linger_ms: int = 25
    request_timeout_ms: int = 2000
    retry_backoff_ms: int = 20
    auto_join: bool = False
    max_fetch_wait_ms: int = MAX_FETCH_WAIT_MS
    max_batch_size_bytes: int = MAX_BATCH_SIZE_BYTES
    max_fetch_size_bytes: int = MAX_FETCH_SIZE_BYTES

    @property
    def check_quorum_timeout_ms(self) -> int:
        return int(self.fetch_timeout_ms * CHECK_QUORUM_TIMEOUT_FACTOR)

    @property
    def begin_quorum_resend_ms(self) -> int:
        return self.fetch_timeout_ms // 2

    @property
    def update_voter_period_ms(self) -> int:
        return 3 * self.fetch_timeout_ms


@dataclass(frozen=True, slots=True)
class LocalReplica:
    """Who this node is. `node_id` None means an observer without an id (e.g. a tool)."""

    node_id: int | None
    directory_id: uuid.UUID | None = None
    listener_name: str = "CONTROLLER"
    endpoints: Endpoints = Endpoints()
    supported_kraft: SupportedVersionRange = SupportedVersionRange(0, 1)
    # From the node's role (process.roles contains controller): False makes it an observer always, whatever voter
    # set its log holds; it never votes, campaigns or leads (QuorumState.is_voter, vote.can_grant_vote).
    can_become_voter: bool = True
    cluster_id: str | None = None
    # Static voters (controller.quorum.voters) or None when only bootstrap servers are configured.
    static_voters: VoterSet | None = None
    bootstrap_servers: tuple[Endpoint, ...] = field(default=())

    @property
    def key(self) -> ReplicaKey | None:
        return None if self.node_id is None else ReplicaKey(self.node_id, self.directory_id)
