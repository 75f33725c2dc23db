"""Builders for the reconfiguration scenarios (KIP-853): a cluster at kraft.version 1 whose voter set is in the log,
replicas with directory ids, and helpers to elect, commit and drive AddVoter/RemoveVoter/UpdateVoter."""

from __future__ import annotations

import random
import uuid
from typing import Any

from kio.schema.api_versions.v4.request import ApiVersionsRequest
from kio.schema.begin_quorum_epoch.v1.request import BeginQuorumEpochRequest
from kio.schema.errors import ErrorCode
from kio.schema.k_raft_version_record.v0.data import KRaftVersionRecord
from kio.schema.leader_change_message.v1.data import LeaderChangeMessage, Voter
from kio.schema.vote.v2.request import VoteRequest
from kio.static.primitive import i16, i32

from pykraft.raft import messages
from pykraft.raft import reconfig_messages as rm
from pykraft.raft.client import RaftCore
from pykraft.raft.config import LocalReplica, QuorumConfig
from pykraft.raft.effects import Respond
from pykraft.raft.election import ElectionState
from pykraft.raft.memory_log import MemoryLog
from pykraft.raft.voter_set import Endpoint, Endpoints, ReplicaKey, SupportedVersionRange, VoterNode, VoterSet
from pykraft.records.control import encode_control_batch

from raft_context import CLUSTER, Context, endpoints

LISTENER = "CONTROLLER"
FULL_RANGE = SupportedVersionRange(0, 1)


def dir_of(node_id: int) -> uuid.UUID:
    return uuid.UUID(int=0x1000 + node_id)


def key(node_id: int, directory_id: uuid.UUID | None = None) -> ReplicaKey:
    return ReplicaKey(node_id, directory_id or dir_of(node_id))


def kraft1_voters(ids: list[int]) -> VoterSet:
    return VoterSet.of(VoterNode(key(i), endpoints(i), FULL_RANGE) for i in ids)


def kraft1_log(ids: list[int], epoch: int = 1) -> MemoryLog:
    """A log where a first leader (ids[0], `epoch`) wrote its start-of-epoch batch: LeaderChange, KRaftVersion(1)
    and the VotersRecord, so that the voter set lives in the log (offsets 0..2)."""
    log = MemoryLog()
    voters = kraft1_voters(ids)
    change = LeaderChangeMessage(version=i16(1), leader_id=i32(ids[0]),
                                 voters=tuple(Voter(voter_id=i32(i), voter_directory_id=dir_of(i)) for i in ids),
                                 granting_voters=())
    batch = encode_control_batch([change, KRaftVersionRecord(version=i16(0), k_raft_version=i16(1)),
                                  voters.to_voters_record()], base_offset=0, partition_leader_epoch=epoch,
                                 timestamp_ms=0)
    log.append_as_follower(batch, epoch)
    log.flush()
    return log


def build(local_id: int, voter_ids: list[int] = (0, 1, 2), *, log: MemoryLog | None = None, auto_join: bool = False,
          can_become_voter: bool = True, directory_id: uuid.UUID | None = None, local_endpoints: Endpoints | None = None,
          supported: SupportedVersionRange = FULL_RANGE, stored: ElectionState | None = None,
          static: bool = False, seed: int = 1) -> Context:
    """A replica of a kraft.version 1 cluster (voters from the log), or of a static kraft.version 0 cluster
    (`static=True`: voters from configuration, empty log)."""
    voter_ids = list(voter_ids)
    if static:
        log = log if log is not None else MemoryLog()
        static_voters = VoterSet.of(VoterNode(ReplicaKey(i), endpoints(i), SupportedVersionRange(0, 0)) for i in voter_ids)
    else:
        log = log if log is not None else kraft1_log(voter_ids)
        static_voters = None
    local = LocalReplica(
        node_id=local_id, directory_id=directory_id or dir_of(local_id),
        endpoints=local_endpoints or endpoints(local_id), supported_kraft=supported,
        can_become_voter=can_become_voter, cluster_id=CLUSTER, static_voters=static_voters,
        bootstrap_servers=tuple(endpoints(i).address(LISTENER) for i in voter_ids))
    config = QuorumConfig(append_linger_ms=0, auto_join=auto_join)
    core = RaftCore(local, config, log, random.Random(seed))
    ctx = Context(core, log)
    ctx._run(core.initialize(stored, 0))
    return ctx


# ---- driving the leader ----------------------------------------------------------------------------------------
def elect(ctx: Context) -> None:
    """Drive the local voter through pre-vote and vote to leadership with every vote granted."""
    ctx.advance(2000)
    assert ctx.role == "Prospective"
    for _ in range(2):
        for send in ctx.take_sent(VoteRequest):
            ctx.respond(send, messages.vote_response(ErrorCode.none, ErrorCode.none, None, ctx.epoch, True))
    assert ctx.role == "Leader"
    for send in ctx.take_sent(BeginQuorumEpochRequest):
        ctx.respond(send, messages.begin_quorum_epoch_response(ErrorCode.none, ErrorCode.none, ctx.core.local.node_id,
                                                               ctx.epoch))


def fetch_request(replica: ReplicaKey, epoch: int, offset: int, last_epoch: int, max_wait: int = 0):
    return messages.fetch_request(CLUSTER, replica, epoch, offset, last_epoch, 0, max_wait, 1 << 20)


def fetch(ctx: Context, node_id: int, offset: int | None = None, directory_id: uuid.UUID | None = None):
    """A fetch by `node_id` at `offset` (default: the leader's LEO, i.e. caught up). Returns the partition."""
    offset = ctx.log.end_offset() if offset is None else offset
    last_epoch = _epoch_at(ctx.log, offset)
    respond = ctx.request(fetch_request(key(node_id, directory_id), ctx.epoch, offset, last_epoch))
    return respond.response.responses[0].partitions[0]


def _epoch_at(log: MemoryLog, offset: int) -> int:
    """The epoch of the record just before `offset` (what a follower at `offset` sends as its last fetched epoch)."""
    epoch = 0
    for start_epoch, start_offset in log.epoch_entries():
        if start_offset < offset:
            epoch = start_epoch
    return epoch


def commit(ctx: Context, *node_ids: int) -> None:
    """The given replicas fetch at the leader's LEO (twice, so that they also learn the new HWM)."""
    for node_id in node_ids:
        fetch(ctx, node_id)


def leader_with_committed_epoch(voter_ids: list[int] = (0, 1, 2), **kwargs) -> Context:
    """Node 0 leads a kraft.version 1 cluster and its epoch has committed (the HWM is known)."""
    ctx = build(0, list(voter_ids), **kwargs)
    elect(ctx)
    commit(ctx, *[i for i in voter_ids if i != 0])
    assert ctx.core.high_watermark == ctx.log.end_offset()
    return ctx


def api_versions_answer(ctx: Context, kraft: SupportedVersionRange | None = FULL_RANGE,
                        error: ErrorCode = ErrorCode.none, source: int | None = None) -> None:
    """Answer the leader's ApiVersions probe (optionally as if it came from another node)."""
    sends = ctx.take_sent(ApiVersionsRequest)
    assert len(sends) == 1, sends
    send = sends[0]
    node = send.destination.node_id if source is None else source
    ctx._run(ctx.core.handle_response(node, send.correlation_id, rm.api_versions_response(error, kraft), ctx.now))


def response_for(ctx: Context, ref: object):
    """The last answer the core gave to the request `ref`, or None (scans every effect so far)."""
    found = [e.response for e in ctx.effects if isinstance(e, Respond) and e.ref == ref]
    return found[-1] if found else None


def other_endpoints(node_id: int) -> Endpoints:
    return Endpoints.of([Endpoint(LISTENER, "moved-host", 19990 + node_id)])


# ---- several cores wired together ------------------------------------------------------------------------------
class Cluster:
    """Routes every Send between in-process cores, delivering answers whenever they appear (parked fetches answer
    later). Bootstrap-server destinations (negative ids) resolve by port; ApiVersions probes are answered by the
    destination's runtime with its supported kraft.version range, as a real node would."""

    def __init__(self, nodes: dict[int, Context]) -> None:
        self.nodes = nodes
        self.in_flight: dict[object, tuple[Context, Any]] = {}
        self.dropped: set[int] = set()  # nodes cut off from everyone

    def _target(self, send) -> Context | None:
        node_id = send.destination.node_id
        if node_id < 0:
            node_id = send.destination.port - 9990  # raft_context.endpoints(i) listens on 9990 + i
        return self.nodes.get(node_id)

    def step(self) -> int:
        moved = 0
        for src in self.nodes.values():
            for send in src.take_sent():
                moved += 1
                dst = self._target(send)
                if dst is None or {src.core.local.node_id, dst.core.local.node_id} & self.dropped:
                    continue  # lost; the sender's request times out
                if isinstance(send.request, ApiVersionsRequest):
                    answer = rm.api_versions_response(ErrorCode.none, dst.core.local.supported_kraft)
                    src._run(src.core.handle_response(send.destination.node_id, send.correlation_id, answer, src.now))
                    continue
                ref = object()
                self.in_flight[ref] = (src, send)
                dst._run(dst.core.handle_request(ref, send.request, dst.now))
        for ctx in self.nodes.values():
            answers, ctx.responses = ctx.responses, []
            for answer in answers:
                if answer.ref not in self.in_flight:
                    ctx.responses.append(answer)  # an answer to a request a test sent directly: keep it
                    continue
                src, send = self.in_flight.pop(answer.ref)
                moved += 1
                src._run(src.core.handle_response(send.destination.node_id, send.correlation_id, answer.response,
                                                  src.now))
        return moved

    def run(self, ms: int, tick: int = 10) -> None:
        for _ in range(ms // tick):
            for ctx in self.nodes.values():
                ctx.advance(tick)
            for _ in range(50):
                if not self.step():
                    break

    def leaders(self) -> list[int]:
        return [i for i, ctx in self.nodes.items() if ctx.role == "Leader"]
