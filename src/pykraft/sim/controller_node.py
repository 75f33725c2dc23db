"""ControllerNode: a simulated voter that hosts a QuorumController the way node/controller_host.py does.

- Every replica replays the committed records into its active-controller object (`controller`); the machine
  (metadata_machine.py) keeps a second, never-activated image fed only committed records for the invariants.
- The raft leader's replica becomes the active controller when the core reports its leadership (the listener
  has replayed everything before its epoch): an `activate` event right after, as the runtime's `submit`.
- A controller request (a ControllerRequest message) runs as ONE input: `handle` with the offset the next record
  gets, append the records as one batch (`core.append` with the active epoch), replay them at once, remember the
  range as pending. The answer is sent once the high watermark passes the records (a result without records
  waits for this controller's earlier writes); on leadership loss the caller gets NOT_CONTROLLER.
- After every input: a leader that lost its epoch (resigned, stepped down, shutting down) deactivates, and if it
  held uncommitted replays the controller is rebuilt from the latest snapshot plus the committed log.
- The committed replay skips offsets replayed already (pending ranges).
- Ticks (session fencing, NoOpRecord, preferred-leader balancing) run as scheduler events at
  `next_wakeup_ms()`, rescheduled after every request and tick.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from pykraft.controller.controller import (ControllerConfig, NotActiveControllerError, QuorumController,
                                          UnsupportedControllerApiError)
from pykraft.controller.log_replay import ReplayedAhead, load_committed
from pykraft.controller.result import ControllerResult
from pykraft.node.controller_host import error_reply
from pykraft.protocol.errors import ErrorCode
from pykraft.raft.client import NotLeaderError
from pykraft.records.metadata.frame import encode_metadata_record
from pykraft.sim.metadata_machine import Decoded, MetadataMachine
from pykraft.sim.metadata_wire import ControllerRequest, ControllerResponse, ReplyTo
from pykraft.sim.node import SimNode, Status

PAUSED_RETRY_MS = 10  # a paused process runs its timers late: look again after this


@dataclass(frozen=True, slots=True)
class _Waiter:
    last_offset: int
    epoch: int
    reply: ReplyTo
    api_key: int
    request: Any
    response: Any  # the response, or a callable of the first offset
    first_offset: int


class ControllerNode(SimNode):
    def __init__(self, *args: Any, controller_config: ControllerConfig, **kwargs: Any) -> None:
        self.controller_config = controller_config
        self.controller = QuorumController(controller_config, random.Random(0))
        self._reset_host()
        self.rebuilds = 0
        self.activations = 0
        self.not_controller_answers = 0
        self.written: dict[str, int] = {}  # record type -> how many this node appended as active controller
        super().__init__(*args, **kwargs)

    def _reset_host(self) -> None:
        self.committed_offset = -1
        self.active_epoch: int | None = None
        self.pending = ReplayedAhead()
        self.last_written = -1
        self.waiters: list[_Waiter] = []
        self.tick_generation = getattr(self, "tick_generation", 0) + 1

    def new_machine(self) -> MetadataMachine:
        rng = random.Random(self.world.stream(f"controller-{self.node_id}-{self.starts}").getrandbits(64))
        self.controller = QuorumController(self.controller_config, rng)
        self._reset_host()
        image = QuorumController(self.controller_config, random.Random(0))
        checker = getattr(self.world, "metadata_checker", None)
        return MetadataMachine(image, self._replay_committed, self._snapshot_loaded,
                               None if checker is None else lambda m, offset: checker.on_image(self, m, offset))

    @property
    def committed_image(self) -> QuorumController:
        return self.machine.image

    # ---- committed replay ------------------------------------------------------------------------------------
    def _replay_committed(self, records: Decoded) -> None:
        for offset, record in records:
            if not self.pending.covers(offset):
                self.controller.replay(record, offset)
        self.committed_offset = max(self.committed_offset, records[-1][0])
        if self.core is not None:
            self.controller.note_kraft_version(self.core.kraft_version())

    def _snapshot_loaded(self, records: list[Any], last_contained: int) -> None:
        self.pending.clear()
        self.controller.load_snapshot(records, last_contained)
        self.committed_offset = last_contained

    def _commit(self, effect: Any) -> None:
        super()._commit(effect)
        checker = getattr(self.world, "metadata_checker", None)
        # Everything this controller wrote has committed (then, in a correct host, nothing is pending): its image
        # must be the committed one.
        if checker is not None and self.last_written <= self.committed_offset:
            checker.on_controller_settled(self)

    # ---- every input -----------------------------------------------------------------------------------------
    def _run(self, ready: Any) -> None:
        super()._run(ready)
        self._after_input()

    def _after_input(self) -> None:
        core = self.core
        if self.controller.active:
            leader = None if core is None else core.leader_state()
            if leader is None or leader.epoch != self.active_epoch or core.shutdown_deadline_ms is not None:
                self._resign()
        if self.waiters:
            self._complete_waiters()

    def _complete_waiters(self) -> None:
        core = self.core
        hwm = None if core is None else core.high_watermark
        leader = None if core is None else core.leader_state()
        keep: list[_Waiter] = []
        for waiter in self.waiters:
            if leader is None or leader.epoch != waiter.epoch or self.active_epoch != waiter.epoch:
                self._refuse(waiter.reply, waiter.api_key, waiter.request, ErrorCode.NOT_CONTROLLER,
                             "leadership lost before the records committed")
            elif hwm is not None and hwm > waiter.last_offset:
                response = waiter.response
                self._reply(waiter.reply, response(waiter.first_offset) if callable(response) else response)
            else:
                keep.append(waiter)
        self.waiters = keep

    def _stop(self, status: Status) -> None:
        self.waiters = []  # the connections close with the process: callers time out
        self.controller.deactivate()
        self.tick_generation += 1
        super()._stop(status)

    # ---- requests ----------------------------------------------------------------------------------------------
    def _handle_message(self, envelope: Any) -> None:
        payload = envelope.payload
        if not isinstance(payload, ControllerRequest):
            super()._handle_message(envelope)
            return
        reply = ReplyTo(envelope.src, envelope.src_incarnation, payload.request_id, payload.component)
        core = self.core
        leader = None if core is None else core.leader_state()
        if not self.controller.active or leader is None or leader.epoch != self.active_epoch:
            self._refuse(reply, payload.api_key, payload.request, ErrorCode.NOT_CONTROLLER,
                         f"node {self.node_id} is not the active controller")
            return
        now, next_offset = self.now(), leader.accumulator.next_offset
        try:
            result = self.controller.handle(payload.api_key, payload.request, now, next_offset)
        except NotActiveControllerError as exc:
            self._refuse(reply, payload.api_key, payload.request, ErrorCode.NOT_CONTROLLER, str(exc))
            return
        except UnsupportedControllerApiError as exc:
            self._refuse(reply, payload.api_key, payload.request, ErrorCode.UNSUPPORTED_VERSION, str(exc))
            return
        except Exception as exc:  # noqa: BLE001 - a controller bug met by a peer's request is a finding
            self.world.checker.violation("ControllerRequestCrash", self, f"api {payload.api_key}: {exc!r}")
            self._refuse(reply, payload.api_key, payload.request, ErrorCode.UNKNOWN_SERVER_ERROR, repr(exc))
            return
        self._write(result, now, next_offset, (reply, payload.api_key, payload.request))
        self._schedule_tick()

    def _write(self, result: ControllerResult, now: int, next_offset: int,
               caller: tuple[ReplyTo, int, Any] | None) -> bool:
        """Append the records as one batch and replay them at once; queue the answer. True when written."""
        core, epoch = self.core, self.active_epoch
        assert core is not None and epoch is not None
        if not result.records:
            if caller is not None:
                if self.last_written > self.committed_offset:
                    self.waiters.append(_Waiter(self.last_written, epoch, *caller, result.response, next_offset))
                    self._complete_waiters()
                else:
                    response = result.response
                    self._reply(caller[0], response(next_offset) if callable(response) else response)
            return False
        try:
            values = [encode_metadata_record(r) for r in result.records]
            last, ready = core.append(values, now, epoch)
        except NotLeaderError as exc:
            if caller is not None:
                self._refuse(caller[0], caller[1], caller[2], ErrorCode.NOT_CONTROLLER, str(exc))
            return False
        if last != next_offset + len(values) - 1:
            self.world.checker.violation("ControllerOffsets", self, f"records at {next_offset}.. got last {last}")
        for index, record in enumerate(result.records):
            self.controller.replay(record, next_offset + index)
            name = type(record).__name__
            self.written[name] = self.written.get(name, 0) + 1
        self.pending.add(next_offset, last)
        self.last_written = last
        if caller is not None:
            self.waiters.append(_Waiter(last, epoch, *caller, result.response, next_offset))
        self._run(ready)
        return True

    def _reply(self, reply: ReplyTo, response: Any) -> None:
        payload = ControllerResponse(reply.request_id, reply.component, response)
        self.world.send(self.node_id, reply.src, payload, type(response).__name__,
                        dst_incarnation=reply.src_incarnation)

    def _refuse(self, reply: ReplyTo, api_key: int, request: Any, error: ErrorCode, text: str) -> None:
        self.not_controller_answers += error == ErrorCode.NOT_CONTROLLER
        self._reply(reply, error_reply(api_key, request, error, text))

    # ---- activation, ticks, resignation ------------------------------------------------------------------------
    def _leader_changed(self, effect: Any) -> None:
        super()._leader_changed(effect)
        if effect.leader_id == self.node_id:
            self.world.scheduler.after(0, self._activate_event, self.incarnation, effect.epoch)
        elif self.controller.active:
            self._resign()

    def _activate_event(self, incarnation: int, epoch: int) -> Any:
        if incarnation != self.incarnation or self.core is None:
            return None
        if self.status is Status.PAUSED:
            self.world.scheduler.after(PAUSED_RETRY_MS, self._activate_event, incarnation, epoch)
            return None
        leader = self.core.leader_state()
        if leader is None or leader.epoch != epoch or self.controller.active:
            return None
        self.active_epoch = epoch
        self.activations += 1
        self.controller.note_kraft_version(self.core.kraft_version())
        now = self.now()
        self._write(self.controller.activate(now), now, leader.accumulator.next_offset, None)
        self._schedule_tick()
        return self.node_id, "activate", f"active controller of epoch {epoch}"

    def _schedule_tick(self) -> None:
        self.tick_generation += 1
        wakeup = self.controller.next_wakeup_ms()
        if wakeup is None or self.core is None:
            return
        scheduler = self.world.scheduler
        when = max(self.clock.to_global(wakeup), scheduler.now_ms + 1)
        scheduler.at(when, self._tick_event, self.incarnation, self.tick_generation)

    def _tick_event(self, incarnation: int, generation: int) -> Any:
        if incarnation != self.incarnation or generation != self.tick_generation or self.core is None:
            return None
        if self.status is Status.PAUSED:
            self.world.scheduler.after(PAUSED_RETRY_MS, self._tick_event, incarnation, generation)
            return None
        leader = self.core.leader_state()
        if not self.controller.active or leader is None or leader.epoch != self.active_epoch:
            return None
        now, next_offset = self.now(), leader.accumulator.next_offset
        result = self.controller.tick(now, next_offset)
        wrote = self._write(result, now, next_offset, None)
        if self.controller.active:
            self._schedule_tick()
        if not wrote:
            return None
        kinds = ",".join(sorted({type(r).__name__.removesuffix("Record").split("RecordV")[0] for r in result.records}))
        return self.node_id, "ctl-tick", kinds

    def _resign(self) -> None:
        self.controller.deactivate()
        self.active_epoch = None
        self.tick_generation += 1
        if self.pending:  # replays that may never commit: back to the committed image
            self._load_committed(self.controller)
            self.pending.clear()
            self.rebuilds += 1
        self.last_written = -1

    def _load_committed(self, target: QuorumController) -> None:
        """`target` := the latest snapshot + the committed log up to `committed_offset` (as ControllerHost)."""
        assert self.core is not None
        load_committed(target, self.core.log, self.committed_offset)
