"""`ControllerRegistrar`: a controller node registers with the active controller, as Kafka's
ControllerRegistrationManager does: a ControllerRegistration request (its id, a new incarnation id per process,
its advertised controller listeners and supported features) that the active controller writes as a
RegisterControllerRecord. The registrations are how a leader knows a controller's endpoints before it is a voter:
quorum reassignment (AlterPartitionReassignments on `__cluster_metadata`) can only make voters of registered
controllers, and DescribeCluster's controller list reads them in Kafka.

When it sends (checked after every replayed batch or snapshot and on every leader change, and by a retry timer):
the image does not hold this process' registration yet, the finalized metadata.version allows registrations
(3.7-IV0), a leader is known and no attempt is in flight. The request goes to the leader's controller listener,
or to this node's own controller host when it is the leader. A refusal or no answer is retried after
RETRY_BACKOFF_MS; an accepted one is done once the image shows it (the registration may also be lost with a
leader, and is then sent again).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import TYPE_CHECKING, Any

from pykraft.controller.broker_lifecycle import CONTROLLER_REGISTRATION_MIN_METADATA_VERSION
from pykraft.controller.controller import CONTROLLER_REGISTRATION
from pykraft.controller.features import DEFAULT_SUPPORTED_FEATURES
from pykraft.protocol.errors import ErrorCode
from pykraft.protocol.lazy_schema import schema_module

from pykraft.node.runtime.client_apis import controllers

if TYPE_CHECKING:
    from pykraft.node.roles.controller_host import ControllerHost

_log = logging.getLogger("pykraft.node.controller")
registration_req = schema_module("kio.schema.controller_registration.v0.request")

RETRY_BACKOFF_MS = 1000
# Kafka's SecurityProtocol ids, as the registration carries them.
SECURITY_PROTOCOL_IDS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}


class ControllerRegistrar:
    def __init__(self, host: ControllerHost, node_id: int, listeners: tuple[tuple[str, str, int, int], ...],
                 incarnation_id: uuid.UUID | None = None) -> None:
        self.host = host
        self.node_id = node_id
        self.listeners = listeners  # (name, host, port, security protocol id) of each advertised controller listener
        self.incarnation_id = incarnation_id or uuid.uuid4()
        self.in_flight = False
        self.attempts = 0
        self._retry: asyncio.TimerHandle | None = None
        self._scheduled = False
        self._task: asyncio.Task[None] | None = None

    @staticmethod
    def of_config(host: ControllerHost, node_config: Any) -> ControllerRegistrar:
        listeners = tuple((l.name, l.host, l.port, SECURITY_PROTOCOL_IDS.get(node_config.security_protocol(l.name), 0))
                          for l in node_config.advertised_controller_listeners())
        return ControllerRegistrar(host, node_config.node_id, listeners)

    def registered(self) -> bool:
        found = self.host.controller.cluster.controllers.get(self.node_id)
        return found is not None and found.incarnation_id == self.incarnation_id

    def poke(self) -> None:
        """Look again soon (off the core task: this is called from inside its inputs)."""
        if self._scheduled or self.host.runtime is None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop (a host driven by a test without one): nothing can be sent anyway
        self._scheduled = True
        loop.call_soon(self._check)

    def close(self) -> None:
        if self._retry is not None:
            self._retry.cancel()
        if self._task is not None:
            self._task.cancel()

    def _check(self) -> None:
        self._scheduled = False
        runtime = self.host.runtime
        if self.in_flight or self._retry is not None or runtime is None or runtime.started_core is None or runtime.stopping:
            return
        version = self.host.controller.features.metadata_version
        if self.registered() or version is None or version < CONTROLLER_REGISTRATION_MIN_METADATA_VERSION:
            return
        leader = runtime.core.quorum.leader_id()
        if leader is None:
            return  # leader_changed pokes again
        self.in_flight = True
        self.attempts += 1
        self._task = asyncio.get_running_loop().create_task(self._send(leader))

    def _request(self) -> Any:
        return registration_req.ControllerRegistrationRequest(
            controller_id=self.node_id, incarnation_id=self.incarnation_id, zk_migration_ready=False,
            listeners=tuple(registration_req.Listener(name=name, host=host, port=port, security_protocol=protocol)
                            for name, host, port, protocol in self.listeners),
            features=tuple(registration_req.Feature(name=name, min_supported_version=r.min_version,
                                                    max_supported_version=r.max_version)
                           for name, r in sorted(DEFAULT_SUPPORTED_FEATURES.items())))

    async def _send(self, leader: int) -> None:
        runtime = self.host.runtime
        assert runtime is not None
        response = None
        try:
            if leader == self.node_id:
                response = await self.host.request(CONTROLLER_REGISTRATION, self._request())
            else:
                address = next(((h, p) for n, h, p in controllers(runtime.core) if n == leader), None)
                if address is not None:
                    response = await runtime.outbound.forward(address[0], address[1], self._request())
        finally:
            self.in_flight = False
            self._task = None
        error = None if response is None else ErrorCode(int(response.error_code))
        if error is ErrorCode.NONE:
            _log.info("controller %d registered with the active controller %d", self.node_id, leader)
        else:
            _log.debug("controller registration with %d failed: %s", leader,
                       "no answer" if error is None else error.name)
        # Accepted or not, look again only after the backoff: an accepted registration shows in the image once its
        # record commits (then there is nothing to do); one that never shows was lost with its leader.
        self._retry = asyncio.get_running_loop().call_later(RETRY_BACKOFF_MS / 1000, self._retry_now)

    def _retry_now(self) -> None:
        self._retry = None
        self._check()
