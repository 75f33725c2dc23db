"""Fetch: the leader answers (long-poll parking, DivergingEpoch, SnapshotId); followers and observers fetch,
truncate on divergence and adopt the high watermark."""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from kio.schema.fetch.v17 import request as fetch_req
from kio.schema.fetch.v17 import response as fetch_resp

from pykraft.protocol.errors import ErrorCode
from pykraft.raft import messages, snapshot_download
from pykraft.raft.config import METADATA_PARTITION, METADATA_TOPIC_ID
from pykraft.raft.effects import Destination, FlushLog, Respond
from pykraft.raft.handlers import follower_membership, valid_cluster_id
from pykraft.raft.log import InvalidAppendError, OffsetAndEpoch, ValidationKind, truncation_offset
from pykraft.raft.states import FollowerState
from pykraft.raft.voter_set import Endpoint, Endpoints, ReplicaKey

if TYPE_CHECKING:
    from pykraft.raft.client import RaftCore


def _respond(core: RaftCore, ref: Hashable, error: ErrorCode = ErrorCode.NONE, **kwargs: Any) -> None:
    leader = core.leader_state()
    core.emit(Respond(ref, messages.fetch_response(
        error, leader_id=core.quorum.leader_id(), epoch=core.quorum.epoch,
        high_watermark=(leader.high_watermark if leader and leader.high_watermark is not None else -1),
        log_start=core.log.start_offset(), endpoints=core.leader_endpoints_field(fetch_resp.NodeEndpoint), **kwargs,
    ), after_log_flush=False))


def _partition(request: fetch_req.FetchRequest) -> fetch_req.FetchPartition | None:
    topics = request.topics
    if len(topics) != 1 or topics[0].topic_id != METADATA_TOPIC_ID or len(topics[0].partitions) != 1:
        return None
    partition = topics[0].partitions[0]
    return partition if partition.partition == METADATA_PARTITION else None


def handle_fetch_request(core: RaftCore, ref: Hashable, request: fetch_req.FetchRequest, now_ms: int) -> None:
    if not valid_cluster_id(core, request.cluster_id):
        return _respond(core, ref, ErrorCode.INCONSISTENT_CLUSTER_ID)
    p = _partition(request)
    if p is None:
        return _respond(core, ref, ErrorCode.INVALID_REQUEST)
    if p.fetch_offset < 0 or p.last_fetched_epoch < 0 or p.last_fetched_epoch > p.current_leader_epoch:
        return _respond(core, ref, partition_error=ErrorCode.INVALID_REQUEST)
    error = leader_only_error(core, p.current_leader_epoch)
    if error is not None:
        return _respond(core, ref, partition_error=error)
    answer_fetch(core, ref, request, now_ms, allow_park=True)


def leader_only_error(core: RaftCore, epoch: int) -> ErrorCode | None:
    if epoch < core.quorum.epoch:
        return ErrorCode.FENCED_LEADER_EPOCH
    if epoch > core.quorum.epoch:
        return ErrorCode.UNKNOWN_LEADER_EPOCH
    if core.leader_state() is None:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    if core.shutdown_deadline_ms is not None:
        return ErrorCode.BROKER_NOT_AVAILABLE
    return None


def answer_fetch(core: RaftCore, ref: Hashable, request: fetch_req.FetchRequest, now_ms: int, allow_park: bool) -> None:
    leader = core.leader_state()
    p = _partition(request)
    assert leader is not None and p is not None
    validation = core.log.validate_offset_and_epoch(p.fetch_offset, p.last_fetched_epoch)
    if validation.kind is ValidationKind.DIVERGING:
        return _respond(core, ref, diverging=validation.offset_and_epoch)
    if validation.kind is ValidationKind.SNAPSHOT:
        return _respond(core, ref, snapshot_id=validation.offset_and_epoch)
    replica_id = request.replica_state.replica_id
    key = ReplicaKey.of(replica_id, p.replica_directory_id) if replica_id >= 0 else None
    if key is not None and allow_park:
        if leader.record_fetch(key, p.fetch_offset, core.log.end_offset(), now_ms):
            core.on_high_watermark_advanced(now_ms)
    # An observer (a broker: it answers clients from the image it replays up to the high watermark) that has not
    # been told the current high watermark is answered now, records or not, as KIP-1166 does with the replica's
    # high watermark in the request. Parked, it would learn it only at the next append or after max wait: the high
    # watermark often moves between the answer that carried the records and the observer's next Fetch (a sole
    # voter's own flush), and a broker then saw a created topic ~470 ms late. Voters stay parked: answering them too
    # cost a Fetch round trip per commit per follower (+28% CPU per linger-0 commit, benchmarks/quorum.py).
    progress = leader.progress_of(key) if key is not None and not leader.voters.is_voter(key) else None
    records = core.log.read(p.fetch_offset, min(p.partition_max_bytes, core.config.max_fetch_size_bytes)).records \
        if p.fetch_offset < core.log.end_offset() else b""
    max_wait = int(request.max_wait.total_seconds() * 1000)
    if not records and allow_park and max_wait > 0 and (
            progress is None or progress.told_high_watermark == leader.high_watermark):
        core.parked_fetches.append((ref, request, now_ms + min(max_wait, core.config.max_fetch_wait_ms)))
        return
    if progress is not None:
        progress.told_high_watermark = leader.high_watermark
    _respond(core, ref, records=records)


def complete_parked_fetches(core: RaftCore, now_ms: int) -> None:
    """New data or a high watermark change completes every parked fetch."""
    if core.leader_state() is None:
        return
    parked, core.parked_fetches = core.parked_fetches, []
    for ref, request, _ in parked:
        answer_fetch(core, ref, request, now_ms, allow_park=False)


def expire_parked_fetches(core: RaftCore, now_ms: int) -> None:
    due = [entry for entry in core.parked_fetches if entry[2] <= now_ms]
    if due:
        core.parked_fetches = [entry for entry in core.parked_fetches if entry[2] > now_ms]
        for ref, request, _ in due:
            answer_fetch(core, ref, request, now_ms, allow_park=False)


def fail_parked_fetches(core: RaftCore, error: ErrorCode) -> None:
    parked, core.parked_fetches = core.parked_fetches, []
    for ref, _, _ in parked:
        _respond(core, ref, partition_error=error)


# ---- follower side -------------------------------------------------------------------------------------------
def _fetch_request(core: RaftCore, epoch: int) -> fetch_req.FetchRequest:
    return messages.fetch_request(
        core.local.cluster_id, core.local.key, epoch, core.log.end_offset(), core.log.last_fetched_epoch(),
        core.log.start_offset(), core.config.max_fetch_wait_ms, core.config.max_fetch_size_bytes)


def maybe_send_fetch(core: RaftCore, state: FollowerState, now_ms: int) -> None:
    """The follower's next request to its leader: FetchSnapshot while a download is in progress (it pauses
    fetching), else Fetch (or a membership request when one is due)."""
    if not core.requests.is_ready(state.leader_id, now_ms):
        return
    if not core.quorum.is_voter() and core.requests.has_any_inflight():
        # An observer's discovery Fetch to a bootstrap server (which may be the leader itself) is still out: a
        # second Fetch would carry the same offset, and its late answer could name a snapshot our log has already
        # passed (Kafka's pollFollowerAsObserver sends only when no request is in flight anywhere).
        return
    if state.fetching_snapshot is not None:
        request = snapshot_download.request(core, state)
        core.send(core.destination_of(state.leader_id, state.leader_endpoints), request, now_ms)
        return
    if follower_membership.maybe_send_membership_request(core, state, now_ms):
        return  # UpdateVoter or auto-join takes this turn; fetching resumes when it is answered
    core.send(core.destination_of(state.leader_id, state.leader_endpoints), _fetch_request(core, state.epoch), now_ms)


def resume_fetching(core: RaftCore, now_ms: int) -> None:
    """After the answer to a follower's own membership request (it took a fetch turn): fetch again. Any outcome of
    an auto-join AddVoter/RemoveVoter is retried, if still needed, after the period."""
    state = core.quorum.state
    if isinstance(state, FollowerState):
        maybe_send_fetch(core, state, now_ms)


def maybe_send_discovery_fetch(core: RaftCore, now_ms: int) -> None:
    """Observers and unattached voters find the leader by fetching from a random ready bootstrap server."""
    servers: list[tuple[int, Endpoint | None]] = [(-(i + 1), e) for i, e in enumerate(core.local.bootstrap_servers)]
    if not servers and core.local.static_voters is not None:
        servers = [(n.key.id, n.endpoints.address(core.local.listener_name)) for n in core.voters().voters.values()
                   if n.key.id != core.local.node_id]
    if core.requests.has_any_inflight():
        return  # one request at a time, the leader's included (Kafka's findReadyBootstrapServer)
    ready = [(node_id, e) for node_id, e in servers if core.requests.is_ready(node_id, now_ms)]
    if not ready:
        return
    node_id, endpoint = ready[core.rng.randrange(len(ready))]
    destination = Destination(node_id, endpoint.host, endpoint.port) if endpoint else Destination(node_id)
    core.send(destination, _fetch_request(core, core.quorum.epoch), now_ms)


def handle_fetch_response(core: RaftCore, source_id: int, response: fetch_resp.FetchResponse, now_ms: int) -> None:
    if int(response.error_code) != ErrorCode.NONE or len(response.responses) != 1 \
            or len(response.responses[0].partitions) != 1:
        core.requests.backoff(source_id, now_ms)
        return
    p = response.responses[0].partitions[0]
    leader_id, epoch = p.current_leader.leader_id, p.current_leader.leader_epoch
    if epoch < core.quorum.epoch:
        core.requests.backoff(source_id, now_ms)  # a stale answer: ask again after the retry backoff
        return
    if epoch > core.quorum.epoch or (leader_id >= 0 and not isinstance(core.quorum.state, FollowerState)
                                     and leader_id != core.local.node_id):
        # The leader's endpoints matter only on a transition (built here: not on every answer of the commit path).
        endpoints = Endpoints.of(Endpoint(core.local.listener_name, e.host, int(e.port))
                                 for e in response.node_endpoints if e.node_id == leader_id)
        core.transition_on_epoch(epoch, leader_id if leader_id >= 0 else None, endpoints, now_ms)
        if not isinstance(core.quorum.state, FollowerState):
            return
    state = core.quorum.state
    if not isinstance(state, FollowerState) or (source_id >= 0 and source_id != state.leader_id):
        # A bootstrap server that is not the leader (or failed): ask another one next time.
        core.requests.backoff(source_id, now_ms)
        return
    if int(p.error_code) != ErrorCode.NONE or not _apply_partition(core, state, p, now_ms):
        core.requests.backoff(source_id, now_ms)  # an invalid answer does not count as a successful fetch
        return
    state.fetch_deadline_ms = now_ms + core.config.fetch_timeout_ms
    state.has_fetched_from_leader = True
    maybe_send_fetch(core, state, now_ms)


def _apply_partition(core: RaftCore, state: FollowerState, p: fetch_resp.PartitionData, now_ms: int) -> bool:
    """Truncate, start a snapshot download, or append; then adopt the HWM. False for an invalid answer."""
    snapshot = OffsetAndEpoch(p.snapshot_id.end_offset, p.snapshot_id.epoch)
    if p.diverging_epoch.epoch >= 0 and p.diverging_epoch.end_offset >= 0:
        snapshot_download.abandon(state)
        _truncate(core, OffsetAndEpoch(p.diverging_epoch.end_offset, p.diverging_epoch.epoch))
        # What is left may still differ from the leader's log below the truncation point (it is validated by the
        # next Fetch), so the leader's HWM says nothing about it yet: adopting it here committed a record the
        # leader does not have (swarm seed 3010029). Kafka updates the HWM only on a records answer too.
        return True
    elif snapshot.offset >= 0 or snapshot.epoch >= 0:
        if snapshot.offset < 0 or snapshot.epoch < 0:
            return False  # half a snapshot id
        snapshot_download.start(core, state, snapshot, now_ms)
        return True  # our log was not validated against the leader's, so its HWM says nothing about it (sim seed 0)
    elif p.records:
        try:
            core.log.append_as_follower(p.records, state.epoch)
        except InvalidAppendError:
            return False  # a response that does not continue our log is dropped
        # The leader serves our log from where it is (e.g. a discovery Fetch answered during a download): a snapshot
        # still being downloaded would end up behind the log start once frozen (voter_change_storm seed 2004584).
        snapshot_download.abandon(state)
        core.bad_control_records += core.history.apply_batches(p.records)
        core.emit(FlushLog(core.log.end_offset()))
    if p.high_watermark >= 0:
        new_hwm = min(p.high_watermark, core.log.end_offset())
        if core.quorum.update_high_watermark(new_hwm):
            core.log.update_high_watermark(new_hwm)
    return True


def _truncate(core: RaftCore, diverging: OffsetAndEpoch) -> None:
    offset = truncation_offset(core.log, diverging)
    hwm = core.high_watermark
    offset = max(offset, hwm if hwm is not None else 0, core.log.start_offset())  # never below committed data
    core.log.truncate_to(offset)
    core.history.truncate_new_entries(offset)
