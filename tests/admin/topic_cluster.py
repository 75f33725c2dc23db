"""One in-process controller (ControllerHost on a NodeRuntime, 127.0.0.1) with brokers registered and unfenced
through it over the wire: the cluster the topic admin and CLI tests run against."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Sequence

from kio.schema.broker_heartbeat.v1.request import BrokerHeartbeatRequest
from kio.schema.broker_registration.v4 import request as reg_v4
from kio.schema.types import BrokerId
from kio.static.primitive import i16, i64, u16

from node.helpers import CLUSTER_ID, call, free_ports, make_config, wait_for
from pykraft.controller.features import LATEST_METADATA_VERSION
from pykraft.node.roles.controller_host import ControllerHost, controller_runtime
from pykraft.node.runtime.runtime import NodeRuntime
from pykraft.protocol.errors import ErrorCode

CONTROLLER = 1


def broker_port(broker_id: int) -> int:
    return 19000 + broker_id  # only advertised, never listened on


def registration(broker_id: int, rack: str | None = None) -> reg_v4.BrokerRegistrationRequest:
    return reg_v4.BrokerRegistrationRequest(
        broker_id=BrokerId(broker_id), cluster_id=CLUSTER_ID, incarnation_id=uuid.UUID(int=broker_id << 64 | 1),
        listeners=(reg_v4.Listener(name="PLAINTEXT", host=f"broker-{broker_id}", port=u16(broker_port(broker_id)),
                                   security_protocol=i16(0)),),
        features=(reg_v4.Feature(name="metadata.version", min_supported_version=i16(7),
                                 max_supported_version=i16(LATEST_METADATA_VERSION)),),
        rack=rack, log_dirs=(uuid.UUID(int=(7 << 96) | broker_id),))


def heartbeat(broker_id: int, epoch: int, offset: int, *, fence: bool = False) -> BrokerHeartbeatRequest:
    return BrokerHeartbeatRequest(broker_id=BrokerId(broker_id), broker_epoch=i64(epoch),
                                  current_metadata_offset=i64(offset), want_fence=fence, want_shut_down=False)


def host(runtime: NodeRuntime) -> ControllerHost:
    assert isinstance(runtime.state_machine, ControllerHost)
    return runtime.state_machine


@contextlib.asynccontextmanager
async def controller_with_brokers(tmp_path, brokers: Sequence[int] = (1, 2, 3), fenced: Sequence[int] = (),
                                  racks: dict[int, str] | None = None,
                                  extra: str = "") -> AsyncIterator[tuple[int, NodeRuntime]]:
    """Yields (port, runtime): every broker registered and unfenced, then those in `fenced` fenced again.
    (Broker ids may equal the controller's id: registrations are a separate namespace.)"""
    port = free_ports(1)[0]
    runtime = controller_runtime(make_config(tmp_path, CONTROLLER, {CONTROLLER: port}, extra=extra))
    await runtime.start()
    try:
        await wait_for(lambda: host(runtime).controller.active and bool(host(runtime).controller.features.finalized))
        epochs = {}
        for broker in brokers:
            answer = await call(port, registration(broker, (racks or {}).get(broker)))
            assert answer.error_code == ErrorCode.NONE
            epochs[broker] = int(answer.broker_epoch)
        for broker in brokers:
            assert (await call(port, heartbeat(broker, epochs[broker], runtime.core.high_watermark))).error_code \
                == ErrorCode.NONE
        cluster = host(runtime).controller.cluster
        await wait_for(lambda: all(not cluster.is_fenced(b) for b in brokers))
        for broker in fenced:
            assert (await call(port, heartbeat(broker, epochs[broker], runtime.core.high_watermark,
                                               fence=True))).error_code == ErrorCode.NONE
        await wait_for(lambda: all(cluster.is_fenced(b) for b in fenced))
        yield port, runtime
    finally:
        await runtime.stop(graceful=False)
