"""`NodeRuntime`: one process = one node. Storage, the raft core, the network and the state machine, wired.

Threading (reference §1.1, Kafka's single raft I/O thread): ONE asyncio task drives the core. Everything that
wants the core to do something (an inbound request, an answer to our request, a finished flush, a client append,
shutdown) appends a small function to `_inputs` and wakes the task; the task runs them one at a time, polls the
core when its wake-up time has come, and hands each `Ready` to the `EffectRunner`. The core is therefore never
re-entered, and reading its state from a request handler between inputs is safe (asyncio is cooperative).
One shortcut (`_run_inline`): an input that arrives while the task is parked with nothing queued runs at once, in
the caller, exactly as the task would run it next; waking the task first cost a loop turn (the task's step, its
timer re-armed) on each hop of a commit (the Produce, each Fetch, each Fetch answer). The task is re-woken when the input queued more inputs or
moved the core's wake-up time earlier, and a failure goes to the task to fail the node as before.
An input run on behalf of ONE request or peer response (`submit_request`, `core_request`, `_deliver`, appends) is
contained (handler_errors.py): its exception fails that request, and the task goes on with the next input.
Durable writes run in a worker thread (flusher.py); messages wait for them in the outbox (effects.py).

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
from collections import deque
from collections.abc import Callable, Hashable, Mapping
from typing import Any

from pykraft.net.commit_probe import PROBE
from pykraft.net.errors import NetError
from pykraft.net.server import FrameServer
from pykraft.protocol.apis import NODE_RUNTIME_APIS, ApiKey, ApiRegistry
from pykraft.protocol.errors import ErrorCode
from pykraft.raft.accumulator import RecordBatchTooLargeError
from pykraft.raft.client import NotLeaderError, RaftCore
from pykraft.raft.effects import CommitBatches, LeaderChanged, LoadSnapshot, Ready, Respond, ShutdownComplete
from pykraft.raft.states import Role

from pykraft.node.runtime.closing import Closer
from pykraft.node.runtime.cluster_ids import ClusterIdMismatchLog
from pykraft.node.runtime.disk import NodeStorage, open_node_storage
from pykraft.node.runtime.effects import EffectRunner, Outbox
from pykraft.node.runtime.flusher import DurabilityLane, RunBlocking, on_loop_after_answers
from pykraft.node.runtime.handler_errors import HandlerErrors, contained, fail_answer, recorder
from pykraft.node.runtime.inbound import ExtraHandler, InboundHandler, served_registry
from pykraft.node.runtime.metrics import NodeMetrics
from pykraft.node.runtime.quorum_log import QuorumTransitionLog
from pykraft.node.runtime.request_metrics import RequestStats
from pykraft.node.runtime.outbound import Outbound, probe_fetch_offset
from pykraft.node.config.preflight import check_listeners_bindable
from pykraft.node.runtime.snapshots import SnapshotPolicy
from pykraft.node.runtime.state_machine import CountingStateMachine, StateMachine
from pykraft.node.runtime.listening import NodeListeners
from pykraft.node.runtime.peers import client_tls, peer_pools
from pykraft.node.runtime.security import request_authorizer
from pykraft.node.runtime.trace import TraceWriter
from pykraft.node.runtime.client_apis import image_of as client_image
from pykraft.node.runtime.writes import CommitWaiters, WriteFailed, produce_enabled

_log = logging.getLogger("pykraft.node")

MIN_WAIT_S = 0.001
SHUTDOWN_TIMEOUT_MS = 5000  # Kafka's raft client is given 5 s to hand leadership over
Input = Callable[[int], Ready | None]


def release_read(log: Any, leader: Any, high_watermark: int | None, replayed: int | None = None) -> None:
    """The log keeps what was just appended in memory (disk.py) for its next readers. On a leader, its followers'
    fetches: what every other voter has fetched goes (one that lags or is gone leaves it to the cache's own
    bound, tail_cache.py). Elsewhere, the replay of committed records, which has read up to the high watermark, or
    only up to `replayed` (where it goes on from) while a follower's flush is under way: the core lists what became
    committed when that flush completes (RaftCore._follower_flush_due), and must not find it gone from memory."""
    if leader is None:
        if high_watermark is not None:
            log.release_cached_below(high_watermark if replayed is None else min(high_watermark, replayed))
        return
    ends = [p.end_offset for node_id, p in leader.voter_progress.items() if node_id != leader.local_key.id]
    if ends and None not in ends:
        log.release_cached_below(min(ends))


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


class NodeStoppedError(Exception):
    """The node stopped (or failed) while a request was waiting for the core."""


class NodeCloseError(Exception):
    """The node stopped, but flushing or closing its files failed (one line: what failed and why)."""


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
        self.produce_enabled = produce_enabled(config.raw)
        self.storage: NodeStorage | None = None
        self.core: RaftCore = None  # type: ignore[assignment]  # set by start()
        self.cluster_id = ""
        # A broker's client listeners are bound at start but serve only once the broker host says it caught up.
        self.listeners = NodeListeners(config, defer_broker_listeners=defer_broker_listeners)
        self.waiters = CommitWaiters()
        self._inputs: deque[Input] = deque()
        self._wake = asyncio.Event()
        self._wakeup_ms = 0
        self._pending: dict[Hashable, asyncio.Future[Any]] = {}  # the core's request refs
        self._next_ref = 0
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self._stop_started = False
        self._shutdown_timeout_ms = SHUTDOWN_TIMEOUT_MS  # what stop() gave the core to hand leadership over
        self._skip_handover = asyncio.Event()  # set by a second stop() during the graceful hand-over
        self._stopped = asyncio.Event()
        self.close_failure: NodeCloseError | None = None
        self._shutdown_complete = asyncio.Event()
        self._flush_input_queued = False
        self.failure: BaseException | None = None
        self.stale_wakeups = 0  # polls that left the core's wake-up time in the past (a core timer not cleared)
        self.poll_times = (0.0, 0.0)  # (idle, busy) seconds of the core task: Kafka's poll-idle-ratio
        self._busy_since = time.perf_counter()
        self.observers: list[Callable[[RaftCore, int], None]] = []
        self.handler_errors = HandlerErrors()  # requests and responses whose handling raised (contained)
        self.request_stats = RequestStats()  # Kafka's RequestMetrics, per API (request_metrics.py)
        self._probe_fetches: dict[int, tuple[int, int]] = {}  # with PROBE only: ref -> (fetch offset, replica)
        self._probe_hwm: int | None = None
        self._parked_until_ms: int | None = None  # while the core task waits: when its timer wakes it
        self._running_inline = False
        self._inline_failure: BaseException | None = None  # raised by the task, which fails the node
        self._inline_busy_s = 0.0  # seconds of inline inputs inside the task's waits (poll-idle-ratio)
        self._released_at_hwm: int | None = None  # the high watermark when the log's tail cache was last trimmed

    @property
    def stopping(self) -> bool:
        """Whether stop() has begun (hosts stop starting new work)."""
        return self._stopping or self._stop_started

    # ---- lifecycle -------------------------------------------------------------------------------------------
    async def start(self) -> None:
        """Open storage, start the core task and listen. Raises StorageError, NetError or OSError (port in use,
        TLS files) after releasing whatever it had opened. The TLS files and the listener ports are checked before
        the storage is opened: a refused start changes nothing in the data directory."""
        config = self.config
        self.listeners.load_tls()
        self._tls_client = client_tls(config)
        self._tls_broker = client_tls(config, config.inter_broker_listener_name) if config.is_broker else None
        check_listeners_bindable(config.served_listeners())
        self.storage = open_node_storage(config)
        try:
            await self._start()
        except BaseException:
            await self._abort_start()
            raise

    async def _abort_start(self) -> None:
        self._stopping = True
        self._wake.set()
        for part in (self._task, ):
            if part is not None:
                await asyncio.gather(part, return_exceptions=True)
        for server in self.servers:  # listeners bound before a later one failed
            await server.close()
        for closer in ("outbound", "lane"):
            if hasattr(self, closer):
                await getattr(self, closer).close()
        if hasattr(self, "trace"):
            self.trace.close()
        assert self.storage is not None
        self.storage.close()

    async def _start(self) -> None:
        config = self.config
        now = self.clock()
        storage = self.storage
        assert storage is not None
        report = storage.report
        _log.info("opened %s: %d segments, %d bytes validated, torn tail %s", config.metadata_log_dir,
                  report.segments, report.bytes_validated, report.torn_tail)
        self.cluster_id = storage.meta.cluster_id
        local = config.local_replica(storage.meta.directory_id, storage.meta.cluster_id)
        self.core = RaftCore(local, config.quorum, storage.log, random.Random(int.from_bytes(os.urandom(8), "big")))
        self.trace = TraceWriter(config.metadata_log_dir, config.node_id)
        self.trace.event(now, "recovered", segments=report.segments, bytes_validated=report.bytes_validated,
                         torn_tail=None if report.torn_tail is None else report.torn_tail.dropped_bytes,
                         rebuilt_indexes=list(report.rebuilt_indexes), removed_files=list(report.removed_files),
                         log_end_offset=storage.log.end_offset())
        self.observers.append(self.trace.observe)
        # Several transitions can happen inside one input (Resigned -> Unattached -> Prospective -> Candidate ->
        # Leader in one poll); the trace wants each. QuorumState calls its listeners on every epoch or role change.
        self.core.quorum.add_transition_listener(lambda: self.trace.observe_state(self.core, self.clock()))
        self.quorum_log = QuorumTransitionLog(self.core, config.node_id)
        self.core.quorum.add_transition_listener(lambda: self.quorum_log.observe(self.core))
        self.metrics = NodeMetrics(self)
        self.observers.append(self.metrics.observe)
        self.outbox = Outbox()
        self.lane = DurabilityLane(storage.log, storage.store, on_done=self.outbox.on_done,
                                   on_flushed=self._on_flushed, run_blocking=self._run_blocking,
                                   run_flush=on_loop_after_answers, sync_inline=self._follows)
        self.snapshots = SnapshotPolicy(config.max_record_bytes_between_snapshots, config.max_snapshot_interval_ms,
                                        now, on_snapshot=self._on_snapshot)
        self.cluster_ids = ClusterIdMismatchLog(self.cluster_id, lambda h, p, m: self.outbound.forward(h, p, m))
        pools = peer_pools(config, self._tls_client, self._tls_broker)  # the channels: peers.py
        self.outbound = Outbound(pools.raft, timeout_ms=config.quorum.request_timeout_ms,
                                 client_id=f"raft-client-{config.node_id}", deliver=self._deliver,
                                 on_answer=self.cluster_ids.check_answer, on_error=self.handler_errors.record,
                                 forward_pool=pools.forward, on_unreachable=self._peer_unreachable,
                                 broker_pool=pools.broker, coordinator_pool=pools.coordinator)
        self.runner = EffectRunner(self.lane, self.outbox, self)
        self.authorizer = request_authorizer(config, lambda: self.state_machine)
        self.inbound = InboundHandler(self, self.registry, self._extra, self._broker_registry, self.authorizer)
        self.lane.start()
        self._apply(self.core.initialize(storage.stored_election, now), now)
        self._say_if_log_names_a_broker_a_voter()
        self._task = asyncio.get_running_loop().create_task(self._loop(), name=f"pykraft-core-{config.node_id}")
        # Every listener is served by the same handler: in combined mode the controller host answers controller
        # requests and the broker's forwarding takes over when this node is not the active controller.
        await self.listeners.start(self.inbound, self._scram_credential)
        if config.metrics_port is not None:
            try:
                self.metrics.serve(config.metrics_port)
            except OSError as exc:
                raise NetError(f"cannot serve metrics on port {config.metrics_port} (pykraft.metrics.port): "
                               f"{(exc.strerror or str(exc)).lower()}") from None

    @property
    def servers(self) -> list[FrameServer]:
        return self.listeners.servers

    @property
    def address(self) -> tuple[str, int] | None:
        """The address of the first listener: the raft channel on a controller."""
        return self.listeners.address

    async def serve_broker_listeners(self) -> None:
        """Open the broker's client listeners (bound at start, refusing connections until now); once only."""
        await self.listeners.serve_broker_listeners(self.core.high_watermark)

    def _say_if_log_names_a_broker_a_voter(self) -> None:
        """A node without the controller role whose log names it a voter (a broker started on a controller's data,
        or a controller's id reused): it only observes (LocalReplica.can_become_voter), and the operator should know
        why the quorum may be short of that voter."""
        config = self.config
        if config.is_controller or config.node_id not in self.core.voters().ids():
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
        await self._stopped.wait()
        if self.failure is not None:
            raise self.failure
        if self.close_failure is not None:
            raise self.close_failure

    async def stop(self, graceful: bool = True, timeout_ms: int = SHUTDOWN_TIMEOUT_MS) -> None:
        """Resign gracefully (wait for ShutdownComplete or the timeout), then flush and close everything.

        A second call while the first waits for the hand-over ends that wait (a second signal must always stop the
        node); every call returns once the node is closed."""
        if self._stop_started:
            self._skip_handover.set()
            await self._stopped.wait()
            return
        self._stop_started = True
        self._shutdown_timeout_ms = timeout_ms
        if graceful and self._task is not None and not self._task.done():
            self._submit(lambda now: self.core.shutdown(now, timeout_ms))
            handed_over = asyncio.ensure_future(self._shutdown_complete.wait())
            skipped = asyncio.ensure_future(self._skip_handover.wait())
            done, _ = await asyncio.wait((handed_over, skipped), timeout=timeout_ms / 1000 + 1,
                                         return_when=asyncio.FIRST_COMPLETED)
            handed_over.cancel()
            skipped.cancel()
            if not done:
                _log.warning("graceful shutdown did not complete within %d ms", timeout_ms)
        self._stopping = True
        self._wake.set()
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)
        await self._close_all(graceful)

    async def _close_all(self, graceful: bool) -> None:
        """Close every part, each even if an earlier one failed (a vanished data directory fails the final flush),
        and always end in the stopped state: a node that cannot close its files must still stop. The first failure
        is kept in `close_failure`, which `run_until_stopped` raises."""
        for future in self._pending.values():
            if not future.done():
                future.set_result(None)
        self._pending.clear()
        self.waiters.fail_all(ErrorCode.NOT_LEADER_OR_FOLLOWER, "the node is stopping")
        closer = Closer()
        try:
            await closer.step("final flush", self.lane.drain())
            for server in self.servers:
                await closer.step("closing a listener", server.close())
            await closer.step("closing connections", self.outbound.close())
            await closer.step("closing the durability lane", self.lane.close())
            closer.call("closing metrics", self.metrics.close)
            if self.storage is not None:
                closer.call("final flush and close of the metadata log", self.storage.close)
            closer.call("closing the trace", self._close_trace, graceful)
        finally:
            if closer.problems and self.close_failure is None:
                self.close_failure = NodeCloseError(closer.problems[0])
            self._stopped.set()

    def _close_trace(self, graceful: bool) -> None:
        try:
            self.trace.flush_pending(self.core, self.clock())
            self.trace.event(self.clock(), "stopped", graceful=graceful)
        finally:
            self.trace.close()

    # ---- the core task ---------------------------------------------------------------------------------------
    def _submit(self, fn: Input) -> None:
        if (self._parked_until_ms is not None and not self._running_inline and not self._inputs
                and not self._stopping and self.lane.failure is None and self._inline_failure is None):
            self._run_inline(fn)
            return
        self._inputs.append(fn)
        self._wake.set()

    def _run_inline(self, fn: Input) -> None:
        """`fn` run now, as the parked core task would run it next (see the module docstring). Inputs submitted
        meanwhile (a flush completed inside an effect, a state machine's submit) are queued for the task."""
        started = time.perf_counter()
        self._running_inline = True
        try:
            now = self.clock()
            self._apply(fn(now), now)
            self._poll_if_due()
        except BaseException as exc:  # handed to the task, which fails the node with it
            self._inline_failure = exc
        finally:
            self._running_inline = False
            self._inline_busy_s += time.perf_counter() - started
        parked_until = self._parked_until_ms
        if (self._inputs or self._inline_failure is not None
                or (parked_until is not None and self._wakeup_ms < parked_until)):
            self._wake.set()  # to run them, to fail, or to re-arm its timer for the earlier wake-up

    def submit(self, fn: Input) -> None:
        """Run `fn(now_ms)` on the core task (the state machine's way in, e.g. the controller host); a Ready it
        returns is carried out like the core's own. Ignored once the node is stopping."""
        if not self._stopping:
            self._submit(fn)

    def submit_request(self, fn: Input, message: Any, answer: asyncio.Future[Any]) -> None:
        """`submit`, on behalf of ONE request (`message`) awaiting `answer`: an exception `fn` raises fails that
        answer (the inbound boundary answers UNKNOWN_SERVER_ERROR, logs and counts it), not the core task."""
        self.submit(contained(fn, fail_answer(answer, recorder(self.handler_errors, message, "request"))))

    async def _loop(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while not self._stopping:
                if self.lane.failure is not None:
                    raise self.lane.failure
                if self._inline_failure is not None:
                    raise self._inline_failure
                while self._inputs and not self._stopping:
                    now = self.clock()
                    self._apply(self._inputs.popleft()(now), now)
                    self._poll_if_due()
                if self._stopping:
                    break
                self._poll_if_due()
                self._wake.clear()
                if self._inputs:
                    continue
                # At least 1 ms: a wake-up time that stays in the past after a poll must not starve the event loop
                # (the network, the flusher's completions) - it only costs a poll per millisecond.
                delay = max(MIN_WAIT_S, (self._wakeup_ms - self.clock()) / 1000)
                if self._wakeup_ms <= self.clock():
                    self.stale_wakeups += 1
                timer = loop.call_later(delay, self._wake.set)
                waited = time.perf_counter()
                self._parked_until_ms = self.clock() + int(delay * 1000)
                try:
                    await self._wake.wait()
                finally:
                    self._parked_until_ms = None
                self._count_idle(waited)
                timer.cancel()
        except BaseException as exc:
            self.failure = exc
            _log.critical("the raft core task failed: %r", exc)
            if not isinstance(exc, asyncio.CancelledError):
                loop.create_task(self.stop(graceful=False))
            raise

    def _count_idle(self, waited_since: float) -> None:
        """poll-idle-ratio: seconds the core task waited for input, and the seconds it worked in between."""
        now = time.perf_counter()
        idle, busy = self.poll_times
        inline, self._inline_busy_s = self._inline_busy_s, 0.0
        self.poll_times = (idle + max(0.0, now - waited_since - inline),
                           busy + max(0.0, waited_since - self._busy_since) + inline)
        self._busy_since = now

    def _poll_if_due(self) -> bool:
        now = self.clock()
        if now < self._wakeup_ms:
            return False
        self._apply(self.core.poll(now), now)
        return True

    def _apply(self, ready: Ready | None, now: int) -> None:
        if ready is not None:
            self._wakeup_ms = ready.wakeup_ms
            self.runner.run(ready)
        core = self.core
        leader = core.leader_state()
        if PROBE is not None and core.high_watermark != self._probe_hwm:
            self._probe_hwm = core.high_watermark
            PROBE.stamp("hwm", -1 if core.high_watermark is None else core.high_watermark)
        self.waiters.check(core.high_watermark, leader.epoch if leader is not None else None)
        if core.high_watermark != self._released_at_hwm:
            self._released_at_hwm = core.high_watermark
            release_read(core.log, leader, core.high_watermark, core.listener.next_offset)
        self.snapshots.maybe_snapshot(core, self.state_machine, now)
        self.snapshots.maybe_clean(core.log, now)
        for observe in self.observers:
            observe(core, now)

    # ---- inputs from the outside -----------------------------------------------------------------------------
    async def core_request(self, request: Any) -> Any | None:
        """Hand a raft request to the core; the answer, or None if the node stopped first."""
        if self._stopping:
            return None
        self._next_ref += 1
        ref = self._next_ref
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending[ref] = future
        if PROBE is not None:
            self._probe_fetch_in(ref, request)
        self._submit(contained(lambda now: self.core.handle_request(ref, request, now),
                               fail_answer(future, recorder(self.handler_errors, request, "request"))))
        try:
            response = await future
        finally:
            self._pending.pop(ref, None)
        if response is not None:
            self.cluster_ids.check_refusal(request, response)
        return response

    def _deliver(self, source_id: int, correlation_id: int, response: Any) -> None:
        if not self._stopping:
            handle = self.core.handle_response if PROBE is None else self._probe_handle_response
            self._submit(contained(lambda now: handle(source_id, correlation_id, response, now),
                                   recorder(self.handler_errors, response, f"response from node {source_id}")))

    def _probe_handle_response(self, source_id: int, correlation_id: int, response: Any, now: int) -> Ready:
        assert PROBE is not None
        PROBE.stamp("resp_run", self.core.log.end_offset(), source_id)
        ready = self.core.handle_response(source_id, correlation_id, response, now)
        PROBE.stamp("resp_done", self.core.log.end_offset(), source_id)
        return ready

    def _probe_fetch_in(self, ref: int, request: Any) -> None:
        """PROBE: a Fetch reached the leader (its fetch offset, from which replica)."""
        assert PROBE is not None
        if int(request.__api_key__) == ApiKey.FETCH and (offset := probe_fetch_offset(request)) >= 0:
            fetch = (offset, int(request.replica_state.replica_id))
            self._probe_fetches[ref] = fetch
            PROBE.stamp("fetch_in", *fetch)

    def _peer_unreachable(self, node_id: int) -> None:
        """A raft request's connection to `node_id` was refused or reset: the core may start a pre-vote at once."""
        if not self._stopping:
            self._submit(lambda now: self.core.on_peer_unreachable(node_id, now))

    def _follows(self) -> bool:
        """Whether this node follows a leader now: its log flushes run on the loop (flusher.py says why)."""
        return self.core.quorum.role is Role.FOLLOWER

    def _on_flushed(self) -> None:
        if self._flush_input_queued:
            return  # one pending notification reads the newest flushed offset when it runs
        self._flush_input_queued = True

        def flushed(now: int) -> Ready:
            self._flush_input_queued = False
            return self.core.on_log_flushed(self.core.log.flushed_end_offset(), now)

        self._submit(flushed)

    async def append_committed(self, values: list[bytes]) -> int:
        """Append on the leader and wait until committed; the base offset. Raises WriteFailed."""
        last = await self._append_and_wait(lambda now: self.core.append(values, now))
        return last - len(values) + 1

    async def append_encoded_committed(self, batches: list[tuple[memoryview, int]]) -> int:
        """`append_committed` for (batch, record count) pairs a client encoded, appended as they are."""
        if PROBE is not None:
            PROBE.stamp("produce_in")
        last = await self._append_and_wait(lambda now: self.core.append_encoded(batches, now))
        if PROBE is not None:
            PROBE.stamp("produce_done", last + 1)
        return last - sum(count for _, count in batches) + 1

    async def _append_and_wait(self, append_on_core: Callable[[int], tuple[int, Ready]]) -> int:
        """Run `append_on_core(now)` on the core task, then wait until the high watermark passes the last offset it
        returns (which this returns). Raises WriteFailed."""
        if self._stopping:
            raise WriteFailed(ErrorCode.NOT_LEADER_OR_FOLLOWER, "the node is stopping")
        accepted: asyncio.Future[asyncio.Future[None]] = asyncio.get_running_loop().create_future()
        last_offset = -1

        def append(now: int) -> Ready | None:
            nonlocal last_offset
            try:
                last_offset, ready = append_on_core(now)
            except NotLeaderError as exc:
                accepted.set_exception(WriteFailed(ErrorCode.NOT_LEADER_OR_FOLLOWER, str(exc)))
                return None
            except RecordBatchTooLargeError as exc:
                accepted.set_exception(WriteFailed(ErrorCode.MESSAGE_TOO_LARGE, str(exc)))
                return None
            accepted.set_result(self.waiters.add(last_offset, self.core.quorum.epoch))
            if PROBE is not None:
                PROBE.stamp("appended", last_offset + 1)
            return ready

        self._submit(contained(append, fail_answer(accepted)))  # a bug fails the writer's caller (Produce)
        await (await accepted)  # append-records and commit-latency: NodeMetrics counts every leader write
        return last_offset

    # ---- EffectSink: what the EffectRunner hands over ----------------------------------------------------------
    def transmit(self, send: Any) -> None:
        self.outbound.transmit(send)

    def respond(self, respond: Respond) -> None:
        if PROBE is not None and respond.ref in self._probe_fetches:
            PROBE.stamp("fetch_answer", *self._probe_fetches.pop(respond.ref))
        future = self._pending.pop(respond.ref, None)
        if future is not None and not future.done():
            future.set_result(respond.response)

    def commit(self, effect: CommitBatches) -> None:
        self.state_machine.apply(memoryview(effect.records), effect.base_offset, effect.last_offset)
        self.snapshots.on_commit(effect)

    def load_snapshot(self, effect: LoadSnapshot) -> None:
        reader = self.core.log.read_snapshot(effect.snapshot_id)
        assert reader is not None, f"the core asked to load a missing snapshot {effect.snapshot_id}"
        self.state_machine.load_snapshot(reader)
        self.snapshots.on_snapshot_loaded(effect.snapshot_id, self.clock())

    def leader_changed(self, effect: LeaderChanged) -> None:
        self.state_machine.leader_changed(effect.leader_id, effect.epoch)

    def shutdown_complete(self, effect: ShutdownComplete) -> None:
        self.quorum_log.shutdown_complete(self.core, effect.graceful, self._shutdown_timeout_ms)
        self._shutdown_complete.set()

    def _on_snapshot(self, snapshot_id: Any, size: int) -> None:
        self.trace.event(self.clock(), "snapshot_taken", offset=snapshot_id.offset, epoch=snapshot_id.epoch,
                         bytes=size)
