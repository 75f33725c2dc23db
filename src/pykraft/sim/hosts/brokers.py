"""BrokerNode: a simulated broker. Its metadata log replica is a raft observer (the SimNode it extends), replayed
into a `MetadataCache`; a `BrokerLifecycle` registers and heartbeats, an `IsrManager` shrinks and expands the ISR
of the partitions it leads; their actions, timers and answers go through the same `BrokerComponents` runner as the
node's (broker/host.py), this class being its sink.

Controller requests are ControllerRequest messages on the simulated network to the active controller: the raft
leader its observer knows when the request goes out (`controller_for`, as the node routes them). With no leader
known the request fails at once (`handle_failure`: the component backs off).

Each start is a new incarnation (a new incarnation id drawn from the run's stream); after a clean controlled
shutdown the next start passes the previous broker epoch.

The data plane is the real one (data_plane.py: the partition host the node runs, over the broker's simulated
partition logs, partition_logs.py, which live on its disk across restarts): it opens once the broker caught up
with the metadata log (RECOVERY), before the broker asks to be unfenced, as the node's does; the ISR manager gets
its follower progress from real follower fetches and its high watermark goes back into the logs.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from pykraft.broker.actions import BrokerState, Ready, SendToController, ShutdownComplete, StateChanged
from pykraft.broker.host import ISR, LIFECYCLE, BrokerComponents, controller_for
from pykraft.broker.isr_manager import IsrManager, IsrManagerConfig
from pykraft.broker.lifecycle import BrokerLifecycle, LifecycleConfig
from pykraft.broker.metadata_cache import MetadataCache
from pykraft.controller.cluster import Endpoint, FeatureRange
from pykraft.protocol.errors import ErrorCode
from pykraft.sim.hosts.data_plane import SimDataPlane
from pykraft.sim.hosts.data_wire import DeleteRecordsRequest, FetchRequest, FetchResponse, ProduceRequest
from pykraft.sim.hosts.group_plane import SimGroups
from pykraft.sim.hosts.group_wire import GroupRequest, GroupResponse
from pykraft.sim.hosts.metadata_machine import MetadataMachine
from pykraft.sim.hosts.partition_logs import SimPartitionLogs
from pykraft.sim.hosts.txn_markers import MarkerRequest
from pykraft.sim.hosts.metadata_wire import Component, ControllerRequest, ControllerResponse
from pykraft.raft.effects import ShutdownComplete as RaftShutdownComplete
from pykraft.sim.engine.node import SimNode, Status

PAUSED_RETRY_MS = 10


@dataclass(frozen=True, slots=True)
class BrokerSettings:
    cluster_id: str
    features: tuple[tuple[str, FeatureRange], ...]
    heartbeat_interval_ms: int = 500
    session_timeout_ms: int = 4000
    replica_lag_time_max_ms: int = 2000
    request_timeout_ms: int = 3000
    min_insync_replicas: int = 1


class BrokerNode(SimNode):
    CAN_BECOME_VOTER = False

    def __init__(self, *args: Any, settings: BrokerSettings, **kwargs: Any) -> None:
        self.settings = settings
        self.partition_logs = SimPartitionLogs()  # on the broker's disk: they outlive its processes
        self.data: SimDataPlane | None = None
        self.groups: SimGroups | None = None
        self.components: BrokerComponents | None = None
        self.truncations = 0  # of partition logs by the replica fetchers, over every incarnation
        self.coordinator_loads = 0  # group coordinator loads, over every incarnation
        self.cache = MetadataCache()
        self.lifecycle: BrokerLifecycle | None = None
        self.isr: IsrManager | None = None
        self.controller_hint: int | None = None
        self.previous_epoch = -1
        self.incarnations: list[uuid.UUID] = []
        self.clean_stops = 0
        self.isr_shrinks = self.isr_expands = 0  # over every incarnation
        self.states: list[BrokerState] = []
        self._wake_generation = {Component.LIFECYCLE: 0, Component.ISR: 0}
        super().__init__(*args, **kwargs)

    # ---- process lifecycle -------------------------------------------------------------------------------------
    def new_machine(self) -> MetadataMachine:
        self.cache = MetadataCache()
        rng = self.world.stream(f"broker-{self.node_id}-{self.starts}")
        incarnation = uuid.UUID(int=rng.getrandbits(128), version=4)
        self.incarnations.append(incarnation)
        s = self.settings
        self.lifecycle = BrokerLifecycle(LifecycleConfig(
            node_id=self.node_id, cluster_id=s.cluster_id, incarnation_id=incarnation,
            listeners=(Endpoint("PLAINTEXT", "sim", 9092 + self.node_id, 0),), features=dict(s.features),
            log_dirs=(uuid.UUID(int=(7 << 96) | self.node_id),), previous_broker_epoch=self.previous_epoch,
            heartbeat_interval_ms=s.heartbeat_interval_ms, session_timeout_ms=s.session_timeout_ms,
            initial_registration_timeout_ms=10 * 60_000, request_timeout_ms=s.request_timeout_ms))
        self.isr = IsrManager(IsrManagerConfig(self.node_id, replica_lag_time_max_ms=s.replica_lag_time_max_ms,
                                               request_timeout_ms=s.request_timeout_ms), self.cache)
        self.controller_hint = None
        self.states = []
        self.data = SimDataPlane(self, self.partition_logs, s.min_insync_replicas)
        self.groups = SimGroups(self)
        self.components = BrokerComponents({LIFECYCLE: self.lifecycle, ISR: self.isr}, self)
        checker = getattr(self.world, "metadata_checker", None)
        return MetadataMachine(self.cache, lambda records, _last: self._metadata_applied() if records else None,
                               lambda records, last: self._metadata_applied(),
                               None if checker is None else lambda m, offset: checker.on_image(self, m, offset))

    def start(self) -> None:
        super().start()
        if self.status is Status.UP and self.lifecycle is not None:
            self._collect(Component.LIFECYCLE, self.lifecycle.start(self.now()))

    def _stop(self, status: Status, clean: bool = False) -> None:
        self._count_isr()
        if self.groups is not None:
            self.coordinator_loads += self.groups.loads
            self.groups.close()
            self.groups = None
        if self.data is not None:
            self.truncations += self.data.truncations
            self.data.close(clean)
            self.data = None
        super()._stop(status)
        self.lifecycle = None
        self.isr = None

    def kill(self, torn_probability: float = 0.0) -> None:
        if self.status is Status.DOWN:
            return
        super().kill(torn_probability)
        self.partition_logs.crash(self.rng)

    def wipe(self, *, auto_join: bool) -> None:
        super().wipe(auto_join=auto_join)
        self.partition_logs.wipe()
        data_checker = getattr(self.world, "data_checker", None)
        if data_checker is not None:
            data_checker.on_disk_lost(self.node_id)

    def _count_isr(self) -> None:
        if self.isr is not None:
            self.isr_shrinks += self.isr.metrics.isr_shrinks
            self.isr_expands += self.isr.metrics.isr_expands
            self.isr = None

    def isr_counts(self) -> tuple[int, int]:
        live = (0, 0) if self.isr is None else (self.isr.metrics.isr_shrinks, self.isr.metrics.isr_expands)
        return self.isr_shrinks + live[0], self.isr_expands + live[1]

    def controlled_shutdown(self) -> str:
        """Graceful shutdown: controlled shutdown first; the process stops when the lifecycle says it is done."""
        if self.status is not Status.UP or self.lifecycle is None:
            return "not running"
        self._collect(Component.LIFECYCLE, self.lifecycle.begin_controlled_shutdown(self.now()))
        return "controlled shutdown requested"

    def _finish_shutdown(self, incarnation: int, clean: bool) -> Any:
        if incarnation != self.incarnation or self.status is Status.DOWN:
            return None
        epoch = -1 if self.lifecycle is None else self.lifecycle.broker_epoch
        self.disk.log.flush()  # a clean stop leaves everything on disk
        self.partition_logs.close()
        self._stop(Status.DOWN, clean=True)
        self.previous_epoch = epoch if clean else -1
        self.clean_stops += clean
        return self.node_id, "broker-stop", f"clean={clean} epoch={epoch}"

    # ---- metadata ------------------------------------------------------------------------------------------------
    def _metadata_applied(self) -> None:
        if self.lifecycle is None or self.isr is None:
            return
        self.lifecycle.note_metadata_offset(self.cache.last_applied_offset)
        if self.lifecycle.started and self.data is not None and self.data.open:
            # The ISR manager leads nothing before the partition logs are open (caught up with the metadata, which
            # then holds this incarnation's own fenced registration): a restarted broker would otherwise act on
            # its previous incarnation's leaderships from a stale image (the shrink-to-self found by
            # data_broker_faults seed 1).
            now = self.now()
            self._collect(Component.ISR, self.isr.sync_metadata(now))
            self.data.sync_metadata()
            progress = self.data.host.progress(self.isr.led_partitions(), now)
            self._collect(Component.ISR, self.isr.update_progress(progress, now))
            if self.groups is not None:
                self.groups.sync_leadership()

    def report_progress(self, progress: Any) -> None:
        """The partition host's follower progress (an append, a follower fetch): the ISR manager decides, and
        the partitions reported adopt its high watermark themselves (PartitionCore._after_leader_change)."""
        if self.isr is not None:
            self._collect(Component.ISR, self.isr.update_progress(progress, self.now()), refresh=False)

    # ---- actions and timers ----------------------------------------------------------------------------------
    def _component(self, component: Component) -> Any:
        return self.lifecycle if component is Component.LIFECYCLE else self.isr

    def _collect(self, component: Component, ready: Ready, refresh: bool = True) -> None:
        """The shared action runner (broker/host.py, as the node's); after the ISR manager ran, the partitions
        adopt its high watermark unless the caller refreshes those it changed (`refresh=False`)."""
        assert self.components is not None
        self.components.run(component.value, ready)
        if component is Component.ISR and refresh and self.data is not None:
            self.data.isr_changed()

    # ---- BrokerSink --------------------------------------------------------------------------------------------
    def send_to_controller(self, component: str, send: SendToController) -> None:
        self._send_to_controller(Component(component), send)

    def state_changed(self, change: StateChanged) -> None:
        self._on_state_changed(change)

    def shutdown_complete(self, done: ShutdownComplete | RaftShutdownComplete) -> None:
        """Both the broker's lifecycle (a controlled shutdown done) and the raft core (SimNode's effect) end so."""
        if isinstance(done, RaftShutdownComplete):
            super().shutdown_complete(done)
            return
        self.world.scheduler.after(0, self._finish_shutdown, self.incarnation, done.clean)

    def isr_change(self, change: Any) -> None:
        """Counted by the ISR manager's metrics; nothing to log in the simulator."""

    def find_controller(self, component: str) -> None:
        self.controller_hint = None

    def schedule(self, component: str, wakeup_ms: int | None) -> None:
        key = Component(component)
        self._wake_generation[key] += 1  # an earlier timer of the component is stale from now on
        if wakeup_ms is None:
            return
        when = max(self.clock.to_global(wakeup_ms), self.world.scheduler.now_ms + 1)
        self.world.scheduler.at(when, self._wake_event, self.incarnation, key, self._wake_generation[key])

    def _on_state_changed(self, action: StateChanged) -> None:
        self.states.append(action.new)
        if action.new is BrokerState.RECOVERY and self.lifecycle is not None and self.data is not None:
            # Caught up with the metadata log: open the partition logs, then ask to be unfenced (as the node does).
            self.data.start()
            self._metadata_applied()  # the ISR manager first, then the partitions' roles
            self._collect(Component.LIFECYCLE, self.lifecycle.set_ready_to_unfence(self.now()))

    def _send_to_controller(self, component: Component, send: SendToController) -> None:
        # the raft leader the observer knows now (broker/host.py's routing, as the node's)
        leader = None if self.core is None else self.core.quorum.leader_id()
        target = controller_for(leader, {n: n for n in self.world.nodes})
        self.controller_hint = target
        if target is None:
            self.world.scheduler.after(1, self._failure_event, self.incarnation, component, send.request_id)
            return
        payload = ControllerRequest(send.request_id, component, send.api_key, send.request)
        self.world.send(self.node_id, target, payload, type(send.request).__name__)

    def _live(self, incarnation: int, retry: Any, *args: Any) -> bool:
        if incarnation != self.incarnation or self.status not in (Status.UP, Status.PAUSED) or self.lifecycle is None:
            return False
        if self.status is Status.PAUSED:
            self.world.scheduler.after(PAUSED_RETRY_MS, retry, incarnation, *args)
            return False
        return True

    def _wake_event(self, incarnation: int, component: Component, generation: int) -> Any:
        if generation != self._wake_generation[component] or not self._live(incarnation, self._wake_event,
                                                                            component, generation):
            return None
        assert self.components is not None
        self.components.wakeups[component.value] = None  # fired
        self._collect(component, self._component(component).poll(self.now()))
        return None  # timers are not traced: what they send is

    def _failure_event(self, incarnation: int, component: Component, request_id: int) -> Any:
        if not self._live(incarnation, self._failure_event, component, request_id):
            return None
        self._collect(component, self._component(component).handle_failure(request_id, self.now()))
        return self.node_id, "no-controller", component.value

    def later(self, delay_ms: int, callback: Callable[..., Any], *args: Any) -> None:
        """A timer of this process: dropped if the process is gone, late while it is paused."""
        self.world.scheduler.after(delay_ms, self._later_event, self.incarnation, callback, args)

    def _later_event(self, incarnation: int, callback: Callable[..., Any], args: tuple[Any, ...]) -> Any:
        if not self._live(incarnation, self._later_event, callback, args):
            return None
        callback(*args)
        return None

    # ---- the data plane's messages -------------------------------------------------------------------------------
    def _reply(self, envelope: Any, payload: Any) -> None:
        self.world.send(self.node_id, envelope.src, payload, type(payload).__name__,
                        dst_incarnation=envelope.src_incarnation)

    def _on_fetch(self, envelope: Any) -> None:
        if self.data is not None:
            self._reply(envelope, self.data.on_fetch(envelope.payload))

    def _on_fetch_response(self, envelope: Any) -> None:
        if self.data is not None:
            self.data.on_fetch_response(envelope.src, envelope.payload)

    def _on_produce(self, envelope: Any) -> None:
        if self.data is not None:
            incarnation = self.incarnation
            self.data.on_produce(envelope.payload, lambda answer: self._reply_if(incarnation, envelope, answer))

    def _on_delete_records(self, envelope: Any) -> None:
        if self.data is not None:
            incarnation = self.incarnation
            self.data.on_delete_records(envelope.payload,
                                        lambda answer: self._reply_if(incarnation, envelope, answer))

    def _on_marker(self, envelope: Any) -> None:
        if self.data is not None:
            incarnation = self.incarnation
            self.data.on_marker(envelope.payload, lambda answer: self._reply_if(incarnation, envelope, answer))

    def _on_group_request(self, envelope: Any) -> None:
        if self.groups is None or self.data is None or not self.data.open:
            self._reply(envelope, GroupResponse(envelope.payload.request_id, ErrorCode.NOT_COORDINATOR))
            return
        incarnation = self.incarnation
        self.groups.handle(envelope.payload, lambda answer: self._reply_if(incarnation, envelope, answer))

    def _reply_if(self, incarnation: int, envelope: Any, payload: Any) -> None:
        if incarnation == self.incarnation and self.status in (Status.UP, Status.PAUSED):
            self._reply(envelope, payload)

    def _on_controller_response(self, envelope: Any) -> None:
        payload = envelope.payload
        if self.lifecycle is None:
            return
        target = self._component(payload.component)
        self._collect(payload.component, target.handle_response(payload.request_id, payload.response, self.now()))

    PAYLOAD_HANDLERS: ClassVar[dict[type, Callable[[Any, Any], None]]] = {
        **SimNode.PAYLOAD_HANDLERS, ControllerResponse: _on_controller_response, FetchRequest: _on_fetch,
        FetchResponse: _on_fetch_response, ProduceRequest: _on_produce, DeleteRecordsRequest: _on_delete_records,
        GroupRequest: _on_group_request, MarkerRequest: _on_marker,
    }
