"""`BrokerHost`: a broker process (`process.roles=broker`) run on the node runtime.

A broker is an observer of the metadata log: the runtime's raft core fetches `__cluster_metadata` from the
controllers found through `controller.quorum.bootstrap.servers`, and every committed record is replayed into the
broker's `MetadataCache` (this class is the runtime's state machine). Around it run the broker's pure parts:

- `BrokerLifecycle` registers with the active controller, heartbeats, gets unfenced once caught up, and carries
  out the controlled shutdown that `controlled_shutdown()` (SIGTERM) starts;
- `IsrManager` proposes ISR changes for the partitions this broker leads (KIP-497), fed by the follower progress
  of real replication: the data plane (`DataPlane`, data_plane.py) hosts the partition logs, serves Produce, Fetch,
  ListOffsets and OffsetsForLeaderEpoch, and runs the replica fetchers. It opens its logs once the broker caught
  up with the metadata log (RECOVERY), before asking to be unfenced, as Kafka's log manager does.

The active controller is the raft leader this observer knows; its address is the leader's endpoint on the
controller listener in the voter set. Requests to it go over the runtime's connection pool; an answer or a failure
is handed back to the component that asked, which owns every retry and backoff decision. Nothing here blocks the
core task: sends are tasks, timers are loop callbacks, and the pure components are only touched from the loop.

CreateTopics, DeleteTopics, ElectLeaders, UpdateFeatures, (Incremental)AlterConfigs, CreatePartitions and
Alter/ListPartitionReassignments sent to a broker are forwarded to the active controller, as Kafka's
brokers forward them; an unreachable controller gives NOT_CONTROLLER (retriable for clients).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from pykraft.broker.actions import BrokerState, IsrChange, Ready, SendToController, ShutdownComplete, StateChanged
from pykraft.broker.host import ISR, LIFECYCLE, BrokerComponents, controller_for
from pykraft.broker.isr_manager import IsrManager, IsrManagerConfig
from pykraft.broker.isr_rules import DEFAULT_REPLICA_LAG_TIME_MAX_MS
from pykraft.broker.lifecycle import BrokerLifecycle, LifecycleConfig
from pykraft.broker.metadata_cache import MetadataCache
from pykraft.controller.cluster import Endpoint
from pykraft.controller.features import DEFAULT_SUPPORTED_FEATURES
from pykraft.controller.log_replay import metadata_records
from pykraft.protocol.apis import ApiKey
from pykraft.protocol.errors import ErrorCode
from pykraft.raft.log import RawSnapshotReader
from pykraft.records.metadata.frame import encode_metadata_record
from pykraft.storage import StorageError
from pykraft.storage.meta_properties import read_meta_properties

from pykraft.node.runtime.client_apis import controllers
from pykraft.node.hosts.broker_log import error_name, log_isr_change, log_state_change
from pykraft.node.apis.configs_api import with_logger_changes
from pykraft.node.apis.quorum_reassign_api import forward_timeout_ms
from pykraft.node.roles.controller_host import error_reply, hosted_runtime, image_handlers
from pykraft.node.roles.data_plane import DataPlane
from pykraft.node.runtime import served_apis
from pykraft.node.runtime.served_apis import FORWARDED_APIS
from pykraft.node.apis.consumer_group_api import ConsumerGroupApi
from pykraft.node.apis.group_api import GroupApi, offsets_topic_settings
from pykraft.node.hosts.consumer_group_host import consumer_group_config
from pykraft.node.hosts.group_host import GroupHost, group_config
from pykraft.node.hosts.isr_trace import IsrViewTrace
from pykraft.node.runtime.envelope import envelope_error, unwrap_answer, wrap
from pykraft.node.roles.txn_wiring import build_transactions, txn_handlers
from pykraft.protocol.core_versions import to_request_version

if TYPE_CHECKING:
    from pykraft.protocol.codec import DecodedRequest

    from pykraft.node.runtime.runtime import NodeRuntime

_log = logging.getLogger("pykraft.node.broker")

# Kafka's SecurityProtocol ids, as BrokerRegistration carries them.
SECURITY_PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}
CONTROLLED_SHUTDOWN_TIMEOUT_S = 60.0
MIN_TIMER_DELAY_S = 0.001


def broker_settings(node_config: Any) -> tuple[str | None, int]:
    """(broker.rack, replica.lag.time.max.ms) from the node config; ValueError on a bad number."""
    raw = node_config.raw
    rack = str(raw.get("broker.rack", "")).strip() or None
    lag = str(raw.get("replica.lag.time.max.ms", DEFAULT_REPLICA_LAG_TIME_MAX_MS)).strip()
    if not lag.isdigit() or int(lag) == 0:
        raise ValueError(f"replica.lag.time.max.ms: {lag!r} is not a positive integer")
    return rack, int(lag)


def broker_host(node_config: Any) -> BrokerHost:
    """The BrokerHost of a node config. ValueError: a bad broker setting."""
    try:
        meta = read_meta_properties(node_config.metadata_log_dir)
        cluster_id, directory_id = meta.cluster_id, meta.directory_id
    except StorageError:
        cluster_id, directory_id = "", None  # NodeRuntime.start() refuses the directory with the proper message
    return BrokerHost(node_config, cluster_id, directory_id, log_dir_ids=log_dir_ids(node_config))


def log_dir_ids(node_config: Any) -> tuple[uuid.UUID, ...]:
    """The directory ids of `log.dirs` (each one's meta.properties), sorted, as Kafka's broker registers them
    (BrokerRegistration LogDirs); () when one cannot be read (start() refuses the directory then)."""
    ids = []
    for directory in node_config.log_dirs:
        try:
            found = read_meta_properties(directory).directory_id
        except StorageError:
            return ()
        if found is not None:
            ids.append(found)
    return tuple(sorted(set(ids), key=_java_uuid_order))


def _java_uuid_order(value: uuid.UUID) -> tuple[int, int]:
    """Kafka's `Uuid.compareTo`: the two halves as signed longs."""
    def signed(half: int) -> int:
        return half - (1 << 64) if half >= 1 << 63 else half
    return signed(value.int >> 64), signed(value.int & ((1 << 64) - 1))


def broker_runtime(node_config: Any, **runtime_options: Any) -> NodeRuntime:
    """A NodeRuntime whose state machine is a BrokerHost (`runtime.state_machine`). ValueError: a bad setting."""
    return hosted_runtime(node_config, broker_host(node_config), **runtime_options)


class BrokerHost:
    """A `StateMachine` for NodeRuntime; `bind(runtime)` before the runtime starts, `start()` after."""

    def __init__(self, node_config: Any, cluster_id: str, directory_id: uuid.UUID | None, *,
                 incarnation_id: uuid.UUID | None = None, log_dir_ids: tuple[uuid.UUID, ...] = ()) -> None:
        rack, lag_ms = broker_settings(node_config)
        self.node_id = node_config.node_id
        self.cache = MetadataCache()
        self.lifecycle = BrokerLifecycle(LifecycleConfig(
            node_id=self.node_id, cluster_id=cluster_id, incarnation_id=incarnation_id or uuid.uuid4(),
            listeners=tuple(Endpoint(l.name, l.host, l.port,
                                     SECURITY_PROTOCOL_IDS.get(node_config.security_protocol(l.name), 0))
                            for l in node_config.advertised_broker_listeners()),
            features=DEFAULT_SUPPORTED_FEATURES, rack=rack,
            log_dirs=log_dir_ids or (() if directory_id is None else (directory_id,)),
            heartbeat_interval_ms=node_config.broker_heartbeat_interval_ms,
            session_timeout_ms=node_config.broker_session_timeout_ms,
            initial_registration_timeout_ms=node_config.initial_broker_registration_timeout_ms,
            request_timeout_ms=node_config.quorum.request_timeout_ms))
        self.isr = IsrManager(IsrManagerConfig(self.node_id, replica_lag_time_max_ms=lag_ms,
                                               request_timeout_ms=node_config.quorum.request_timeout_ms), self.cache)
        self.components = BrokerComponents({LIFECYCLE: self.lifecycle, ISR: self.isr}, self)
        self.data_plane = DataPlane(self, node_config)
        offsets_topic_settings(node_config.raw)  # refuse a bad value at start, not at the first FindCoordinator
        self.groups = GroupHost(self.data_plane.host, group_config(node_config.raw), lambda: self._now(),
                                consumer_group_config(node_config.raw))
        self.group_api = GroupApi(self, self.groups)
        self.consumer_group_api = ConsumerGroupApi(self, self.groups)
        self.txns, self.txn_api = build_transactions(self)  # the transaction coordinator (txn_wiring.py)
        self.runtime: NodeRuntime | None = None
        self.finished: asyncio.Future[ShutdownComplete] | None = None
        self.undecodable_records = 0  # metadata records replayed from the log that could not be decoded
        self.unloadable_records = 0  # the same, in loaded snapshots
        self.last_applied_offset = -1  # broker-metadata-metrics
        self.last_applied_timestamp_ms: int | None = None
        self.forward_failures = 0
        self._timers: dict[str, tuple[int, asyncio.TimerHandle]] = {}  # name -> (wakeup ms, its timer)
        self._tasks: set[asyncio.Task[None]] = set()
        self._shutdown_requested = False
        self._isr_views = IsrViewTrace()
        self._listeners_requested = False  # the client listeners open once (_serve_clients_once_listed)
        self.acls_loaded = False  # caught up with the metadata log at start (RECOVERY): the authorizer's initial load

    def bind(self, runtime: NodeRuntime) -> None:
        self.runtime = runtime
        runtime.broker_host = self  # what the metrics read, without importing the hosts

    def metadata_image(self) -> MetadataCache:
        return self.cache

    SERVED = served_apis.BROKER

    def extra_handlers(self) -> dict[int, Any]:
        async def handler(decoded: DecodedRequest) -> Any:
            return await self.forward(decoded)
        handlers: dict[int, Any] = {int(key): handler for key in FORWARDED_APIS}
        handlers[int(ApiKey.INCREMENTAL_ALTER_CONFIGS)] = with_logger_changes(handler, self.node_id)
        handlers.update(image_handlers(self.metadata_image, self.node_id, self.data_plane.node_config.raw,
                                       broker=True))
        handlers.update(self.data_plane.handlers())
        handlers.update(self.coordinator_handlers())
        return handlers

    def coordinator_handlers(self) -> dict[int, Any]:
        """The group and transaction coordinators' requests (a combined node serves them on its broker side)."""
        return {**self.group_api.handlers(), **self.consumer_group_api.handlers(), **txn_handlers(self)}

    # ---- lifecycle of the process ------------------------------------------------------------------------------
    def start(self) -> None:
        """Begin registering (after `runtime.start()`: the cluster id and the loop are known)."""
        self.finished = asyncio.get_running_loop().create_future()
        self._run("lifecycle", self.lifecycle.start(self._now()))

    async def controlled_shutdown(self, timeout_s: float = CONTROLLED_SHUTDOWN_TIMEOUT_S) -> ShutdownComplete:
        """KIP-841: ask the controller to move our leaderships away and wait until it lets us go."""
        assert self.finished is not None, "start() first"
        self._shutdown_requested = True
        self._run("lifecycle", self.lifecycle.begin_controlled_shutdown(self._now()))
        try:
            return await asyncio.wait_for(asyncio.shield(self.finished), timeout_s)
        except asyncio.TimeoutError:
            return ShutdownComplete(False, f"the controlled shutdown did not finish within {timeout_s:.0f} s "
                                           f"(last error: {self.lifecycle.last_error})")

    def close(self) -> None:
        for _, handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
        for task in self._tasks:
            task.cancel()
        self.groups.close()
        self.txns.close()
        self.data_plane.close()

    # ---- StateMachine ------------------------------------------------------------------------------------------
    def apply(self, batches: memoryview, base_offset: int, last_offset: int) -> None:
        self.cache.replay_all(metadata_records(batches, on_undecodable=self._count_undecodable,
                                               on_batch=self._note_batch))
        self._after_metadata(last_offset)

    def load_snapshot(self, reader: RawSnapshotReader) -> None:
        last_contained = reader.snapshot_id.offset - 1
        records = metadata_records(reader.records(), on_undecodable=self._count_unloadable)
        self.cache.load_snapshot((record for _, record in records), last_contained)
        self._after_metadata(last_contained)

    def leader_changed(self, leader_id: int | None, epoch: int) -> None:
        """Logged only: every send looks up the current leader (= active controller) when it goes out."""
        if leader_id is not None:
            _log.info("[BrokerLifecycleManager id=%d] The active controller is now node %d (epoch %d)", self.node_id,
                      leader_id, epoch)

    def snapshot_records(self) -> Iterable[bytes]:
        return [encode_metadata_record(r) for r in self.cache.snapshot_records()]

    def _after_metadata(self, last_offset: int) -> None:
        self.last_applied_offset = last_offset
        self.lifecycle.note_metadata_offset(last_offset)
        if self.finished is None:
            return  # replay of the local log before start(): nothing is running yet
        now = self._now()
        if self.data_plane.host.logs is None:
            # Not caught up yet: the ISR manager leads nothing before the partition logs are open (then the image
            # holds this incarnation's own fenced registration). Before, a restarted broker acted on its previous
            # incarnation's leaderships from its stale image and shrank their ISRs to itself, empty-handed (found
            # by the simulator: data_broker_faults seed 1).
            return
        self._run("isr", self.isr.sync_metadata(now))
        self.data_plane.sync_metadata(now)
        self._sync_groups()
        self._serve_clients_once_listed()
        self._run("isr", self.isr.update_progress(self.data_plane.progress(self.isr.led_partitions(), now), now))

    def _count_undecodable(self, count: int = 1) -> None:
        self.undecodable_records += count

    def _count_unloadable(self, count: int = 1) -> None:
        self.unloadable_records += count

    def _note_batch(self, batch: Any) -> None:
        self.last_applied_timestamp_ms = batch.max_timestamp

    # ---- the pure components' actions --------------------------------------------------------------------------
    def _component(self, name: str) -> Any:
        return self.lifecycle if name == "lifecycle" else self.isr

    def _run(self, name: str, ready: Ready, *, refresh_partitions: bool = True) -> None:
        """Carry out a component's actions and schedule its next poll (broker/host.py, shared with the simulator).
        After the ISR manager ran, every partition adopts its high watermark, unless the caller refreshes the
        partitions it changed itself (`refresh_partitions=False`: DataPlane's progress reports, one per append and
        follower fetch)."""
        self.components.run(name, ready)
        if name == "isr" and refresh_partitions:
            self.data_plane.isr_changed()
        if name == "isr" and (refresh_partitions or any(isinstance(a, SendToController) for a in ready.actions)):
            trace = getattr(self.runtime, "trace", None)
            if trace is not None:
                self._isr_views.observe(self.isr, self.cache, trace, self._now())

    # ---- BrokerSink: what the shared action runner hands over ---------------------------------------------------
    def send_to_controller(self, component: str, send: SendToController) -> None:
        task = asyncio.get_running_loop().create_task(self._send(component, send))
        self._tasks.add(task)
        task.add_done_callback(self._send_done)

    def state_changed(self, change: StateChanged) -> None:
        self._on_state_changed(change)

    def shutdown_complete(self, done: ShutdownComplete) -> None:
        self._on_shutdown_complete(done)

    def isr_change(self, change: IsrChange) -> None:
        log_isr_change(self.node_id, self.cache.topic_name(change.topic_id), change,
                       self.isr.config.replica_lag_time_max_ms)

    def find_controller(self, component: str) -> None:
        _log.debug("%s: looking for the active controller again", component)

    def schedule(self, name: str, wakeup_ms: int | None) -> None:
        """(Re)set a component's timer; the runner asks only when its wake-up time changed."""
        old = self._timers.pop(name, None)
        if old is not None:
            old[1].cancel()
        if wakeup_ms is None:
            return
        delay = max(MIN_TIMER_DELAY_S, (wakeup_ms - self._now()) / 1000)
        self._timers[name] = (wakeup_ms, asyncio.get_running_loop().call_later(delay, self._poll, name))

    def _poll(self, name: str) -> None:
        self._timers.pop(name, None)
        self.components.wakeups[name] = None  # fired: the next wake-up is scheduled even if it is the same time
        self._run(name, self._component(name).poll(self._now()))

    async def _send(self, name: str, send: SendToController) -> None:
        address = self._controller_address()
        response = None
        if address is not None:
            response = await self._bound().outbound.forward(address[0], address[1], send.request)
        component = self._component(name)
        if response is None:
            _log.debug("%s: %s to the controller at %s got no answer", name, type(send.request).__name__, address)
            self._run(name, component.handle_failure(send.request_id, self._now()))
            return
        assert address is not None  # (an answer came from it)
        error = int(getattr(response, "error_code", 0))
        if error:
            # NOT_CONTROLLER is what a controller failover looks like from here: expected, the next send finds the
            # new one (the raft and controller lines say who it is)
            _log.log(logging.DEBUG if error == ErrorCode.NOT_CONTROLLER else logging.INFO,
                     "%s: the controller at %s:%s answered %s with %s", name, *address, type(send.request).__name__,
                     error_name(error))
        registered = self.lifecycle.registered
        try:
            ready = component.handle_response(send.request_id, response, self._now())
        except Exception as exc:  # a bug met by this one answer: as if it never came (contained)
            request = send.request
            self._bound().handler_errors.record(int(request.__api_key__), int(request.__version__), exc,
                                               f"response from the controller at {address}")
            ready = component.handle_failure(send.request_id, self._now())
        if self.lifecycle.registered and not registered:
            _log.info("[BrokerLifecycleManager id=%d] Registered with the controller at %s:%s: broker epoch %d",
                      self.node_id, *address, self.lifecycle.broker_epoch)
        self._run(name, ready)

    def _send_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            # A bug, not a network failure (those come back as None): say so; the component times the send out.
            _log.error("sending to the controller failed: %r", task.exception())

    def _on_state_changed(self, change: StateChanged) -> None:
        log_state_change(self.node_id, change, len(self.isr.led_partitions()), self.lifecycle.broker_epoch)
        runtime = self.runtime
        if runtime is not None and hasattr(runtime, "trace"):
            runtime.trace.event(self._now(), "broker_state", old=change.old.value, new=change.new.value,
                                broker_epoch=self.lifecycle.broker_epoch)
        if change.new is BrokerState.RUNNING:
            self._serve_clients_once_listed()
        if change.new in (BrokerState.RECOVERY, BrokerState.RUNNING) and not self.acls_loaded:
            self.acls_loaded = True
            if runtime is not None:
                runtime.acls_loaded()
        if change.new is BrokerState.RECOVERY:
            # Caught up with the metadata log: recover the partition logs, then ask to be unfenced (Kafka waits
            # for its log manager here too). A log that must not be repaired stops the broker instead.
            asyncio.get_running_loop().call_soon(self._open_data_plane)

    def _serve_clients_once_listed(self) -> None:
        """Unfenced for the first time: caught up with the metadata log and the partition logs open, so the client
        listeners open (Kafka's BrokerServer.startup enables request processing after the broker is unfenced), once
        the broker's own image has replayed its unfencing too. The controller answers the heartbeat when the record
        commits, which can be before this broker replayed it: a client's first Metadata would then have listed every
        broker but this one, and kafka-python's admin client keeps that answer (UnknownBrokerIdError for minutes).
        Before the listeners waited for RUNNING, a client was told of an image without brokers or topics."""
        runtime = self.runtime
        if self._listeners_requested or runtime is None or self.lifecycle.state is not BrokerState.RUNNING:
            return
        registration = self.cache.registration(self.node_id)
        if registration is None or registration.fenced:
            return  # _after_metadata calls again as the image moves
        self._listeners_requested = True
        task = asyncio.get_running_loop().create_task(runtime.serve_broker_listeners())
        self._tasks.add(task)
        task.add_done_callback(self._listeners_opened)

    def _listeners_opened(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if task.cancelled() or task.exception() is None:
            return
        # A broker that cannot take clients must not run on as if it did (its peers would elect it leader).
        _log.critical("broker %d cannot open its client listeners: %r", self.node_id, task.exception())
        if self.runtime is not None:
            asyncio.get_running_loop().create_task(self.runtime.stop(graceful=True))

    def _open_data_plane(self) -> None:
        self._run("isr", self.isr.sync_metadata(self._now()))  # the partitions it leads, before their logs open
        try:
            self.data_plane.open(self._now())
        except StorageError as exc:
            _log.critical("broker %d cannot open its partition logs: %s", self.node_id, exc)
            if self.runtime is not None:
                asyncio.get_running_loop().create_task(self.runtime.stop(graceful=False))
            return
        self._sync_groups()
        self._run("lifecycle", self.lifecycle.set_ready_to_unfence(self._now()))

    def _sync_groups(self) -> None:
        if self.data_plane.host.logs is not None:  # the partition logs are open
            self.groups.sync_leadership()
            self.txns.sync_leadership()

    def _on_shutdown_complete(self, done: ShutdownComplete) -> None:
        finished = self.finished
        if finished is not None and not finished.done():
            finished.set_result(done)
        if not self._shutdown_requested and self.runtime is not None:
            # The lifecycle gave up on its own (no registration in time): the process must not run on unregistered.
            _log.error("broker %d stops: %s", self.node_id, done.reason)
            asyncio.get_running_loop().create_task(self.runtime.stop(graceful=True))

    # ---- the active controller ---------------------------------------------------------------------------------
    def _controller_address(self) -> tuple[str, int] | None:
        core = self.runtime.started_core if self.runtime is not None else None
        if core is None:
            return None
        return controller_for(core.quorum.leader_id(), {node: (host, port) for node, host, port in controllers(core)})

    async def forward_own(self, message: Any) -> Any | None:
        """The broker's own request to the active controller (it creates __consumer_offsets as itself, as Kafka's
        group coordinator does); None when unanswered."""
        address = self._controller_address()
        if address is None or self.runtime is None:
            return None
        return await self.runtime.outbound.forward(address[0], address[1], message)

    async def forward(self, decoded: DecodedRequest) -> Any:
        """A client's controller request, sent on to the active controller in an Envelope carrying the client's
        principal (the controller authorizes the client, envelope.py); NOT_CONTROLLER when unreachable, the
        envelope's error when the controller refused the envelope itself."""
        api_key, message = int(decoded.api_key), decoded.message
        address = self._controller_address()
        answer = None
        if address is not None:
            answer = await self._bound().outbound.forward(
                address[0], address[1], wrap(decoded), forward_timeout_ms(message))
        response = None if answer is None else unwrap_answer(decoded, answer)
        if response is None:
            error = (envelope_error(answer) if answer is not None else None) or ErrorCode.NOT_CONTROLLER
            self.forward_failures += error == ErrorCode.NOT_CONTROLLER
            text = (f"broker {self.node_id} cannot reach the active controller" if error == ErrorCode.NOT_CONTROLLER
                    else f"the active controller refused the forwarded request: {error.name}")
            return to_request_version(error_reply(api_key, message, error, text), int(message.__version__))
        return response

    def _bound(self) -> NodeRuntime:
        """The runtime `bind` gave (a programmer error to need it before)."""
        assert self.runtime is not None, "bind(runtime) first"
        return self.runtime

    def _now(self) -> int:
        assert self.runtime is not None
        return self.runtime.clock()
