"""Builders for the kio messages the core sends and answers with, at the one version per RPC the core speaks
(`CORE_VERSIONS` in protocol/core_versions.py)."""

from __future__ import annotations

import dataclasses
import datetime
import functools
import uuid
from typing import Any, cast

from kio.schema.begin_quorum_epoch.v1 import request as bqe_req
from kio.schema.begin_quorum_epoch.v1 import response as bqe_resp
from kio.schema.end_quorum_epoch.v1 import request as eqe_req
from kio.schema.end_quorum_epoch.v1 import response as eqe_resp
from kio.schema.fetch.v17 import request as fetch_req
from kio.schema.fetch.v17 import response as fetch_resp
from kio.schema.fetch_snapshot.v1 import request as fs_req
from kio.schema.fetch_snapshot.v1 import response as fs_resp
from kio.schema.types import BrokerId, TopicName
from kio.schema.vote.v2 import request as vote_req
from kio.schema.vote.v2 import response as vote_resp
from kio.static.primitive import Records, i32, i32Timedelta, i64, u16

from pykraft.protocol.errors import ErrorCode, kio_code
from pykraft.protocol.throttle import ZERO_THROTTLE
from pykraft.raft.config import METADATA_PARTITION, METADATA_TOPIC, METADATA_TOPIC_ID
from pykraft.raft.log import OffsetAndEpoch
from pykraft.raft.voter_set import ZERO_UUID, Endpoint, Endpoints, ReplicaKey

TOPIC = TopicName(METADATA_TOPIC)


def _dir(directory_id: uuid.UUID | None) -> uuid.UUID:
    return directory_id or ZERO_UUID


@functools.lru_cache(maxsize=64)
def node_endpoints(cls: type, node_id: int | None, endpoints: Endpoints, listener: str) -> tuple[Any, ...]:
    """The leader's entry for an answer's `node_endpoints` (immutable, so one tuple is shared by every answer that
    names the same endpoints: a leader builds one per Fetch answer, on the commit path)."""
    address = endpoints.address(listener)
    if node_id is None or address is None:
        return ()
    return (cls(node_id=BrokerId(node_id), host=address.host, port=_port(cls, address.port)),)


def _port(cls: type, port: int) -> object:
    return u16(port) if _port_is_u16(cls) else i32(port)


@functools.cache
def _port_is_u16(cls: type) -> bool:
    """Whether `cls.port` is a uint16 (once per class: every Fetch answer names the leader's endpoint)."""
    return "u16" in str(next(f.type for f in dataclasses.fields(cls) if f.name == "port"))


# ---- Vote ----------------------------------------------------------------------------------------------------
def vote_request(cluster_id: str | None, candidate: ReplicaKey, epoch: int, voter: ReplicaKey, last: OffsetAndEpoch,
                 pre_vote: bool) -> vote_req.VoteRequest:
    partition = vote_req.PartitionData(
        partition_index=i32(METADATA_PARTITION), replica_epoch=i32(epoch), replica_id=BrokerId(candidate.id),
        replica_directory_id=_dir(candidate.directory_id), voter_directory_id=_dir(voter.directory_id),
        last_offset_epoch=i32(last.epoch), last_offset=i64(last.offset), pre_vote=pre_vote,
    )
    return vote_req.VoteRequest(cluster_id=cluster_id, voter_id=BrokerId(voter.id),
                                topics=(vote_req.TopicData(topic_name=TOPIC, partitions=(partition,)),))


def vote_response(error: ErrorCode, partition_error: ErrorCode, leader_id: int | None, epoch: int, granted: bool,
                  endpoints: tuple[Any, ...] = ()) -> vote_resp.VoteResponse:
    partition = vote_resp.PartitionData(
        partition_index=i32(METADATA_PARTITION), error_code=kio_code(partition_error),
        leader_id=BrokerId(-1 if leader_id is None else leader_id), leader_epoch=i32(epoch), vote_granted=granted,
    )
    return vote_resp.VoteResponse(error_code=kio_code(error), node_endpoints=endpoints,
                                  topics=(vote_resp.TopicData(topic_name=TOPIC, partitions=(partition,)),))


# ---- BeginQuorumEpoch / EndQuorumEpoch -------------------------------------------------------------------------
def _leader_endpoints(cls: type, endpoints: Endpoints) -> tuple[Any, ...]:
    return tuple(cls(name=e.name, host=e.host, port=u16(e.port)) for e in endpoints.items)


def begin_quorum_epoch_request(cluster_id: str | None, leader_id: int, epoch: int, voter: ReplicaKey,
                               endpoints: Endpoints) -> bqe_req.BeginQuorumEpochRequest:
    partition = bqe_req.PartitionData(partition_index=i32(METADATA_PARTITION),
                                      voter_directory_id=_dir(voter.directory_id),
                                      leader_id=BrokerId(leader_id), leader_epoch=i32(epoch))
    return bqe_req.BeginQuorumEpochRequest(
        cluster_id=cluster_id, voter_id=BrokerId(voter.id),
        topics=(bqe_req.TopicData(topic_name=TOPIC, partitions=(partition,)),),
        leader_endpoints=_leader_endpoints(bqe_req.LeaderEndpoint, endpoints),
    )


def begin_quorum_epoch_response(error: ErrorCode, partition_error: ErrorCode, leader_id: int | None,
                                epoch: int, endpoints: tuple[Any, ...] = ()) -> bqe_resp.BeginQuorumEpochResponse:
    partition = bqe_resp.PartitionData(partition_index=i32(METADATA_PARTITION), error_code=kio_code(partition_error),
                                       leader_id=BrokerId(-1 if leader_id is None else leader_id),
                                       leader_epoch=i32(epoch))
    return bqe_resp.BeginQuorumEpochResponse(error_code=kio_code(error), node_endpoints=endpoints,
                                             topics=(bqe_resp.TopicData(topic_name=TOPIC, partitions=(partition,)),))


def end_quorum_epoch_request(cluster_id: str | None, leader_id: int, epoch: int, preferred: tuple[ReplicaKey, ...],
                             endpoints: Endpoints) -> eqe_req.EndQuorumEpochRequest:
    candidates = tuple(eqe_req.ReplicaInfo(candidate_id=BrokerId(k.id), candidate_directory_id=_dir(k.directory_id))
                       for k in preferred)
    partition = eqe_req.PartitionData(partition_index=i32(METADATA_PARTITION), leader_id=BrokerId(leader_id),
                                      leader_epoch=i32(epoch), preferred_candidates=candidates)
    return eqe_req.EndQuorumEpochRequest(cluster_id=cluster_id,
                                         topics=(eqe_req.TopicData(topic_name=TOPIC, partitions=(partition,)),),
                                         leader_endpoints=_leader_endpoints(eqe_req.LeaderEndpoint, endpoints))


def end_quorum_epoch_response(error: ErrorCode, partition_error: ErrorCode, leader_id: int | None,
                              epoch: int, endpoints: tuple[Any, ...] = ()) -> eqe_resp.EndQuorumEpochResponse:
    partition = eqe_resp.PartitionData(partition_index=i32(METADATA_PARTITION), error_code=kio_code(partition_error),
                                       leader_id=BrokerId(-1 if leader_id is None else leader_id),
                                       leader_epoch=i32(epoch))
    return eqe_resp.EndQuorumEpochResponse(error_code=kio_code(error), node_endpoints=endpoints,
                                           topics=(eqe_resp.TopicData(topic_name=TOPIC, partitions=(partition,)),))


def endpoints_from(items: tuple[Any, ...]) -> Endpoints:
    return Endpoints.of(Endpoint(e.name, e.host, int(e.port)) for e in items)


# ---- Fetch -----------------------------------------------------------------------------------------------------
def fetch_request(cluster_id: str | None, replica: ReplicaKey | None, epoch: int, fetch_offset: int,
                  last_fetched_epoch: int, log_start: int, max_wait_ms: int, max_bytes: int) -> fetch_req.FetchRequest:
    """A follower sends one per Fetch answer, on its commit path: the parts that never change between two of them
    come from `_fetch_constants`, and the changing numbers (the core's own, in range) skip kio's phantom-type
    checks, which took ~40% of building the request (py-spy of a follower, commit_timeline.py)."""
    replica_state, directory_id, max_wait, max_bytes_i32 = _fetch_constants(
        replica.id if replica else -1, replica.directory_id if replica else None, max_wait_ms, max_bytes)
    partition = fetch_req.FetchPartition(
        partition=_METADATA_PARTITION_I32, current_leader_epoch=cast(i32, epoch), fetch_offset=cast(i64, fetch_offset),
        last_fetched_epoch=cast(i32, last_fetched_epoch), log_start_offset=cast(i64, log_start),
        partition_max_bytes=max_bytes_i32, replica_directory_id=directory_id,
    )
    return fetch_req.FetchRequest(
        cluster_id=cluster_id, replica_state=replica_state, max_wait=max_wait, min_bytes=_ZERO_I32,
        max_bytes=max_bytes_i32, topics=(fetch_req.FetchTopic(topic_id=METADATA_TOPIC_ID, partitions=(partition,)),),
        forgotten_topics_data=(),
    )


_METADATA_PARTITION_I32 = i32(METADATA_PARTITION)
_ZERO_I32 = i32(0)
_NO_DIVERGING_EPOCH = fetch_resp.EpochEndOffset()
_NO_SNAPSHOT_ID = fetch_resp.SnapshotId()


@functools.lru_cache(maxsize=16)
def _fetch_constants(replica_id: int, directory_id: uuid.UUID | None, max_wait_ms: int,
                     max_bytes: int) -> tuple[fetch_req.ReplicaState, uuid.UUID, i32Timedelta, i32]:
    """The parts of a follower's Fetch that stay the same from one request to the next (immutable, so shared)."""
    return (fetch_req.ReplicaState(replica_id=BrokerId(replica_id)), _dir(directory_id),
            i32Timedelta.parse(datetime.timedelta(milliseconds=max_wait_ms)), i32(max_bytes))


def fetch_response(error: ErrorCode, *, partition_error: ErrorCode = ErrorCode.NONE, high_watermark: int = -1,
                   log_start: int = -1, leader_id: int | None = None, epoch: int = -1,
                   diverging: OffsetAndEpoch | None = None, snapshot_id: OffsetAndEpoch | None = None,
                   records: bytes | memoryview | None = None,
                   endpoints: tuple[Any, ...] = ()) -> fetch_resp.FetchResponse:
    # A leader builds one per Fetch answer, on the commit path: the numbers (the core's own, in range) skip kio's
    # phantom-type checks and the parts that are absent are shared constants, as in `fetch_request`.
    partition = fetch_resp.PartitionData(
        partition_index=_METADATA_PARTITION_I32, error_code=kio_code(partition_error),
        high_watermark=cast(i64, high_watermark), log_start_offset=cast(i64, log_start),
        diverging_epoch=fetch_resp.EpochEndOffset(epoch=i32(diverging.epoch), end_offset=i64(diverging.offset))
        if diverging else _NO_DIVERGING_EPOCH,
        current_leader=fetch_resp.LeaderIdAndEpoch(leader_id=cast(BrokerId, -1 if leader_id is None else leader_id),
                                                   leader_epoch=cast(i32, epoch)),
        snapshot_id=fetch_resp.SnapshotId(end_offset=i64(snapshot_id.offset), epoch=i32(snapshot_id.epoch))
        if snapshot_id else _NO_SNAPSHOT_ID,
        aborted_transactions=None,
        records=None if records is None else cast(Records, bytes(records)),
    )
    return fetch_resp.FetchResponse(
        throttle_time=ZERO_THROTTLE, error_code=kio_code(error), node_endpoints=endpoints,
        responses=(fetch_resp.FetchableTopicResponse(topic_id=METADATA_TOPIC_ID, partitions=(partition,)),),
    )


# ---- FetchSnapshot ---------------------------------------------------------------------------------------------
def fetch_snapshot_request(cluster_id: str | None, replica: ReplicaKey | None, epoch: int, snapshot_id: OffsetAndEpoch,
                           position: int, max_bytes: int) -> fs_req.FetchSnapshotRequest:
    partition = fs_req.PartitionSnapshot(
        partition=i32(METADATA_PARTITION), current_leader_epoch=i32(epoch),
        snapshot_id=fs_req.SnapshotId(end_offset=i64(snapshot_id.offset), epoch=i32(snapshot_id.epoch)),
        position=i64(position), replica_directory_id=_dir(replica.directory_id if replica else None),
    )
    return fs_req.FetchSnapshotRequest(
        cluster_id=cluster_id, replica_id=BrokerId(replica.id if replica else -1), max_bytes=i32(max_bytes),
        topics=(fs_req.TopicSnapshot(name=TOPIC, partitions=(partition,)),),
    )


def fetch_snapshot_response(error: ErrorCode, *, partition_error: ErrorCode = ErrorCode.NONE,
                            leader_id: int | None = None, epoch: int = -1, snapshot_id: OffsetAndEpoch | None = None,
                            size: int = -1, position: int = -1, records: bytes | memoryview = b"",
                            endpoints: tuple[Any, ...] = ()) -> fs_resp.FetchSnapshotResponse:
    snapshot = snapshot_id or OffsetAndEpoch(-1, -1)
    partition = fs_resp.PartitionSnapshot(
        index=i32(METADATA_PARTITION), error_code=kio_code(partition_error),
        snapshot_id=fs_resp.SnapshotId(end_offset=i64(snapshot.offset), epoch=i32(snapshot.epoch)),
        current_leader=fs_resp.LeaderIdAndEpoch(leader_id=BrokerId(-1 if leader_id is None else leader_id),
                                                leader_epoch=i32(epoch)),
        size=i64(size), position=i64(position), unaligned_records=Records(bytes(records)),
    )
    return fs_resp.FetchSnapshotResponse(
        throttle_time=ZERO_THROTTLE, error_code=kio_code(error), node_endpoints=endpoints,
        topics=(fs_resp.TopicSnapshot(name=TOPIC, partitions=(partition,)),),
    )
