"""`NodeRuntime`: one process = one node. The assembly of its parts, and the one object the hosts hold.

The parts, each in its own module: the core task that drives the pure raft core (core_task.py), the raft RPCs
between the core and its peers (raft_rpcs.py), the leader's appends and their commit waiters (leader_appends.py),
the core's effects (effects.py: the runner over the durability lane, flusher.py, and the sink), the listeners and
the inbound handler (listening.py, inbound.py), the outbound channels (outbound.py, peers.py) and the end of the
node's life (closing.py). `start` opens storage and assembles them; the methods below are the ways in that the
hosts (node/roles, node/hosts), the request handlers and the tests use.

Threading: ONE asyncio task drives the core (core_task.py); durable writes run in a worker thread or on the loop
(flusher.py); messages wait for them in the outbox (effects.py). An input run on behalf of ONE request or peer
response (`submit_request`, `core_request`, answers from peers, appends) is contained (handler_errors.py): its
exception fails that request, and the task goes on with the next input.

Time: `now_ms` is wall-clock (time.time()), because the core stamps records with it and Kafka's tools read those
timestamps as wall-clock. A wall-clock jump moves every deadline of the core at once: a jump forward makes timers
fire early (a follower may start an election, a leader may resign on check-quorum), a jump backward makes them fire
late (by up to the size of the jump). Neither breaks safety: elections are safe at any time; only liveness suffers.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import time
from collections.abc import Callable, Mapping
from typing import Any

from pykraft.net.errors import NetError
from pykraft.net.server import FrameServer
from pykraft.protocol.apis import NODE_RUNTIME_APIS, ApiRegistry
from pykraft.raft.client import RaftCore
from pykraft.raft.effects import ShutdownComplete

from pykraft.node.config.preflight import check_listeners_bindable
from pykraft.node.runtime.client_apis import image_of as client_image
from pykraft.node.runtime.closing import SHUTDOWN_TIMEOUT_MS, NodeCloseError, NodeShutdown, close_trace
from pykraft.node.runtime.cluster_ids import ClusterIdMismatchLog
from pykraft.node.runtime.core_task import CoreTask, Input
from pykraft.node.runtime.disk import NodeStorage, open_node_storage
from pykraft.node.runtime.effects import FlushNotice, NodeEffects, Observer, Outbox, follows
from pykraft.node.runtime.flusher import DurabilityLane, RunBlocking, on_loop_after_answers
from pykraft.node.runtime.handler_errors import HandlerErrors, contained, fail_answer, recorder
from pykraft.node.runtime.inbound import ExtraHandler, InboundHandler, served_registry
from pykraft.node.runtime.leader_appends import CommitWaiters, LeaderAppends
from pykraft.node.runtime.listening import NodeListeners
from pykraft.node.runtime.metrics import NodeMetrics
from pykraft.node.runtime.outbound import Outbound
from pykraft.node.runtime.peers import client_tls, peer_pools
from pykraft.node.runtime.quorum_log import QuorumTransitionLog
from pykraft.node.runtime.raft_rpcs import RaftRpcs
from pykraft.node.runtime.request_metrics import RequestStats
from pykraft.node.runtime.security import request_authorizer
from pykraft.node.runtime.snapshots import SnapshotPolicy
from pykraft.node.runtime.state_machine import CountingStateMachine, StateMachine
from pykraft.node.runtime.trace import TraceWriter

__all__ = ["NodeCloseError", "NodeRuntime", "wall_clock_ms"]

_log = logging.getLogger("pykraft.node")


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


class NodeRuntime:
    def __init__(self, config: Any, *, state_machine: StateMachine | None = None,
                 registry: ApiRegistry = NODE_RUNTIME_APIS, extra_handlers: Mapping[int, ExtraHandler] | None = None,
                 run_blocking: RunBlocking | None = None, clock: Callable[[], int] = wall_clock_ms,
                 broker_registry: ApiRegistry | None = None, defer_broker_listeners: bool = False) -> None:
        self.config = config
        self.state_machine: StateMachine = state_machine or CountingStateMachine()
        # The hosts the state machine consists of, set by their `bind` (None for a plain state machine).
        self.controller_host: Any = None
        self.broker_host: Any = None
        self.registry = served_registry(registry, extra_handlers)
        # The broker listeners' APIs when they differ from the controller listeners' (a combined node: inbound.py).
        self._broker_registry = None if broker_registry is None else served_registry(broker_registry, extra_handlers)
        self._extra = extra_handlers
        self._run_blocking = run_blocking
        self.clock = clock
        self.storage: NodeStorage | None = None
        self._core: RaftCore | None = None  # set by start()
        # A broker's client listeners are bound at start but serve only once the broker host says it caught up.
        self.listeners = NodeListeners(config, defer_broker_listeners=defer_broker_listeners)
        self.task = CoreTask(clock, poll=lambda now: self.core.poll(now),
                             carry_out=lambda ready, now: self.effects.carry_out(ready, now),
                             lane_failure=lambda: self.lane.failure,
                             on_failed=lambda: self.stop(graceful=False))
        self.appends = LeaderAppends(lambda: self.core, self.task.put, lambda: self.task.stopping)
        self.shutdown = NodeShutdown()
        self.observers: list[Observer] = []
        self.handler_errors = HandlerErrors()  # requests and responses whose handling raised (contained)
        self.request_stats = RequestStats()  # Kafka's RequestMetrics, per API (request_metrics.py)

    # ---- what the parts say, read by hosts, handlers, metrics and tests ----------------------------------------
    @property
    def core(self) -> RaftCore:
        """The raft core (the node has started: `started_core` for code that may run before)."""
        core = self._core
        assert core is not None, "the node has not started"
        return core

    @property
    def started_core(self) -> RaftCore | None:
        """The raft core, or None before start()."""
        return self._core

    @property
    def cluster_id(self) -> str:
        """The cluster id of the node's storage ("" before start)."""
        return "" if self.storage is None else self.storage.meta.cluster_id

    @property
    def stopping(self) -> bool:
        """Whether stop() has begun (hosts stop starting new work)."""
        return self.task.stopping or self.shutdown.started

    @property
    def failure(self) -> BaseException | None:
        """What made the core task fail (the node then stops)."""
        return self.task.failure

    @property
    def waiters(self) -> CommitWaiters:
        """The leader's commit waiters (leader_appends.py): a host waits on them for its own writes."""
        return self.appends.waiters

    @property
    def servers(self) -> list[FrameServer]:
        return self.listeners.servers

    @property
    def address(self) -> tuple[str, int] | None:
        """The address of the first listener: the raft channel on a controller."""
        return self.listeners.address

    # ---- lifecycle -------------------------------------------------------------------------------------------
    async def start(self) -> None:
        """Open storage, start the core task and listen. Raises StorageError, NetError or OSError (port in use,
        TLS files) after releasing whatever it had opened. The TLS files and the listener ports are checked before
        the storage is opened: a refused start changes nothing in the data directory."""
        config = self.config
        self.listeners.load_tls()
        tls = (client_tls(config), client_tls(config, config.inter_broker_listener_name) if config.is_broker else None)
        check_listeners_bindable(config.served_listeners())
        self.storage = open_node_storage(config)
        try:
            await self._start(self.storage, *tls)
        except BaseException:
            await self._abort_start(self.storage)
            raise

    async def _abort_start(self, storage: NodeStorage) -> None:
        await self.task.stop()
        for server in self.servers:  # listeners bound before a later one failed
            await server.close()
        for closer in ("outbound", "lane"):
            if hasattr(self, closer):
                await getattr(self, closer).close()
        if hasattr(self, "trace"):
            self.trace.close()
        storage.close()

    async def _start(self, storage: NodeStorage, tls_controller: Any, tls_broker: Any) -> None:
        config, now, report = self.config, self.clock(), storage.report
        _log.info("opened %s: %d segments, %d bytes validated, torn tail %s", config.metadata_log_dir,
                  report.segments, report.bytes_validated, report.torn_tail)
        local = config.local_replica(storage.meta.directory_id, storage.meta.cluster_id)
        core = self._core = RaftCore(local, config.quorum, storage.log,
                                     random.Random(int.from_bytes(os.urandom(8), "big")))
        self._observe_transitions(core, storage, now)
        self.metrics = NodeMetrics(self)
        self.observers.append(self.metrics.observe)
        outbox = Outbox()
        self.lane = DurabilityLane(storage.log, storage.store, on_done=outbox.on_done,
                                   on_flushed=FlushNotice(core, self.task.put), run_blocking=self._run_blocking,
                                   run_flush=on_loop_after_answers, sync_inline=lambda: follows(core))
        self.snapshots = SnapshotPolicy(config.max_record_bytes_between_snapshots, config.max_snapshot_interval_ms,
                                        now, on_snapshot=self._on_snapshot)
        self.cluster_ids = ClusterIdMismatchLog(self.cluster_id, lambda h, p, m: self.outbound.forward(h, p, m))
        self.rpcs = RaftRpcs(core, self.task.put, lambda: self.task.stopping, self.handler_errors,
                             self.cluster_ids.check_refusal)
        pools = peer_pools(config, tls_controller, tls_broker)  # the channels: peers.py
        self.outbound = Outbound(pools.raft, timeout_ms=config.quorum.request_timeout_ms,
                                 client_id=f"raft-client-{config.node_id}", deliver=self.rpcs.deliver,
                                 on_answer=self.cluster_ids.check_answer, on_error=self.handler_errors.record,
                                 forward_pool=pools.forward, on_unreachable=self.rpcs.peer_unreachable,
                                 broker_pool=pools.broker, coordinator_pool=pools.coordinator)
        self.effects = NodeEffects(core, self.lane, outbox, outbound=self.outbound, rpcs=self.rpcs,
                                   appends=self.appends, state_machine=self.state_machine, snapshots=self.snapshots,
                                   clock=self.clock, observers=self.observers,
                                   on_shutdown_complete=self._shutdown_complete)
        self.authorizer = request_authorizer(config, lambda: self.state_machine)
        self.inbound = InboundHandler(self, self.registry, self._extra, self._broker_registry, self.authorizer)
        self.lane.start()
        self.task.apply(core.initialize(storage.stored_election, now), now)
        self._say_if_log_names_a_broker_a_voter(core)
        self.task.start(f"pykraft-core-{config.node_id}")
        # Every listener is served by the same handler: in combined mode the controller host answers controller
        # requests and the broker's forwarding takes over when this node is not the active controller.
        await self.listeners.start(self.inbound, self._scram_credential)
        if config.metrics_port is not None:
            try:
                self.metrics.serve(config.metrics_port)
            except OSError as exc:
                raise NetError(f"cannot serve metrics on port {config.metrics_port} (pykraft.metrics.port): "
                               f"{(exc.strerror or str(exc)).lower()}") from None

    def _observe_transitions(self, core: RaftCore, storage: NodeStorage, now: int) -> None:
        """The trace (its "recovered" line first) and the quorum log, told of every epoch or role change."""
        config, report = self.config, storage.report
        self.trace = TraceWriter(config.metadata_log_dir, config.node_id)
        self.trace.event(now, "recovered", segments=report.segments, bytes_validated=report.bytes_validated,
                         torn_tail=None if report.torn_tail is None else report.torn_tail.dropped_bytes,
                         rebuilt_indexes=list(report.rebuilt_indexes), removed_files=list(report.removed_files),
                         log_end_offset=storage.log.end_offset())
        self.observers.append(self.trace.observe)
        # Several transitions can happen inside one input (Resigned -> Unattached -> Prospective -> Candidate ->
        # Leader in one poll); the trace wants each. QuorumState calls its listeners on every epoch or role change.
        core.quorum.add_transition_listener(lambda: self.trace.observe_state(core, self.clock()))
        self.quorum_log = QuorumTransitionLog(core, config.node_id)
        core.quorum.add_transition_listener(lambda: self.quorum_log.observe(core))

    async def serve_broker_listeners(self) -> None:
        """Open the broker's client listeners (bound at start, refusing connections until now); once only."""
        await self.listeners.serve_broker_listeners(self.core.high_watermark)

    def _say_if_log_names_a_broker_a_voter(self, core: RaftCore) -> None:
        """A node without the controller role whose log names it a voter (a broker started on a controller's data,
        or a controller's id reused): it only observes (LocalReplica.can_become_voter), and the operator should know
        why the quorum may be short of that voter."""
        config = self.config
        if config.is_controller or config.node_id not in core.voters().ids():
            return
        _log.warning("node %d: the metadata log names it a voter of the quorum, but process.roles=%s has no "
                     "controller role: it will not vote or lead, only observe the quorum as a broker",
                     config.node_id, ",".join(sorted(config.process_roles)))

    def _scram_credential(self, user: str, mechanism: int) -> Any:
        """A SCRAM credential of the node's metadata image (what its SASL/SCRAM listeners check passwords against)."""
        image = client_image(self.state_machine)
        return None if image is None else image.scram.credential(user, mechanism)

    def acls_loaded(self) -> None:
        """The authorizer's initial load completed: open the listeners that waited for it (once)."""
        self.listeners.acls_loaded()

    async def run_until_stopped(self) -> None:
        """Wait until the node stopped; raise what made it fail, else what made closing it fail (NodeCloseError)."""
        await self.shutdown.stopped.wait()
        if self.failure is not None:
            raise self.failure
        if self.shutdown.close_failure is not None:
            raise self.shutdown.close_failure

    async def stop(self, graceful: bool = True, timeout_ms: int = SHUTDOWN_TIMEOUT_MS) -> None:
        """Resign gracefully (wait for ShutdownComplete or the timeout), then flush and close everything
        (closing.py). A second call while the first waits for the hand-over ends that wait (a second signal must
        always stop the node); every call returns once the node is closed."""
        await self.shutdown.stop(graceful, timeout_ms, self.task, lambda: self.core, self._close_all)

    async def _close_all(self, graceful: bool) -> None:
        storage = self.storage
        await self.shutdown.close(rpcs=self.rpcs, appends=self.appends, lane=self.lane, servers=self.servers,
                                  outbound=self.outbound, close_metrics=self.metrics.close,
                                  close_storage=None if storage is None else storage.close,
                                  close_trace=lambda: close_trace(self.trace, self.core, self.clock, graceful))

    def _shutdown_complete(self, effect: ShutdownComplete) -> None:
        self.quorum_log.shutdown_complete(self.core, effect.graceful, self.shutdown.timeout_ms)
        self.shutdown.handed_over.set()

    def _on_snapshot(self, snapshot_id: Any, size: int) -> None:
        self.trace.event(self.clock(), "snapshot_taken", offset=snapshot_id.offset, epoch=snapshot_id.epoch,
                         bytes=size)

    # ---- the ways in: inputs to the core task (a leader's writes go through `appends`: leader_appends.py) ----------
    def submit(self, fn: Input) -> None:
        """Run `fn(now_ms)` on the core task (the state machine's way in, e.g. the controller host); a Ready it
        returns is carried out like the core's own. Ignored once the node is stopping."""
        if not self.task.stopping:
            self.task.put(fn)

    def submit_request(self, fn: Input, message: Any, answer: asyncio.Future[Any]) -> None:
        """`submit`, on behalf of ONE request (`message`) awaiting `answer`: an exception `fn` raises fails that
        answer (the inbound boundary answers UNKNOWN_SERVER_ERROR, logs and counts it), not the core task."""
        self.submit(contained(fn, fail_answer(answer, recorder(self.handler_errors, message, "request"))))

    async def core_request(self, request: Any) -> Any | None:
        """Hand a raft request to the core; the answer, or None if the node stopped first (raft_rpcs.py)."""
        return await self.rpcs.request(request)
