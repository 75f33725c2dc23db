"""Builders for the lifecycle tests: a config, controller answers, and a driver that keeps the clock."""

from __future__ import annotations

import datetime
import uuid
from typing import Any

from kio.schema.broker_heartbeat.v1.response import BrokerHeartbeatResponse
from kio.schema.broker_registration.v4.response import BrokerRegistrationResponse
from kio.static.primitive import i64

from pykraft.broker.actions import Ready, SendToController
from pykraft.broker.lifecycle import BrokerLifecycle, LifecycleConfig
from pykraft.controller.cluster import Endpoint, FeatureRange
from pykraft.protocol.errors import ErrorCode

CLUSTER_ID = "MkU3OEVBNTcwNTJENDM2Qg"
INCARNATION = uuid.UUID(int=(5 << 64) | 0xABC)
LOG_DIR = uuid.UUID(int=(7 << 96) | 1)
ZERO = datetime.timedelta(0)


def config(**overrides: Any) -> LifecycleConfig:
    values: dict[str, Any] = dict(
        node_id=1, cluster_id=CLUSTER_ID, incarnation_id=INCARNATION,
        listeners=(Endpoint("PLAINTEXT", "localhost", 9092, 0),),
        features={"metadata.version": FeatureRange(7, 27)}, rack="r1", log_dirs=(LOG_DIR,))
    values.update(overrides)
    return LifecycleConfig(**values)


def registration_answer(error: ErrorCode = ErrorCode.NONE, epoch: int = 42) -> BrokerRegistrationResponse:
    return BrokerRegistrationResponse(throttle_time=ZERO, error_code=error, broker_epoch=i64(epoch))


def heartbeat_answer(error: ErrorCode = ErrorCode.NONE, *, caught_up: bool = False, fenced: bool = True,
                     shut_down: bool = False) -> BrokerHeartbeatResponse:
    return BrokerHeartbeatResponse(throttle_time=ZERO, error_code=error, is_caught_up=caught_up,
                                   is_fenced=fenced, should_shut_down=shut_down)


def only_send(ready: Ready) -> SendToController:
    sends = ready.sends
    assert len(sends) == 1, ready
    return sends[0]


class Driver:
    """Holds a BrokerLifecycle, the clock, and the last request it sent."""

    def __init__(self, **overrides: Any) -> None:
        self.lifecycle = BrokerLifecycle(config(**overrides))
        self.now = 1000
        self.last: SendToController | None = None
        self.ready = self._track(self.lifecycle.start(self.now))

    def _track(self, ready: Ready) -> Ready:
        if ready.sends:
            self.last = ready.sends[-1]
        self.ready = ready
        return ready

    def answer(self, response: Any, after_ms: int = 0) -> Ready:
        self.now += after_ms
        assert self.last is not None
        return self._track(self.lifecycle.handle_response(self.last.request_id, response, self.now))

    def poll_at(self, now_ms: int) -> Ready:
        self.now = now_ms
        return self._track(self.lifecycle.poll(now_ms))

    def poll_wakeup(self) -> Ready:
        assert self.ready.wakeup_ms is not None
        return self.poll_at(self.ready.wakeup_ms)

    def to_running(self) -> None:
        self.answer(registration_answer())
        self.answer(heartbeat_answer(caught_up=True))
        self.poll_wakeup()
        self._track(self.lifecycle.set_ready_to_unfence(self.now))
        self.answer(heartbeat_answer(caught_up=True, fenced=False))
        assert self.lifecycle.state.value == "running"
