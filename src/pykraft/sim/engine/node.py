"""SimNode: one simulated process. It owns a RaftCore and executes its effects the way the real runtime must:

- its effects go through the runner the real node uses (raft/effect_runner.py): the node supplies a simulated
  durability lane (sim/engine/durability.py: atomic quorum-state writes, log flushes after a drawn latency) and is the
  sink: `Send` and `Respond` go to the network once the durable writes issued before them completed,
  `CommitBatches`/`LoadSnapshot`/`LeaderChanged` to the state machine at once, which snapshots itself every K
  offsets through the node's trigger (raft/snapshot_trigger.py). When a flush completes, `on_log_flushed` is fed;
- ApiVersions probes are answered by the runtime (the core only sends them), with the node's kraft.version range.

Node faults: kill (crash: unflushed data lost, maybe a torn tail), graceful shutdown (core.shutdown, then stop
once ShutdownComplete comes out), pause (inputs and timer firings wait in an inbox; the clock keeps running),
restart (a new core over the same disk), wipe (disk replacement: new directory id). A read that hits a corrupted
batch halts the node (FAILED) until its disk is replaced.
"""

from __future__ import annotations

import enum
import random
from collections import deque
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar

from kio.schema.api_versions.v4.request import ApiVersionsRequest

from pykraft.protocol.errors import ErrorCode
from pykraft.raft import reconfig_messages as rm
from pykraft.raft.client import RaftCore
from pykraft.raft.config import LocalReplica, QuorumConfig
from pykraft.raft.effect_runner import EffectRunner, Outbox
from pykraft.raft.effects import CommitBatches, LeaderChanged, LoadSnapshot, Ready, Respond, Send, ShutdownComplete
from pykraft.raft.log import InvalidSnapshotIdError, SnapshotId
from pykraft.raft.snapshot_trigger import NO_BYTE_LIMIT, SnapshotTrigger, write_snapshot
from pykraft.raft.states import NEVER
from pykraft.raft.voter_set import Endpoint, SupportedVersionRange
from pykraft.sim.engine.disk import SimDisk, StorageCorruptionError
from pykraft.sim.engine.durability import SimLane
from pykraft.sim.engine.scheduler import NodeClock
from pykraft.sim.engine.statemachine import SequenceMachine
from pykraft.sim.engine.wire import (
    AdminRequest, AdminResponse, ClientRequest, ConnectionRefused, RaftRequest, RaftResponse, RequestRef, Resign,
    endpoints_of, node_of_port,
)
from pykraft.sim.engine.writes import PendingWrites

if TYPE_CHECKING:
    from collections.abc import Callable

    from pykraft.sim.engine.network import Envelope
    from pykraft.sim.engine.world import World

CLUSTER_ID = "sim-cluster"
SHUTDOWN_TIMEOUT_MS = 5000


class Status(enum.Enum):
    UP = "up"
    DOWN = "down"
    PAUSED = "paused"
    FAILED = "failed"  # halted on a storage corruption; only a disk replacement brings it back


class SimNode:
    # Whether the node's raft replica may vote or stand (LocalReplica.can_become_voter): a broker-only process
    # never may, as the real node's `is_controller` (node/config/node_config.py).
    CAN_BECOME_VOTER: ClassVar[bool] = True

    def __init__(self, world: World, node_id: int, disk: SimDisk, config: QuorumConfig,
                 bootstrap: tuple[Endpoint, ...], clock: NodeClock) -> None:
        self.world = world
        self.node_id = node_id
        self.disk = disk
        self.config = config
        self.bootstrap = bootstrap
        self.clock = clock
        self.status = Status.DOWN
        self.core: RaftCore | None = None
        self.machine = SequenceMachine()
        self.writes = PendingWrites(self)
        self._new_runner()
        self.inbox: deque[tuple[str, Any]] = deque()  # what arrived while paused
        self.wakeup_ms: int | None = None  # global time of the scheduled poll
        self.starts = 0
        self.rng = world.stream(f"node-{node_id}")
        self.snapshots_taken = 0
        self.snapshot_trigger = SnapshotTrigger(NO_BYTE_LIMIT, 0, 0, world.params.snapshot_every)

    # ---- lifecycle -----------------------------------------------------------------------------------------
    @property
    def incarnation(self) -> int:
        return self.world.network.incarnation(self.node_id)

    def now(self) -> int:
        return self.clock.local(self.world.scheduler.now_ms)

    def start(self) -> None:
        assert self.status in (Status.DOWN, Status.FAILED)
        self.starts += 1
        self.world.network.bump(self.node_id)
        local = LocalReplica(node_id=self.node_id, directory_id=self.disk.directory_id,
                             endpoints=endpoints_of(self.node_id), supported_kraft=SupportedVersionRange(0, 1),
                             cluster_id=CLUSTER_ID, bootstrap_servers=self.bootstrap,
                             can_become_voter=self.CAN_BECOME_VOTER)
        core_rng = random.Random(self.rng.getrandbits(64))
        self.core = RaftCore(local, self.config, self.disk.log, core_rng)
        self.machine = self.new_machine()
        self.snapshot_trigger = SnapshotTrigger(NO_BYTE_LIMIT, 0, self.now(), self.world.params.snapshot_every)
        self.writes = PendingWrites(self)
        self._new_runner()
        self.inbox.clear()
        self.wakeup_ms = None
        self.status = Status.UP
        self._input(lambda core: core.initialize(self.disk.election, self.now()))
        if self.core is not None:
            # `initialize` only restores state; the first poll (discovery fetch of an observer, a sole voter's
            # election) is the runtime's to make, as its event loop does right after start-up.
            self._input(lambda core: core.poll(self.now()))

    def new_machine(self) -> Any:
        """The state machine of a fresh start (a subclass hosting a controller or a broker brings its own)."""
        return SequenceMachine()

    def kill(self, torn_probability: float = 0.0) -> None:
        if self.status is Status.DOWN:
            return
        self._stop(Status.DOWN)
        self.disk.crash(self.rng, torn_probability)

    def _stop(self, status: Status) -> None:
        self.writes.abandon()
        self.world.network.bump(self.node_id)
        self.core = None
        self._new_runner()  # what the old process held in memory (unsent messages, a flush in flight) is gone
        self.inbox.clear()
        self.wakeup_ms = None
        self.status = status

    def shutdown(self) -> None:
        if self.status is Status.UP:
            self._input(lambda core: core.shutdown(self.now(), SHUTDOWN_TIMEOUT_MS))

    def pause(self) -> None:
        if self.status is Status.UP:
            self.status = Status.PAUSED

    def resume(self) -> None:
        if self.status is not Status.PAUSED:
            return
        self.status = Status.UP
        while self.inbox and self.status is Status.UP:
            kind, item = self.inbox.popleft()
            if kind == "message":
                self._handle_message(item)
            else:
                self._flush_done()
        if self.status is Status.UP:
            self._input(lambda core: core.poll(self.now()))

    def wipe(self, *, auto_join: bool) -> None:
        """Disk replacement: the node must be down; it comes back with an empty disk and a new directory id."""
        assert self.status in (Status.DOWN, Status.FAILED)
        self.disk.wipe(self.world.new_directory_id())
        self.world.checker.on_data_loss(self)
        # A replaced voter's disk rejoins through auto-join (KIP-853 disk failure recovery); a node the operator
        # took out of the quorum comes back as an observer (faults.meant_to_vote).
        self.config = replace(self.config, auto_join=auto_join)

    def is_up(self) -> bool:
        return self.status is Status.UP or self.status is Status.PAUSED

    # ---- inputs --------------------------------------------------------------------------------------------
    def _input(self, call: Any) -> None:
        core = self.core
        assert core is not None
        try:
            ready = call(core)
        except StorageCorruptionError as error:
            self.world.checker.on_storage_fault(self, str(error))
            self._stop(Status.FAILED)
            return
        self._run(ready)

    def deliver(self, envelope: Envelope) -> tuple[int, str, str] | None:
        """Network delivery callback (requests and responses alike)."""
        if not self.world.network.admit(envelope):
            return None
        if self.status is Status.PAUSED:
            self.inbox.append(("message", envelope))
            return self.node_id, "queued", envelope.label
        if self.status is not Status.UP:
            if self.status is Status.DOWN and isinstance(envelope.payload, RaftRequest):
                # no process listens: the sender's connection is refused (network.send draws its delay)
                self.world.send(self.node_id, envelope.src, ConnectionRefused(self.node_id), "ConnectionRefused")
            return None
        self._handle_message(envelope)
        return self.node_id, "recv", f"{envelope.label} from {envelope.src}"

    def _handle_message(self, envelope: Envelope) -> None:
        # Keyed by exact type: the payloads are frozen dataclasses nobody subclasses; anything else is dropped.
        handler = self.PAYLOAD_HANDLERS.get(type(envelope.payload))
        if handler is not None:
            handler(self, envelope)

    def _on_raft_response(self, envelope: Envelope) -> None:
        payload, now = envelope.payload, self.now()
        self._input(lambda core: core.handle_response(payload.addressed_as, payload.correlation_id,
                                                      payload.response, now))

    def _on_raft_request(self, envelope: Envelope) -> None:
        payload, now = envelope.payload, self.now()
        ref = RequestRef(envelope.src, envelope.src_incarnation, payload.correlation_id, payload.addressed_as)
        if isinstance(payload.request, ApiVersionsRequest):
            answer = rm.api_versions_response(ErrorCode.NONE, SupportedVersionRange(0, 1))
            self._respond(ref, answer)
        else:
            self._input(lambda core: core.handle_request(ref, payload.request, now))

    def _on_connection_refused(self, envelope: Envelope) -> None:
        payload, now = envelope.payload, self.now()
        self._input(lambda core: core.on_peer_unreachable(payload.node_id, now))

    def _on_client_request(self, envelope: Envelope) -> None:
        self.writes.on_client_request(envelope, envelope.payload)

    def _on_admin_request(self, envelope: Envelope) -> None:
        payload, now = envelope.payload, self.now()
        ref = RequestRef(envelope.src, envelope.src_incarnation, payload.op_id, self.node_id, admin=True)
        if isinstance(payload.request, Resign):
            self._input(lambda core: core.resign(now))
            self._respond(ref, None)
        else:
            self._input(lambda core: core.handle_request(ref, payload.request, now))

    # payload type -> how this node takes it in; the hosts (sim/hosts/) extend it with their own payloads
    PAYLOAD_HANDLERS: ClassVar[dict[type, Callable[[Any, Envelope], None]]] = {  # Any: a subclass's own self
        RaftResponse: _on_raft_response,
        RaftRequest: _on_raft_request,
        ConnectionRefused: _on_connection_refused,
        ClientRequest: _on_client_request,
        AdminRequest: _on_admin_request,
    }

    def on_poll(self, incarnation: int, when: int) -> tuple[int, str, str] | None:
        if incarnation != self.incarnation or when != self.wakeup_ms:
            return None  # superseded by an earlier wake-up, or the node restarted
        self.wakeup_ms = None
        if self.status is Status.PAUSED:
            self.inbox.append(("poll", None))
            return None
        if self.status is not Status.UP:
            return None
        self._input(lambda core: core.poll(self.now()))
        return self.node_id, "poll", self._role()

    def append(self, values: list[bytes]) -> tuple[int, int] | None:
        """Leader append from the workload: (offset, epoch), or None when this node cannot append now."""
        core = self.core
        if self.status is not Status.UP or core is None or core.leader_state() is None \
                or core.shutdown_deadline_ms is not None:
            return None
        epoch = core.quorum.epoch
        offset, ready = core.append(values, self.now())
        self._run(ready)
        return offset, epoch

    def _role(self) -> str:
        core = self.core
        return "-" if core is None else f"{core.quorum.role.value}@{core.quorum.epoch}"

    # ---- effects: the one runner (raft/effect_runner.py) over the simulated lane --------------------------------
    def _new_runner(self) -> None:
        self.outbox = Outbox()
        self.lane = SimLane(self, self.outbox)
        self.runner = EffectRunner(self.lane, self.outbox, self)

    def _run(self, ready: Ready) -> None:
        self.runner.run(ready)
        if self.core is not None and ready.wakeup_ms < NEVER:
            self._schedule_poll(self.clock.to_global(ready.wakeup_ms))

    def _schedule_poll(self, when: int) -> None:
        scheduler = self.world.scheduler
        when = max(when, scheduler.now_ms + 1)  # a deadline due now was just handled by this input
        if self.wakeup_ms is None or when < self.wakeup_ms or self.wakeup_ms <= scheduler.now_ms:
            self.wakeup_ms = when
            scheduler.at(when, self.on_poll, self.incarnation, when)

    def on_flush_event(self, incarnation: int) -> tuple[int, str, str] | None:
        if incarnation != self.incarnation or not self.lane.flushing:
            return None
        if self.status is Status.PAUSED:
            self.inbox.append(("flush", None))
            return self.node_id, "flush-queued", ""
        self._flush_done()
        return self.node_id, "flushed", str(self.disk.log.flushed_end_offset())

    def _flush_done(self) -> None:
        self.lane.finish_round()  # releases the messages that waited for it
        if self.core is not None:
            end = self.disk.log.flushed_end_offset()
            self._input(lambda core: core.on_log_flushed(end, self.now()))

    # ---- EffectSink: what the runner hands over (nothing once the process stopped within the same output) ------
    def transmit(self, send: Send) -> None:
        if self.core is not None:
            self._send(send)

    def respond(self, respond: Respond) -> None:
        if self.core is not None:
            self._respond(respond.ref, respond.response)

    def commit(self, effect: CommitBatches) -> None:
        if self.core is not None:
            self._commit(effect)

    def load_snapshot(self, effect: LoadSnapshot) -> None:
        if self.core is not None:
            self._load_snapshot(effect.snapshot_id)

    def leader_changed(self, effect: LeaderChanged) -> None:
        if self.core is not None:
            self._leader_changed(effect)

    def shutdown_complete(self, effect: ShutdownComplete) -> None:
        if self.core is not None:
            self.lane.flush_everything()  # a clean stop leaves everything on disk and sends what waited for it
            self._stop(Status.DOWN)

    def _send(self, send: Send) -> None:
        destination = send.destination
        target = destination.node_id if destination.node_id >= 0 else node_of_port(destination.port)
        if target is None or target not in self.world.nodes:
            return  # nobody listens there; the request times out in the core
        payload = RaftRequest(send.correlation_id, destination.node_id, send.request)
        self.world.send(self.node_id, target, payload, type(send.request).__name__)

    def _respond(self, ref: Any, response: Any) -> None:
        if not isinstance(ref, RequestRef):
            return
        if ref.admin:
            payload: Any = AdminResponse(ref.correlation_id, response)
        else:
            payload = RaftResponse(ref.correlation_id, ref.addressed_as, response)
        label = type(response).__name__
        self.world.send(self.node_id, ref.src, payload, label, dst_incarnation=ref.src_incarnation)

    # ---- state machine ---------------------------------------------------------------------------------------
    def _commit(self, effect: CommitBatches) -> None:
        if effect.base_offset < self.machine.next_offset:
            self.world.checker.violation("ListenerOrder", self,
                                         f"batches from {effect.base_offset} after {self.machine.next_offset}")
        applied, batches = self.machine.apply(effect.records)
        self.world.checker.on_commit(self, applied, batches)
        self.writes.on_commit(applied)
        self.snapshot_trigger.on_commit(effect.records)
        self._maybe_snapshot()

    def _maybe_snapshot(self) -> None:
        """The node's trigger (raft/snapshot_trigger.py) with the simulator's setting: every `snapshot_every`
        committed offsets."""
        core = self.core
        applied = None if core is None else self.snapshot_trigger.next_snapshot(self.now())
        if applied is None:
            return
        snapshot_id = SnapshotId(applied.end_offset, applied.epoch)
        try:
            writer = write_snapshot(core, applied, self.now(), self.machine.snapshot_values())
        except InvalidSnapshotIdError:
            return  # e.g. the listener is ahead of a restarted node's known HWM: the next trigger tries again
        if writer is None:
            return
        self.snapshots_taken += 1
        self.world.checker.on_snapshot_taken(self, snapshot_id, self.machine.digest())
        if self.rng.random() < self.world.params.clean_probability:
            self.disk.log.delete_before_snapshot(snapshot_id)

    def _load_snapshot(self, snapshot_id: SnapshotId) -> None:
        core = self.core
        assert core is not None
        if self.machine.leader_epoch is not None and self.machine.leader_epoch == core.quorum.epoch:
            self.world.checker.violation("LeaderNeverLoadSnapshot", self, f"loaded {snapshot_id} while leading")
        reader = core.log.read_snapshot(snapshot_id)
        if reader is None:
            self.world.checker.violation("SnapshotReadable", self, f"LoadSnapshot({snapshot_id}) has no snapshot")
            return
        self.machine.load(reader, snapshot_id.offset)
        self.snapshot_trigger.on_snapshot_loaded(snapshot_id, self.now())
        self.world.checker.on_snapshot_loaded(self, snapshot_id, self.machine.digest())

    def _leader_changed(self, effect: LeaderChanged) -> None:
        self.machine.leader_epoch = effect.epoch if effect.leader_id == self.node_id else None
        self.writes.on_leader_changed(effect)
        self.world.checker.on_leader_changed(self, effect)
