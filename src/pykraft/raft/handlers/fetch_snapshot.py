"""FetchSnapshot (KIP-630): the leader serves its snapshots in chunks; a follower downloads one (the steps are in
snapshot_download.py).

Leader side, in order: one topic with one partition (else INVALID_REQUEST), cluster id (INCONSISTENT_CLUSTER_ID),
`__cluster_metadata-0` (else UNKNOWN_TOPIC_OR_PARTITION), the leader-only epoch checks (FENCED_LEADER_EPOCH,
UNKNOWN_LEADER_EPOCH, NOT_LEADER_OR_FOLLOWER, BROKER_NOT_AVAILABLE), the snapshot must exist and must not be the
bootstrap snapshot (SNAPSHOT_NOT_FOUND), 0 <= Position < size (POSITION_OUT_OF_RANGE). The answer carries at most
min(MaxBytes, max fetch size) bytes from Position, unaligned; a voter's request counts for check-quorum.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from kio.schema.fetch_snapshot.v1 import request as fs_req
from kio.schema.fetch_snapshot.v1 import response as fs_resp

from pykraft.protocol.errors import ErrorCode
from pykraft.raft import messages, snapshot_download
from pykraft.raft.config import METADATA_PARTITION, METADATA_TOPIC
from pykraft.raft.effects import Respond
from pykraft.raft.handlers import fetch, valid_cluster_id
from pykraft.raft.log import BOOTSTRAP_SNAPSHOT_ID, OffsetAndEpoch
from pykraft.raft.states import FollowerState
from pykraft.raft.voter_set import Endpoint, Endpoints, ReplicaKey

if TYPE_CHECKING:
    from pykraft.raft.client import RaftCore


# ---- leader side ---------------------------------------------------------------------------------------------
def handle_fetch_snapshot_request(core: RaftCore, ref: Hashable, request: fs_req.FetchSnapshotRequest,
                                  now_ms: int) -> None:
    def respond(error: ErrorCode = ErrorCode.NONE, partition_error: ErrorCode = ErrorCode.NONE, **kwargs: Any) -> None:
        core.emit(Respond(ref, messages.fetch_snapshot_response(
            error, partition_error=partition_error, leader_id=core.quorum.leader_id(), epoch=core.quorum.epoch,
            endpoints=core.leader_endpoints_field(fs_resp.NodeEndpoint), **kwargs)))

    if len(request.topics) != 1 or len(request.topics[0].partitions) != 1:
        return respond(ErrorCode.INVALID_REQUEST)
    if not valid_cluster_id(core, request.cluster_id):
        return respond(ErrorCode.INCONSISTENT_CLUSTER_ID)
    p = request.topics[0].partitions[0]
    if request.topics[0].name != METADATA_TOPIC or p.partition != METADATA_PARTITION:
        return respond(partition_error=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    error = fetch.leader_only_error(core, p.current_leader_epoch)
    if error is not None:
        return respond(partition_error=error)
    snapshot_id = OffsetAndEpoch(p.snapshot_id.end_offset, p.snapshot_id.epoch)
    # The bootstrap snapshot only seeds a fresh quorum; the first leader copies its records into the log.
    reader = None if snapshot_id == BOOTSTRAP_SNAPSHOT_ID else core.log.read_snapshot(snapshot_id)
    if reader is None:
        return respond(partition_error=ErrorCode.SNAPSHOT_NOT_FOUND)
    size = reader.size_in_bytes()
    if p.position < 0 or p.position >= size:
        return respond(partition_error=ErrorCode.POSITION_OUT_OF_RANGE)
    leader = core.leader_state()
    assert leader is not None  # checked by leader_only_error
    if request.replica_id >= 0:
        leader.record_fetch_snapshot(ReplicaKey.of(request.replica_id, p.replica_directory_id), now_ms)
    chunk = reader.read(p.position, max(0, min(request.max_bytes, core.config.max_fetch_size_bytes)))
    respond(snapshot_id=snapshot_id, size=size, position=p.position, records=chunk)


# ---- follower side -------------------------------------------------------------------------------------------
def handle_fetch_snapshot_response(core: RaftCore, source_id: int, response: fs_resp.FetchSnapshotResponse,
                                   now_ms: int) -> None:
    if int(response.error_code) != ErrorCode.NONE or len(response.topics) != 1 \
            or len(response.topics[0].partitions) != 1:
        core.requests.backoff(source_id, now_ms)
        return
    p = response.topics[0].partitions[0]
    leader_id, epoch = p.current_leader.leader_id, p.current_leader.leader_epoch
    if epoch > core.quorum.epoch:
        endpoints = Endpoints.of(Endpoint(core.local.listener_name, e.host, int(e.port))
                                 for e in response.node_endpoints if e.node_id == leader_id)
        core.transition_on_epoch(epoch, leader_id if leader_id >= 0 else None, endpoints, now_ms)
        _resume(core, now_ms)
        return
    state = core.quorum.state
    if epoch < core.quorum.epoch or not isinstance(state, FollowerState) or source_id != state.leader_id \
            or state.fetching_snapshot is None:
        core.requests.backoff(source_id, now_ms)  # stale or unexpected: ask again after the retry backoff
        return
    _continue_download(core, state, source_id, p, now_ms)


def _continue_download(core: RaftCore, state: FollowerState, source_id: int, p: fs_resp.PartitionSnapshot,
                       now_ms: int) -> None:
    writer = snapshot_download.writer_of(state)
    assert writer is not None
    snapshot_id = OffsetAndEpoch(p.snapshot_id.end_offset, p.snapshot_id.epoch)
    if int(p.error_code) == ErrorCode.SNAPSHOT_NOT_FOUND or snapshot_id.offset < 0 or snapshot_id.epoch < 0 \
            or (int(p.error_code) == ErrorCode.NONE and snapshot_id != writer.snapshot_id):
        # The leader no longer has our snapshot (or names another one): start over from a Fetch.
        if int(p.error_code) == ErrorCode.NONE and snapshot_id.offset >= 0 and snapshot_id.epoch >= 0:
            core.rejected_snapshot_chunks += 1
        snapshot_download.abandon(state)
    elif int(p.error_code) != ErrorCode.NONE:
        core.requests.backoff(source_id, now_ms)
        return
    elif not snapshot_download.append_chunk(core, state, snapshot_id, p.size, p.position, p.unaligned_records or b""):
        core.rejected_snapshot_chunks += 1  # not a continuation of our copy: ask again from our position
        core.requests.backoff(source_id, now_ms)
        return
    state.fetch_deadline_ms = now_ms + core.config.fetch_timeout_ms
    state.has_fetched_from_leader = True
    fetch.maybe_send_fetch(core, state, now_ms)


def _resume(core: RaftCore, now_ms: int) -> None:
    state = core.quorum.state
    if isinstance(state, FollowerState):
        fetch.maybe_send_fetch(core, state, now_ms)
