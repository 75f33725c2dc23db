"""`ControllerHost`: the QuorumController run as the node runtime's state machine (controller_common.md contract).

Every replica replays the committed metadata records (`apply`, `load_snapshot`). The raft leader's replica is the
active controller: it is activated (bootstrap records from `<metadata.log.dir>/bootstrap.checkpoint` on an empty
image) once the runtime reports its leadership, i.e. after it has replayed everything before its epoch.

A request runs as ONE input of the runtime's core task (so nothing interleaves): read the offset the next record
will get, `handle`, append the result's records as one batch (`RaftCore.append` keeps one append in one batch),
and replay them at once into the active controller, as Kafka does. The answer waits until the high watermark has
passed them (a result without records waits for every earlier write of this controller: its answer may reveal
them). If leadership is lost first the caller gets NOT_CONTROLLER and the controller is rebuilt from the last
snapshot plus the committed log, discarding the replays that never committed.

UpdateFeatures is answered here too (the one place its rules run): metadata.version and other features become
FeatureLevelRecords like any result; an accepted kraft.version change (`result.kraft_version_upgrade`) is asked of
the raft core first (`_upgrade_kraft`), and its refusal answers INVALID_UPDATE_VERSION with nothing written.

The leader's committed replay skips the offsets it replayed already (`ReplayedAhead`, controller/log_replay.py);
values that are not metadata records (the quickstart's Produce values) are counted in `undecodable_records` and
skipped.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import time
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from pykraft.controller.controller import (CREATE_ACLS, DELETE_ACLS, INCREMENTAL_ALTER_CONFIGS, ControllerConfig,
                                          QuorumController)
from pykraft.controller.host import ControllerHostView, HostedController, Refusal, Written, error_reply
from pykraft.controller.log_replay import metadata_records
from pykraft.controller.replication import ReplicationControl
from pykraft.controller.result import ControllerResult, KRaftVersionUpgrade
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode
from pykraft.raft.client import NotLeaderError
from pykraft.raft.effects import Ready
from pykraft.raft.log import RawSnapshotReader
from pykraft.raft.voter_change import KRaftVersionUpgradeError
from pykraft.records import RecordsError, iter_batches
from pykraft.records.metadata.errors import MetadataRecordError
from pykraft.records.metadata.frame import decode_metadata_record, encode_metadata_record
from pykraft.storage import StorageError
from pykraft.storage.meta_properties import read_meta_properties

from pykraft.node.runtime import served_apis
from pykraft.node.runtime.metrics import EventQueueStats
from pykraft.node.runtime.served_apis import CONTROLLER_HANDLED
from pykraft.node.apis.configs_api import describe_handler, node_view, with_logger_changes
from pykraft.node.apis.quorum_reassign_api import RaftQuorumReassignments
from pykraft.node.apis.security_apis import acl_writes, security_handlers
from pykraft.node.roles.controller_registration import ControllerRegistrar
from pykraft.protocol.core_versions import to_request_version
from pykraft.node.runtime.writes import WriteFailed
from pykraft.node.roles import reassignment_requests

if TYPE_CHECKING:
    from pykraft.protocol.codec import DecodedRequest

    from pykraft.node.runtime.runtime import NodeRuntime

_log = logging.getLogger("pykraft.node.controller")

BOOTSTRAP_FILE = "bootstrap.checkpoint"
MIN_TICK_DELAY_S = 0.001


def authorizer_configured(static: Mapping[str, str]) -> bool:
    """Whether the node has an authorizer (authorizer.class.name; the node config checked its value)."""
    return bool(str(static.get("authorizer.class.name", "")).strip())


def image_handlers(image_of: Any, node_id: int, static: Mapping[str, str], *, broker: bool = False) -> dict[int, Any]:
    """Handlers of served_apis.IMAGE_APIS reading `image_of()` (a QuorumController or a MetadataCache: `.configs`,
    `.replication`, `.acls`, `.scram`) and this node's own config."""
    return {int(ApiKey.DESCRIBE_CONFIGS): describe_handler(image_of, node_view(node_id, static)),
            **security_handlers(image_of, authorizer_configured(static), broker=broker)}




class BootstrapFileError(ValueError):
    """`bootstrap.checkpoint` exists but is not a readable batch file (the node must not start on it)."""


def read_bootstrap_records(metadata_log_dir: str) -> tuple[Any, ...]:
    """The metadata records of the bootstrap checkpoint (control records skipped); () when there is none."""
    path = os.path.join(metadata_log_dir, BOOTSTRAP_FILE)
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        return ()
    try:
        return tuple(decode_metadata_record(bytes(r.value or b"")) for batch in iter_batches(data)
                     if not batch.is_control for r in batch.records())
    except (RecordsError, MetadataRecordError) as exc:
        raise BootstrapFileError(f"{path}: {exc}") from exc


def controller_config(node_config: Any, cluster_id: str, bootstrap_records: tuple[Any, ...]) -> ControllerConfig:
    """The controller settings of a node config (Kafka's keys and defaults; the node config validated the first
    two). Raises ValueError on a bad leader.imbalance.check.interval.seconds."""
    raw = node_config.raw
    check_s = str(raw.get("leader.imbalance.check.interval.seconds", "300")).strip()
    if not check_s.isdigit():
        raise ValueError(f"leader.imbalance.check.interval.seconds: {check_s!r} is not a non-negative integer")
    partitions, replication_factor = topic_defaults(raw)
    return ControllerConfig(
        replication_factory=lambda rng: ReplicationControl(rng, default_num_partitions=partitions,
                                                           default_replication_factor=replication_factor),
        node_id=node_config.node_id, cluster_id=cluster_id, session_timeout_ms=node_config.broker_session_timeout_ms,
        max_idle_interval_ms=node_config.max_idle_interval_ms,
        auto_leader_rebalance=str(raw.get("auto.leader.rebalance.enable", "true")).strip().lower() == "true",
        leader_imbalance_check_interval_ms=int(check_s) * 1000,
        bootstrap_records=bootstrap_records, static_configs=raw)


def topic_defaults(raw: Mapping[str, Any]) -> tuple[int, int]:
    """(num.partitions, default.replication.factor): what CreateTopics gives a topic that asks for -1 (Kafka's
    defaults 1 and 1). ValueError on a value that is not a positive integer."""
    found = []
    for key in ("num.partitions", "default.replication.factor"):
        text = str(raw.get(key, "1")).strip()
        if not text.isdigit() or int(text) < 1:
            raise ValueError(f"Invalid value {text} for configuration {key}: Value must be at least 1")
        found.append(int(text))
    return found[0], found[1]


def controller_host(node_config: Any) -> ControllerHost:
    """The ControllerHost of a node config. Raises BootstrapFileError for an unreadable bootstrap.checkpoint,
    ValueError for a bad controller setting."""
    try:
        cluster_id = read_meta_properties(node_config.metadata_log_dir).cluster_id
    except StorageError:
        cluster_id = ""  # NodeRuntime.start() refuses the directory with the proper message
    bootstrap = read_bootstrap_records(node_config.metadata_log_dir)
    host = ControllerHost(controller_config(node_config, cluster_id, bootstrap))
    host.registrar = ControllerRegistrar.of_config(host, node_config)
    return host


def hosted_runtime(node_config: Any, host: Any, **runtime_options: Any) -> NodeRuntime:
    """A NodeRuntime with `host` as its state machine, serving the host's APIs (`SERVED`, `extra_handlers`)."""
    from pykraft.node.runtime.runtime import NodeRuntime

    served = host.SERVED  # the role's table (node/runtime/served_apis.py); a combined node's broker listeners differ
    # A host with a broker part opens the broker listeners once caught up (BrokerHost._on_state_changed).
    runtime_options.setdefault("defer_broker_listeners", node_config.is_broker)
    runtime = NodeRuntime(node_config, state_machine=host, registry=served.listeners,
                          extra_handlers=host.extra_handlers(), **runtime_options,
                          broker_registry=served.broker_listeners)
    host.bind(runtime)
    return runtime


def controller_runtime(node_config: Any, **runtime_options: Any) -> NodeRuntime:
    """A NodeRuntime whose state machine is a ControllerHost (reachable as `runtime.state_machine`)."""
    return hosted_runtime(node_config, controller_host(node_config), **runtime_options)


class ControllerHost(ControllerHostView):
    """A `StateMachine` for NodeRuntime; `bind(runtime)` before the runtime starts. The controller's hosting rules
    are HostedController's (controller/host.py, shared with the simulator); this class adds the asyncio parts:
    answers that wait for the commit, the tick timer, the event-queue metrics and kraft.version upgrades."""

    def __init__(self, config: ControllerConfig, rng: random.Random | None = None) -> None:
        self.config = config
        self.rng = rng or random.Random(int.from_bytes(os.urandom(8), "big"))
        self.hosted = HostedController(config, self.rng)
        self.runtime: NodeRuntime | None = None
        self._tick_handle: asyncio.TimerHandle | None = None
        self.undecodable_records = 0
        self.snapshots_loaded = 0
        self.not_controller_answers = 0
        self.last_applied_timestamp_ms: int | None = None  # append time of the last committed batch (lag metric)
        self.event_queue = EventQueueStats()
        # The authorizer's initial load (Kafka's completeInitialLoad): the committed log replayed up to the high
        # watermark; before it only super users are authorized (controller/authorizer.py).
        self.acls_loaded = False
        # Registers this controller with the active one (set by `controller_host`; None for a bare host in tests).
        self.registrar: ControllerRegistrar | None = None
        # KIP-642's seam: the __cluster_metadata entries of AlterPartitionReassignments (reassignment_requests.py),
        # answered by the raft core (node/apis/quorum_reassign_api.py).
        self.quorum_reassignments: reassignment_requests.QuorumReassignments = RaftQuorumReassignments(
            lambda: self.runtime, lambda: self.controller)

    def bind(self, runtime: NodeRuntime) -> None:
        self.runtime = runtime
        runtime.controller_host = self  # what the metrics read, without importing the hosts
        runtime.observers.append(self._observe)

    SERVED = served_apis.CONTROLLER  # what its listeners serve; Envelope: forwarded requests, the runtime opens them

    def metadata_image(self) -> QuorumController:
        """The image Metadata and DescribeCluster answer from (client_apis.MetadataImage: `.cluster`,
        `.replication`). On the active controller it includes its own writes before they commit."""
        return self.controller

    def extra_handlers(self) -> dict[int, Any]:
        async def handler(decoded: DecodedRequest) -> Any:
            return await self.answer(int(decoded.api_key), decoded.message)
        handlers: dict[int, Any] = {int(key): handler for key in CONTROLLER_HANDLED}
        handlers[INCREMENTAL_ALTER_CONFIGS] = with_logger_changes(handler, self.config.node_id)
        enabled = authorizer_configured(self.config.static_configs)
        for key in (CREATE_ACLS, DELETE_ACLS):
            handlers[key] = acl_writes(handler, enabled)
        return {**handlers, **image_handlers(self.metadata_image, self.config.node_id, self.config.static_configs)}

    async def answer(self, api_key: int, message: Any) -> Any:
        """A client's request to this controller (or forwarded by a broker): the reassignment APIs through their
        own path (their quorum entries), everything else straight to `request`."""
        special = reassignment_requests.HANDLERS.get(api_key)
        if special is not None:
            return await special(self, message)
        return await self.request(api_key, message)

    def _bound(self) -> NodeRuntime:
        """The runtime `bind` gave (a programmer error to need it before)."""
        assert self.runtime is not None, "bind(runtime) first"
        return self.runtime

    def _core(self) -> Any:
        return None if self.runtime is None else self.runtime.started_core

    # ---- StateMachine ------------------------------------------------------------------------------------------
    def apply(self, batches: memoryview, base_offset: int, last_offset: int) -> None:
        ahead = self.hosted.ahead  # asked per record only while it holds offsets: nothing adds to it during a replay
        records = metadata_records(batches, on_undecodable=self._count_undecodable,
                                   skip=ahead.covers if ahead else None, on_batch=self._note_batch)
        self.hosted.replay_committed(records, last_offset, self._core())
        self._poke_registrar()

    def load_snapshot(self, reader: RawSnapshotReader) -> None:
        records = metadata_records(reader.records(), on_undecodable=self._count_undecodable)
        self.hosted.load_snapshot([record for _, record in records], reader.snapshot_id.offset - 1)
        self.snapshots_loaded += 1
        self._poke_registrar()

    def _poke_registrar(self) -> None:
        if self.registrar is not None:
            self.registrar.poke()

    def leader_changed(self, leader_id: int | None, epoch: int) -> None:
        self._poke_registrar()
        # Every controller says who leads now (Kafka's QuorumController logs the same on each of them).
        if leader_id is not None:
            _log.info("%sIn the new epoch %d, the active controller is node %d", self._prefix, epoch, leader_id)
        if leader_id == self.config.node_id and self.runtime is not None:
            self.runtime.submit(lambda now: self._activate(epoch, now))
        elif self.controller.active:
            self._resign()

    def snapshot_records(self) -> Iterable[bytes]:
        """The committed image only (HostedController.committed_records)."""
        core = self._core()
        return [encode_metadata_record(r) for r in self.hosted.committed_records(None if core is None else core.log)]

    # ---- requests ----------------------------------------------------------------------------------------------
    async def request(self, api_key: int, message: Any, timeout_ms: int | None = None) -> Any:
        """Run one controller request on the core task; the answer at the request's version, once committed.
        With `timeout_ms`, a request the core has not started running by then is answered REQUEST_TIMED_OUT and
        never runs (Kafka's deadline on its controller event queue)."""
        runtime = self.runtime
        assert runtime is not None, "bind() the host first"
        version = int(message.__version__)
        accepted: asyncio.Future[tuple[Any, asyncio.Future[None] | None, int]] = (
            asyncio.get_running_loop().create_future())
        submitted = runtime.clock()
        deadline = None if timeout_ms is None else submitted + timeout_ms
        timed_out = None if timeout_ms is None else error_reply(
            api_key, message, ErrorCode.REQUEST_TIMED_OUT,
            f"the controller did not start the request within its timeout of {timeout_ms} ms")
        runtime.submit_request(lambda now: self._timed(submitted, now, lambda: self._handle_on_core(
            api_key, message, now, accepted, (deadline, timed_out))), message, accepted)
        try:
            if timeout_ms is not None:
                await _not_later_than(accepted, timeout_ms, timed_out)
            response, waiter, first_offset = await accepted
            if waiter is not None:
                await waiter
        except WriteFailed as exc:
            # The runtime's commit waiters speak for the raft layer; to a controller client the same loss is
            # NOT_CONTROLLER (it then looks for the new active controller).
            error = ErrorCode.NOT_CONTROLLER if exc.error == ErrorCode.NOT_LEADER_OR_FOLLOWER else exc.error
            self.not_controller_answers += error == ErrorCode.NOT_CONTROLLER
            return to_request_version(error_reply(api_key, message, error, str(exc)), version)
        if callable(response):
            response = response(first_offset)
        return to_request_version(response, version)

    def _handle_on_core(self, api_key: int, message: Any, now: int, accepted: asyncio.Future,
                        deadline: tuple[int | None, Any] = (None, None)) -> Any:
        def refuse(refusal: Refusal) -> None:
            self.not_controller_answers += refusal.error == ErrorCode.NOT_CONTROLLER
            accepted.set_result((error_reply(api_key, message, refusal.error, refusal.text), None, -1))

        if accepted.done():
            self.event_queue.timed_out += 1
            return None  # the caller went away
        deadline_ms, timed_out = deadline
        if deadline_ms is not None and now >= deadline_ms:  # reached at or after its deadline: never run
            self.event_queue.timed_out += 1
            accepted.set_result((timed_out, None, -1))
            return None
        core = self._core()
        # Any exception of `handle` but its refusals fails this request only: submit_request hands it to
        # `accepted` (handler_errors.py).
        accepted_result = self.hosted.accept(core, api_key, message, now)
        if isinstance(accepted_result, Refusal):
            return refuse(accepted_result)
        result, next_offset = accepted_result
        leader = core.leader_state()
        kraft_offset, kraft_ready = None, None
        if result.kraft_version_upgrade is not None:
            try:
                kraft_offset, kraft_ready = self._upgrade_kraft(result.kraft_version_upgrade, now)
            except KRaftVersionUpgradeError as exc:  # nothing written: the request is atomic
                return refuse(Refusal(ErrorCode.INVALID_UPDATE_VERSION, str(exc)))
            except NotLeaderError as exc:
                return refuse(Refusal(ErrorCode.NOT_CONTROLLER, str(exc)))
            next_offset = leader.accumulator.next_offset  # the control batch took offsets
        waiter, ready = self._write(result, now, next_offset)
        if kraft_offset is not None and not result.records:
            waiter = self._bound().waiters.add(kraft_offset, leader.epoch)
        accepted.set_result((result.response, waiter, next_offset))
        self._schedule_tick()
        return _merged(kraft_ready, ready)

    def _upgrade_kraft(self, upgrade: KRaftVersionUpgrade, now: int) -> tuple[int | None, Ready]:
        """kraft.version is the raft layer's (a KRaftVersionRecord + VotersRecord control batch), asked for BEFORE the
        FeatureLevelRecords of the same request are written, so a refusal leaves nothing behind (Kafka's
        QuorumController.updateFeatures order). Their batch follows the control batch, so waiting for the records'
        commit covers both; without records the answer waits for the control batch's offset."""
        core = self._bound().core
        offset, ready = core.upgrade_kraft_version(upgrade.version, now, upgrade.validate_only)
        self.controller.note_kraft_version(core.kraft_version())
        return offset, ready

    def _write(self, result: ControllerResult, now: int, next_offset: int,
               wait: bool = True) -> tuple[asyncio.Future[None] | None, Any]:
        """HostedController.write, with a waiter that completes when the records (or, with no records, every
        earlier write of this controller) commit and fails with WriteFailed otherwise. Without `wait` (ticks,
        activation: nobody to answer) there is no waiter, so no failure goes unretrieved."""
        runtime = self.runtime
        assert runtime is not None and self.active_epoch is not None
        epoch = self.active_epoch
        written = self.hosted.write(runtime.core, result, now, next_offset)
        if isinstance(written, Refusal):
            _ready_of(written)
            return _failed(written.error, written.text) if wait else None, None
        self._log_notes(result)  # decided and written (a refused write decided nothing)
        if written.last_offset is None:
            unfinished = self.hosted.unfinished_write()
            return (runtime.waiters.add(unfinished, epoch) if wait and unfinished is not None else None), None
        assert written.offsets_match, "the records did not get the offsets handle was given"
        return runtime.waiters.add(written.last_offset, epoch) if wait else None, written.ready

    # ---- activation, periodic work, resignation ----------------------------------------------------------------
    def _activate(self, epoch: int, now: int) -> Any:
        runtime = self.runtime
        assert runtime is not None
        activated = self.hosted.activate(runtime.core, epoch, now)
        if activated is None:
            return None
        _log.info("%snode %d is the active controller of epoch %d", self._prefix, self.config.node_id, epoch)
        self._schedule_tick()
        return _ready_of(activated[1])

    def _timed(self, submitted_ms: int, now: int, run: Any) -> Any:
        """Kafka's event-queue metrics around one event run on the core task."""
        queue = self.event_queue
        queue.started += 1
        queue.queue_time_ms.observe(max(0, now - submitted_ms))
        started = time.perf_counter()
        try:
            return run()
        finally:
            queue.processing_time_ms.observe((time.perf_counter() - started) * 1000)

    def is_observer(self) -> bool:
        """IsObserver: this controller follows the quorum without being a voter."""
        core = self._core()
        key = None if core is None else core.local.key
        return key is None or not core.voters().is_voter(key)

    def _tick(self, now: int) -> Any:
        self._tick_handle = None
        ticked = self.hosted.tick(self._core(), now)
        if ticked is None:
            return None
        if not isinstance(ticked[1], Refusal):
            self._log_notes(ticked[0])
        self._schedule_tick()
        return _ready_of(ticked[1])

    def _cancel_tick(self) -> None:
        if self._tick_handle is not None:
            self._tick_handle.cancel()
            self._tick_handle = None

    def _schedule_tick(self) -> None:
        self._cancel_tick()
        wakeup = self.controller.next_wakeup_ms()
        runtime = self.runtime
        if wakeup is None or runtime is None:
            return
        delay = max(MIN_TICK_DELAY_S, (wakeup - runtime.clock()) / 1000)
        submitted = runtime.clock()
        self._tick_handle = asyncio.get_running_loop().call_later(
            delay, runtime.submit, lambda now: self._timed(submitted + int(delay * 1000), now, lambda: self._tick(now)))

    def _observe(self, core: Any, now: int) -> None:
        """After every core input: a leader that lost its epoch (resigned, stepped down, shutting down) stops; the
        ACLs count as loaded once the replay caught up with the high watermark."""
        if self.hosted.lost_leadership(core):
            self._resign()
        if not self.acls_loaded and core.high_watermark is not None and core.listener.next_offset >= core.high_watermark:
            self.acls_loaded = True
            _log.info("node %d: metadata replayed up to the high watermark %d: the authorizer's ACLs are loaded",
                      self.config.node_id, core.high_watermark)
            if self.runtime is not None:
                self.runtime.acls_loaded()

    def _resign(self) -> None:
        _log.info("%snode %d stops being the active controller", self._prefix, self.config.node_id)
        self._cancel_tick()
        core = self._core()
        self.hosted.resign(None if core is None else core.log)

    def _log_notes(self, result: ControllerResult) -> None:
        """What the controller decided and why (fencing, unfencing, controlled shutdowns, registrations)."""
        for note in result.notes:
            _log.info("%s%s", self._prefix, note)

    @property
    def _prefix(self) -> str:
        return f"[QuorumController id={self.config.node_id}] "

    def _note_batch(self, batch: Any) -> None:
        self.last_applied_timestamp_ms = batch.max_timestamp  # the lag metric's append time

    def _count_undecodable(self, count: int = 1) -> None:
        self.undecodable_records += count


def _ready_of(written: Written | Refusal) -> Ready | None:
    """The core output to run after a write; a result that could not be written is logged (it is a bug)."""
    if isinstance(written, Written):
        assert written.last_offset is None or written.offsets_match, "the records did not get the offsets handle gave"
        return written.ready
    if written.error == ErrorCode.UNKNOWN_SERVER_ERROR:
        _log.error("controller result not written: %s", written.text)
    return None


def _merged(first: Ready | None, second: Ready | None) -> Ready | None:
    """Two core calls in one input each drain the core's effects into their own Ready: run both, in order."""
    if first is None or second is None:
        return second if first is None else first
    return Ready(first.effects + second.effects, min(first.wakeup_ms, second.wakeup_ms))


async def _not_later_than(accepted: asyncio.Future[Any], timeout_ms: int, timed_out: Any) -> None:
    """Wait for `accepted` at most `timeout_ms`; then give it the `timed_out` answer (the core skips a request whose
    answer is set before it runs)."""
    try:
        await asyncio.wait_for(asyncio.shield(accepted), max(timeout_ms, 0) / 1000)
    except asyncio.TimeoutError:
        if not accepted.done():
            accepted.set_result((timed_out, None, -1))


def _failed(error: ErrorCode, message: str) -> asyncio.Future[None]:
    future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    future.set_exception(WriteFailed(error, message))
    return future
