"""The broker's registration and heartbeat state machine (Kafka's BrokerLifecycleManager, reference §8.2).

    STARTING --heartbeat reply IsCaughtUp--> RECOVERY --reply IsFenced=false--> RUNNING
    RUNNING --reply IsFenced=true--> FENCED --reply IsFenced=false--> RUNNING
    RUNNING --begin_controlled_shutdown--> PENDING_CONTROLLED_SHUTDOWN --reply ShouldShutDown--> SHUTTING_DOWN
    STARTING/RECOVERY/FENCED --begin_controlled_shutdown--> SHUTTING_DOWN (a fenced broker leads nothing)
    STARTING --no registration within initial.broker.registration.timeout.ms--> SHUTTING_DOWN (not clean)

As in Kafka, STARTING covers "registered but not yet caught up with the metadata log" (the controller's IsCaughtUp
says when the broker's offset reached its own RegisterBrokerRecord); RECOVERY is caught up but still fenced,
until the runtime calls `set_ready_to_unfence` (its own recovery is done) and the controller unfences it.

One request to the controller is in flight at a time: a registration while the broker has no valid broker epoch,
else a heartbeat. Timing: the next heartbeat goes `heartbeat_interval_ms` after a successful answer (10 ms while
STARTING, 50 ms after the first answer in PENDING_CONTROLLED_SHUTDOWN, as Kafka does, so a quick start or
shutdown is not slowed down by a whole interval); after a failure it goes after an exponential backoff (100 ms
doubling up to `max_backoff_ms`, no jitter: this module has no randomness). Each request is given up after
min(request_timeout_ms, session_timeout_ms / 2) (KAFKA-14392: a heartbeat stuck longer than half a session would
let the session expire while we wait).

Errors: NOT_CONTROLLER -> FindController and resend at once (after a backoff when it repeats); a heartbeat's
STALE_BROKER_EPOCH -> register again (same incarnation id, so the controller keeps or renews our epoch); every
other error (DUPLICATE_BROKER_REGISTRATION while an older incarnation's session is still alive, ...) -> retry
after the backoff, until initial.broker.registration.timeout.ms for the first registration, then give up with
the last error in the reason.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from kio.schema.broker_heartbeat.v1.request import BrokerHeartbeatRequest
from kio.schema.broker_registration.v4 import request as reg_v4
from kio.schema.types import BrokerId
from kio.static.primitive import i16, i64, u16

from pykraft.controller.cluster import Endpoint, FeatureRange
from pykraft.protocol.errors import ErrorCode

from .actions import (
    Action,
    BrokerState,
    FindController,
    Ready,
    SendToController,
    ShutdownComplete,
    StateChanged,
    earliest,
)

BROKER_REGISTRATION = 62
BROKER_HEARTBEAT = 63

S = BrokerState
# Every transition this module may make; anything else is a programmer error (asserted).
TRANSITIONS: Mapping[BrokerState, frozenset[BrokerState]] = {
    S.STARTING: frozenset({S.RECOVERY, S.SHUTTING_DOWN}),
    S.RECOVERY: frozenset({S.RUNNING, S.SHUTTING_DOWN}),
    S.RUNNING: frozenset({S.FENCED, S.PENDING_CONTROLLED_SHUTDOWN}),
    S.FENCED: frozenset({S.RUNNING, S.SHUTTING_DOWN}),
    S.PENDING_CONTROLLED_SHUTDOWN: frozenset({S.SHUTTING_DOWN}),
    S.SHUTTING_DOWN: frozenset(),
}
STARTING_HEARTBEAT_MS = 10
FIRST_SHUTDOWN_HEARTBEAT_MS = 50


@dataclass(frozen=True, slots=True)
class LifecycleConfig:
    node_id: int
    cluster_id: str
    incarnation_id: uuid.UUID  # fresh for every start of the process
    listeners: tuple[Endpoint, ...] = ()
    features: Mapping[str, FeatureRange] = field(default_factory=dict)
    rack: str | None = None
    log_dirs: tuple[uuid.UUID, ...] = ()
    previous_broker_epoch: int = -1  # the epoch before a clean shutdown, -1 when unknown
    heartbeat_interval_ms: int = 2000  # broker.heartbeat.interval.ms
    session_timeout_ms: int = 9000  # broker.session.timeout.ms
    initial_registration_timeout_ms: int = 60_000  # initial.broker.registration.timeout.ms
    request_timeout_ms: int = 30_000  # the controller channel's request timeout, capped below
    initial_backoff_ms: int = 100
    max_backoff_ms: int | None = None  # None: session_timeout_ms / 2

    @property
    def effective_request_timeout_ms(self) -> int:
        return min(self.request_timeout_ms, self.session_timeout_ms // 2)

    def backoff_ms(self, failures: int) -> int:
        """The wait before attempt number `failures` + 1 (failures >= 1)."""
        cap = self.session_timeout_ms // 2 if self.max_backoff_ms is None else self.max_backoff_ms
        factor: int = 2 ** min(failures - 1, 30)
        return min(cap, self.initial_backoff_ms * factor)


@dataclass(frozen=True, slots=True)
class _InFlight:
    request_id: int
    api_key: int
    deadline_ms: int


class BrokerLifecycle:
    def __init__(self, config: LifecycleConfig) -> None:
        self.config = config
        self.state = BrokerState.STARTING
        self.broker_epoch = -1
        self.registered = False  # holds a broker epoch the controller accepts for heartbeats
        self.initial_registration_done = False
        self.ready_to_unfence = False
        self.metadata_offset = -1
        self.last_error = "no answer from the controller yet"
        self.started = False
        self._registration_deadline_ms: int | None = None
        self._next_send_ms: int | None = None
        self._urgent = False  # send again as soon as the in-flight request is answered
        self._in_flight: _InFlight | None = None
        self._failures = 0
        self._next_request_id = 0
        self._got_shutdown_answer = False

    # ---- inputs ------------------------------------------------------------------------------------------------
    def start(self, now_ms: int) -> Ready:
        assert not self.started, "start() is called once"
        self.started = True
        self._registration_deadline_ms = now_ms + self.config.initial_registration_timeout_ms
        self._next_send_ms = now_ms
        return self._ready([], now_ms)

    def poll(self, now_ms: int) -> Ready:
        actions: list[Action] = []
        if self._in_flight is not None and now_ms >= self._in_flight.deadline_ms:
            self._in_flight = None
            self.last_error = "request timed out"
            actions.append(FindController())
            self._after_failure(now_ms)
        return self._ready(actions, now_ms)

    def note_metadata_offset(self, offset: int) -> None:
        """The last metadata offset this broker applied (reported in every heartbeat)."""
        self.metadata_offset = max(self.metadata_offset, offset)

    def set_ready_to_unfence(self, now_ms: int) -> Ready:
        """The broker finished its own recovery: heartbeats stop asking to stay fenced, starting now."""
        self.ready_to_unfence = True
        self._send_soon(now_ms)
        return self._ready([], now_ms)

    def begin_controlled_shutdown(self, now_ms: int) -> Ready:
        if self.state in (BrokerState.PENDING_CONTROLLED_SHUTDOWN, BrokerState.SHUTTING_DOWN):
            return self._ready([], now_ms)
        if self.state is BrokerState.RUNNING:
            actions: list[Action] = [self._transition(BrokerState.PENDING_CONTROLLED_SHUTDOWN)]
            self._send_soon(now_ms)
            return self._ready(actions, now_ms)
        # Not registered, not caught up or fenced: this broker leads nothing, there is nothing to hand over.
        return self._ready(self._shut_down(True, f"controlled shutdown requested in state {self.state.value}"),
                           now_ms)

    def handle_failure(self, request_id: int, now_ms: int) -> Ready:
        """The runtime could not deliver the request or lost the connection: no answer will come."""
        if self._in_flight is None or self._in_flight.request_id != request_id:
            return self._ready([], now_ms)
        self._in_flight = None
        self.last_error = "the request could not be delivered"
        self._after_failure(now_ms)
        return self._ready([], now_ms)

    def handle_response(self, request_id: int, response: object, now_ms: int) -> Ready:
        in_flight = self._in_flight
        if in_flight is None or in_flight.request_id != request_id:
            return self._ready([], now_ms)  # late answer to a request we gave up on
        self._in_flight = None
        if getattr(response, "__api_key__", None) != in_flight.api_key:
            self.last_error = f"unexpected answer {type(response).__name__}"
            self._after_failure(now_ms)
            return self._ready([], now_ms)
        error = _error_code(response)
        if error is ErrorCode.NOT_CONTROLLER:
            self.last_error = error.name
            delay = 0 if self._failures == 0 else self.config.backoff_ms(self._failures)
            self._failures += 1
            self._next_send_ms = now_ms + delay
            return self._ready([FindController()], now_ms)
        if in_flight.api_key == BROKER_REGISTRATION:
            actions = self._on_registration(response, error, now_ms)
        else:
            actions = self._on_heartbeat(response, error, now_ms)
        return self._ready(actions, now_ms)

    # ---- answers -----------------------------------------------------------------------------------------------
    def _on_registration(self, response: object, error: ErrorCode, now_ms: int) -> list[Action]:
        if error is not ErrorCode.NONE:
            self.last_error = error.name
            self._after_failure(now_ms)
            return []
        self.broker_epoch = int(response.broker_epoch)  # type: ignore[attr-defined]
        self.registered = True
        self.initial_registration_done = True
        self._failures = 0
        self._next_send_ms = now_ms  # first heartbeat at once
        return []

    def _on_heartbeat(self, response: object, error: ErrorCode, now_ms: int) -> list[Action]:
        if error is ErrorCode.STALE_BROKER_EPOCH:
            # The controller no longer knows this epoch (unregistered, or a newer registration): register again.
            self.last_error = error.name
            self.registered = False
            self._failures = 0
            self._next_send_ms = now_ms
            return []
        if error is not ErrorCode.NONE:
            self.last_error = error.name
            self._after_failure(now_ms)
            return []
        self._failures = 0
        caught_up = bool(getattr(response, "is_caught_up", False))
        fenced = bool(getattr(response, "is_fenced", True))
        shut_down = bool(getattr(response, "should_shut_down", False))
        return self._advance(caught_up, fenced, shut_down, now_ms)

    def _advance(self, caught_up: bool, fenced: bool, shut_down: bool, now_ms: int) -> list[Action]:
        """A successful heartbeat answer: move along the state table and schedule the next heartbeat."""
        interval = self.config.heartbeat_interval_ms
        state = self.state
        actions: list[Action] = []
        if state is BrokerState.STARTING:
            if caught_up:
                actions.append(self._transition(BrokerState.RECOVERY))
            interval = STARTING_HEARTBEAT_MS
        elif state in (BrokerState.RECOVERY, BrokerState.FENCED) and not fenced:
            actions.append(self._transition(BrokerState.RUNNING))
        elif state is BrokerState.RUNNING and fenced:
            actions.append(self._transition(BrokerState.FENCED))
        elif state is BrokerState.PENDING_CONTROLLED_SHUTDOWN:
            if shut_down:
                return self._shut_down(True, "the controller allowed the controlled shutdown")
            if not self._got_shutdown_answer:
                interval = FIRST_SHUTDOWN_HEARTBEAT_MS
            self._got_shutdown_answer = True
        self._next_send_ms = now_ms + interval
        return actions

    # ---- helpers -----------------------------------------------------------------------------------------------
    def _after_failure(self, now_ms: int) -> None:
        self._failures += 1
        self._next_send_ms = now_ms + self.config.backoff_ms(self._failures)

    def _send_soon(self, now_ms: int) -> None:
        if self._in_flight is not None:
            self._urgent = True
        elif self._next_send_ms is not None:
            self._next_send_ms = min(self._next_send_ms, now_ms)

    def _transition(self, new: BrokerState) -> StateChanged:
        assert new in TRANSITIONS[self.state], f"illegal broker transition {self.state} -> {new}"
        old, self.state = self.state, new
        return StateChanged(old, new)

    def _shut_down(self, clean: bool, reason: str) -> list[Action]:
        changed = self._transition(BrokerState.SHUTTING_DOWN)
        self._in_flight = None
        self._next_send_ms = None
        return [changed, ShutdownComplete(clean, reason)]

    def _ready(self, actions: list[Action], now_ms: int) -> Ready:
        """Give up on the first registration when its time ran out, else send what is due; then the wake-up."""
        if self.state is BrokerState.SHUTTING_DOWN:
            return Ready(tuple(actions), None)
        deadline = None if self.initial_registration_done else self._registration_deadline_ms
        if deadline is not None and now_ms >= deadline:
            reason = (f"broker {self.config.node_id} could not register with the controller quorum within "
                      f"{self.config.initial_registration_timeout_ms} ms (initial.broker.registration.timeout.ms)"
                      f"; last error: {self.last_error}")
            return Ready((*actions, *self._shut_down(False, reason)), None)
        if self._in_flight is None and self._urgent:
            self._urgent = False
            self._next_send_ms = now_ms if self._next_send_ms is None else min(self._next_send_ms, now_ms)
        if self._in_flight is None and self._next_send_ms is not None and now_ms >= self._next_send_ms:
            actions.append(self._send(now_ms))
        in_flight_deadline = None if self._in_flight is None else self._in_flight.deadline_ms
        next_send = None if self._in_flight is not None else self._next_send_ms
        return Ready(tuple(actions), earliest(in_flight_deadline, next_send, deadline))

    def _send(self, now_ms: int) -> SendToController:
        self._next_request_id += 1
        request: BrokerHeartbeatRequest | reg_v4.BrokerRegistrationRequest
        if self.registered:
            api_key, request = BROKER_HEARTBEAT, self.heartbeat_request()
        else:
            api_key, request = BROKER_REGISTRATION, self.registration_request()
        deadline = now_ms + self.config.effective_request_timeout_ms
        self._in_flight = _InFlight(self._next_request_id, api_key, deadline)
        self._next_send_ms = None
        return SendToController(self._next_request_id, api_key, request, deadline)

    # ---- requests ----------------------------------------------------------------------------------------------
    def registration_request(self) -> reg_v4.BrokerRegistrationRequest:
        c = self.config
        return reg_v4.BrokerRegistrationRequest(
            broker_id=BrokerId(c.node_id), cluster_id=c.cluster_id, incarnation_id=c.incarnation_id,
            listeners=tuple(reg_v4.Listener(name=e.name, host=e.host, port=u16(e.port),
                                            security_protocol=i16(e.security_protocol)) for e in c.listeners),
            features=tuple(reg_v4.Feature(name=name, min_supported_version=i16(r.min_version),
                                          max_supported_version=i16(r.max_version))
                           for name, r in sorted(c.features.items())),
            rack=c.rack, log_dirs=c.log_dirs, previous_broker_epoch=i64(c.previous_broker_epoch))

    def heartbeat_request(self) -> BrokerHeartbeatRequest:
        return BrokerHeartbeatRequest(
            broker_id=BrokerId(self.config.node_id), broker_epoch=i64(self.broker_epoch),
            current_metadata_offset=i64(self.metadata_offset), want_fence=not self.ready_to_unfence,
            want_shut_down=self.state is BrokerState.PENDING_CONTROLLED_SHUTDOWN)


def _error_code(response: object) -> ErrorCode:
    """The answer's error code as our enum; a number Kafka does not define counts as UNKNOWN_SERVER_ERROR."""
    try:
        return ErrorCode.of(int(getattr(response, "error_code", -1)))
    except (TypeError, ValueError):
        return ErrorCode.UNKNOWN_SERVER_ERROR
