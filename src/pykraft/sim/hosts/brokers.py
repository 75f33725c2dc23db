"""BrokerNode: a simulated broker. Its metadata log replica is a raft observer (the SimNode it extends), replayed
into a `MetadataCache`; a `BrokerLifecycle` registers and heartbeats, an `IsrManager` shrinks and expands the ISR
of the partitions it leads.

Controller requests are ControllerRequest messages on the simulated network to the node the broker believes is
the active controller: the raft leader its observer knows. FindController (NOT_CONTROLLER, a timeout) forgets
that belief; the next request asks the observer again. With no leader known the request fails at once
(`handle_failure`: the component backs off).

Each start is a new incarnation (a new incarnation id drawn from the run's stream); after a clean controlled
shutdown the next start passes the previous broker epoch.

The data plane is not simulated, only its effect on the ISR (`DataPlane`): a partition leader's log end offset
grows with time (one offset per `OFFSET_EVERY_MS`); a follower replica is caught up with it while its broker is
up (not paused) and the network links between the two brokers are not cut; otherwise it keeps the offset and
the time of its last catch-up, so it falls out of sync after replica.lag.time.max.ms and may rejoin once it is
back. Its Fetch carries the broker epoch its lifecycle held at that catch-up (KIP-903). Progress is reported to
the leader's IsrManager every `PROGRESS_EVERY_MS`.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from pykraft.broker.actions import BrokerState, FindController, Ready, SendToController, ShutdownComplete, StateChanged
from pykraft.broker.isr_manager import IsrManager, IsrManagerConfig
from pykraft.broker.isr_rules import FollowerProgress, LeaderProgress
from pykraft.broker.lifecycle import BrokerLifecycle, LifecycleConfig
from pykraft.broker.metadata_cache import MetadataCache, TopicPartition
from pykraft.controller.cluster import Endpoint, FeatureRange
from pykraft.sim.hosts.metadata_machine import MetadataMachine
from pykraft.sim.hosts.metadata_wire import Component, ControllerRequest, ControllerResponse
from pykraft.sim.engine.node import SimNode, Status

OFFSET_EVERY_MS = 10
PROGRESS_EVERY_MS = 100
PAUSED_RETRY_MS = 10


@dataclass(frozen=True, slots=True)
class BrokerSettings:
    cluster_id: str
    features: tuple[tuple[str, FeatureRange], ...]
    heartbeat_interval_ms: int = 500
    session_timeout_ms: int = 4000
    replica_lag_time_max_ms: int = 2000
    request_timeout_ms: int = 3000


@dataclass(frozen=True, slots=True)
class _Fetched:
    log_end_offset: int
    at_ms: int  # global time
    broker_epoch: int


class DataPlane:
    """The toy replication model shared by the brokers of a run (see the module docstring)."""

    def __init__(self, world: Any) -> None:
        self.world = world
        self.fetched: dict[tuple[TopicPartition, int], _Fetched] = {}

    def leader_end(self, now_ms: int) -> int:
        return now_ms // OFFSET_EVERY_MS + 1

    def connected(self, a: int, b: int) -> bool:
        cut = self.world.network.cut
        return (a, b) not in cut and (b, a) not in cut

    def progress(self, leader: BrokerNode) -> dict[TopicPartition, LeaderProgress]:
        now = self.world.scheduler.now_ms
        end = self.leader_end(now)
        out: dict[TopicPartition, LeaderProgress] = {}
        for tp, partition in leader.cache.partitions_led_by(leader.node_id).items():
            followers = []
            for replica in partition.replicas:
                if replica == leader.node_id:
                    continue
                node = self.world.nodes.get(replica)
                if isinstance(node, BrokerNode) and node.status is Status.UP and node.lifecycle is not None \
                        and self.connected(leader.node_id, replica):
                    self.fetched[(tp, replica)] = _Fetched(end, now, node.lifecycle.broker_epoch)
                known = self.fetched.get((tp, replica))
                if known is not None:
                    followers.append(FollowerProgress(replica, known.log_end_offset, leader.clock.local(known.at_ms),
                                                      known.broker_epoch))
            out[tp] = LeaderProgress(partition.leader_epoch, end, 0, tuple(followers))
        return out


class BrokerNode(SimNode):
    def __init__(self, *args: Any, settings: BrokerSettings, data_plane: DataPlane, **kwargs: Any) -> None:
        self.settings = settings
        self.data_plane = data_plane
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
        checker = getattr(self.world, "metadata_checker", None)
        return MetadataMachine(self.cache, lambda records, _last: self._metadata_applied() if records else None,
                               lambda records, last: self._metadata_applied(),
                               None if checker is None else lambda m, offset: checker.on_image(self, m, offset))

    def start(self) -> None:
        super().start()
        if self.status is Status.UP and self.lifecycle is not None:
            self._collect(Component.LIFECYCLE, self.lifecycle.start(self.now()))
            assert self.isr is not None
            self._collect(Component.ISR, self.isr.sync_metadata(self.now()))
            self.world.scheduler.after(PROGRESS_EVERY_MS, self._progress_event, self.incarnation)

    def _stop(self, status: Status) -> None:
        self._count_isr()
        super()._stop(status)
        self.lifecycle = None
        self.isr = None

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
        self._stop(Status.DOWN)
        self.previous_epoch = epoch if clean else -1
        self.clean_stops += clean
        return self.node_id, "broker-stop", f"clean={clean} epoch={epoch}"

    # ---- metadata ------------------------------------------------------------------------------------------------
    def _metadata_applied(self) -> None:
        if self.lifecycle is None or self.isr is None:
            return
        self.lifecycle.note_metadata_offset(self.cache.last_applied_offset)
        if self.lifecycle.started:
            self._collect(Component.ISR, self.isr.sync_metadata(self.now()))

    # ---- actions and timers ----------------------------------------------------------------------------------
    def _component(self, component: Component) -> Any:
        return self.lifecycle if component is Component.LIFECYCLE else self.isr

    def _collect(self, component: Component, ready: Ready) -> None:
        for action in ready.actions:
            handler = self.ACTION_HANDLERS.get(type(action))
            if handler is not None:
                handler(self, component, action)
        if ready.wakeup_ms is not None:
            self._wake_generation[component] += 1
            when = max(self.clock.to_global(ready.wakeup_ms), self.world.scheduler.now_ms + 1)
            self.world.scheduler.at(when, self._wake_event, self.incarnation, component,
                                    self._wake_generation[component])

    def _forget_controller(self, component: Component, action: FindController) -> None:
        self.controller_hint = None

    def _on_state_changed(self, component: Component, action: StateChanged) -> None:
        self.states.append(action.new)
        if action.new is BrokerState.RECOVERY and self.lifecycle is not None:
            # Nothing of its own to recover (no partition logs): ready to be unfenced at once.
            self._collect(Component.LIFECYCLE, self.lifecycle.set_ready_to_unfence(self.now()))

    def _on_shutdown_complete(self, component: Component, action: ShutdownComplete) -> None:
        self.world.scheduler.after(0, self._finish_shutdown, self.incarnation, action.clean)

    def _send_to_controller(self, component: Component, send: SendToController) -> None:
        if self.controller_hint is None and self.core is not None:
            self.controller_hint = self.core.quorum.leader_id()
        target = self.controller_hint
        if target is None:
            self.world.scheduler.after(1, self._failure_event, self.incarnation, component, send.request_id)
            return
        payload = ControllerRequest(send.request_id, component, send.api_key, send.request)
        self.world.send(self.node_id, target, payload, type(send.request).__name__)

    # a broker part's action type -> what the simulated broker does with it (the actions are exact frozen types)
    ACTION_HANDLERS: ClassVar[dict[type, Callable[[BrokerNode, Component, Any], None]]] = {
        SendToController: _send_to_controller,
        FindController: _forget_controller,
        StateChanged: _on_state_changed,
        ShutdownComplete: _on_shutdown_complete,
    }

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
        self._collect(component, self._component(component).poll(self.now()))
        return None  # timers are not traced: what they send is

    def _failure_event(self, incarnation: int, component: Component, request_id: int) -> Any:
        if not self._live(incarnation, self._failure_event, component, request_id):
            return None
        self._collect(component, self._component(component).handle_failure(request_id, self.now()))
        return self.node_id, "no-controller", component.value

    def _progress_event(self, incarnation: int) -> Any:
        if not self._live(incarnation, self._progress_event):
            return None
        self.world.scheduler.after(PROGRESS_EVERY_MS, self._progress_event, incarnation)
        assert self.isr is not None
        progress = self.data_plane.progress(self)
        if progress:
            self._collect(Component.ISR, self.isr.update_progress(progress, self.now()))
        return None

    def _on_controller_response(self, envelope: Any) -> None:
        payload = envelope.payload
        if self.lifecycle is None:
            return
        target = self._component(payload.component)
        self._collect(payload.component, target.handle_response(payload.request_id, payload.response, self.now()))

    PAYLOAD_HANDLERS: ClassVar[dict[type, Callable[[Any, Any], None]]] = {
        **SimNode.PAYLOAD_HANDLERS, ControllerResponse: _on_controller_response,
    }
