"""Builders for the reconfiguration messages (KIP-853) at the versions the core speaks: AddRaftVoter v1,
RemoveRaftVoter v0, UpdateRaftVoter v0, and the ApiVersions v4 probe the leader sends to a prospective voter.

Kept apart from messages.py so that the election/replication builders and these evolve independently.
"""

from __future__ import annotations

import datetime
import uuid
from typing import Any

from kio.schema.add_raft_voter.v1 import request as add_req
from kio.schema.add_raft_voter.v1 import response as add_resp
from kio.schema.api_versions.v4 import request as av_req
from kio.schema.api_versions.v4 import response as av_resp
from kio.schema.remove_raft_voter.v0 import request as remove_req
from kio.schema.remove_raft_voter.v0 import response as remove_resp
from kio.schema.types import BrokerId
from kio.schema.update_raft_voter.v0 import request as update_req
from kio.schema.update_raft_voter.v0 import response as update_resp
from kio.static.primitive import i16, i32, i32Timedelta, u16

from pykraft.protocol.errors import ErrorCode, kio_code
from pykraft.protocol.throttle import ZERO_THROTTLE
from pykraft.raft.voter_set import ZERO_UUID, Endpoint, Endpoints, ReplicaKey, SupportedVersionRange

KRAFT_VERSION_FEATURE = "kraft.version"
CLIENT_SOFTWARE_NAME = "pykraft"
CLIENT_SOFTWARE_VERSION = "0"


def _dir(directory_id: uuid.UUID | None) -> uuid.UUID:
    return directory_id or ZERO_UUID


def listeners_to_endpoints(listeners: tuple[Any, ...]) -> Endpoints:
    """Request listeners -> Endpoints. Duplicate names keep the last one (the schema's map key is the name)."""
    return Endpoints.of(Endpoint(item.name, item.host, int(item.port)) for item in listeners)


# ---- AddRaftVoter ----------------------------------------------------------------------------------------------
def add_voter_request(cluster_id: str | None, key: ReplicaKey, endpoints: Endpoints, timeout_ms: int,
                      ack_when_committed: bool = True) -> add_req.AddRaftVoterRequest:
    return add_req.AddRaftVoterRequest(
        cluster_id=cluster_id, timeout=i32Timedelta.parse(datetime.timedelta(milliseconds=timeout_ms)),
        voter_id=i32(key.id),
        voter_directory_id=_dir(key.directory_id),
        listeners=tuple(add_req.Listener(name=e.name, host=e.host, port=u16(e.port)) for e in endpoints.items),
        ack_when_committed=ack_when_committed,
    )


def add_voter_response(error: ErrorCode, message: str | None = None) -> add_resp.AddRaftVoterResponse:
    return add_resp.AddRaftVoterResponse(throttle_time=ZERO_THROTTLE, error_code=kio_code(error),
                                         error_message=message)


# ---- RemoveRaftVoter -------------------------------------------------------------------------------------------
def remove_voter_request(cluster_id: str | None, key: ReplicaKey) -> remove_req.RemoveRaftVoterRequest:
    return remove_req.RemoveRaftVoterRequest(cluster_id=cluster_id, voter_id=i32(key.id),
                                             voter_directory_id=_dir(key.directory_id))


def remove_voter_response(error: ErrorCode, message: str | None = None) -> remove_resp.RemoveRaftVoterResponse:
    return remove_resp.RemoveRaftVoterResponse(throttle_time=ZERO_THROTTLE, error_code=kio_code(error),
                                               error_message=message)


# ---- UpdateRaftVoter -------------------------------------------------------------------------------------------
def update_voter_request(cluster_id: str | None, epoch: int, key: ReplicaKey, endpoints: Endpoints,
                         supported: SupportedVersionRange) -> update_req.UpdateRaftVoterRequest:
    return update_req.UpdateRaftVoterRequest(
        cluster_id=cluster_id, current_leader_epoch=i32(epoch), voter_id=i32(key.id),
        voter_directory_id=_dir(key.directory_id),
        listeners=tuple(update_req.Listener(name=e.name, host=e.host, port=u16(e.port)) for e in endpoints.items),
        k_raft_version_feature=update_req.KRaftVersionFeature(
            min_supported_version=i16(supported.min_version), max_supported_version=i16(supported.max_version)),
    )


def update_voter_response(error: ErrorCode, leader_id: int | None, epoch: int,
                          leader_address: Endpoint | None) -> update_resp.UpdateRaftVoterResponse:
    leader = update_resp.CurrentLeader(
        leader_id=BrokerId(-1 if leader_id is None else leader_id), leader_epoch=i32(epoch),
        host=leader_address.host if leader_address else "", port=i32(leader_address.port if leader_address else -1))
    return update_resp.UpdateRaftVoterResponse(throttle_time=ZERO_THROTTLE, error_code=kio_code(error),
                                               current_leader=leader)


# ---- ApiVersions (the AddVoter probe) ------------------------------------------------------------------------------
def api_versions_request() -> av_req.ApiVersionsRequest:
    return av_req.ApiVersionsRequest(client_software_name=CLIENT_SOFTWARE_NAME,
                                     client_software_version=CLIENT_SOFTWARE_VERSION)


def api_versions_response(error: ErrorCode, kraft: SupportedVersionRange | None) -> av_resp.ApiVersionsResponse:
    """What a node answers to the probe; the core only reads the kraft.version supported range."""
    features = () if kraft is None else (av_resp.SupportedFeatureKey(
        name=KRAFT_VERSION_FEATURE, min_version=i16(kraft.min_version), max_version=i16(kraft.max_version)),)
    return av_resp.ApiVersionsResponse(error_code=kio_code(error), api_keys=(), throttle_time=ZERO_THROTTLE,
                                       supported_features=features)


def supported_kraft_range(response: av_resp.ApiVersionsResponse) -> SupportedVersionRange | None:
    """The kraft.version range a node advertises, or None if it advertises none (it cannot be a dynamic voter)."""
    for feature in response.supported_features:
        if feature.name == KRAFT_VERSION_FEATURE and 0 <= feature.min_version <= feature.max_version:
            return SupportedVersionRange(feature.min_version, feature.max_version)
    return None
