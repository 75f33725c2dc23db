"""The node's listeners: each `FrameServer` bound at start and served by the runtime's inbound handler.

Some are bound at start but refuse connections until later: a broker's client listeners until the broker host says
it caught up with the metadata log (`serve_broker_listeners`), as Kafka's BrokerServer enables request processing
after its initial catch-up (before, its image would name no broker and no topic); with an authorizer, the
controller listeners not in early.start.listeners until the ACLs are loaded (`acls_loaded`, Kafka's authorizer
futures).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from pykraft.net.errors import NetError
from pykraft.net.server import FrameServer

from pykraft.node.runtime.peers import server_tls
from pykraft.node.runtime.security import listener_security

_log = logging.getLogger("pykraft.node")


class NodeListeners:
    def __init__(self, config: Any, *, defer_broker_listeners: bool) -> None:
        self.config = config
        self.servers: list[FrameServer] = []
        self.address: tuple[str, int] | None = None  # of the first listener: the raft channel on a controller
        self._defer_broker_listeners = defer_broker_listeners
        self._deferred: list[FrameServer] = []
        self._deferred_for_acls: list[FrameServer] = []  # listeners not in early.start.listeners (controllers)
        self._tls: dict[str, Any] = {}

    def load_tls(self) -> None:
        """Read every listener's TLS files (before anything is opened: a bad file refuses the start)."""
        self._tls = {listener.name: server_tls(self.config, listener.name)
                     for listener in self.config.served_listeners()}

    async def start(self, handler: Any, scram_credential: Callable[[str, int], Any]) -> None:
        """Bind every listener, serving `handler` (the inbound handler: in combined mode it tells the kinds of
        listener apart). Raises NetError naming the port and the listener when one cannot be bound."""
        config = self.config
        broker_listeners = set(config.broker_listener_names()) if config.is_broker else set()
        for listener in config.served_listeners():
            server = FrameServer(handler, ssl_context=self._tls[listener.name],
                                 name=f"node-{config.node_id}-{listener.name}", listener_name=listener.name,
                                 security=listener_security(config, listener.name, scram_credential))
            self.servers.append(server)
            deferred = self._defer_broker_listeners and listener.name in broker_listeners
            waits = self._waits_for_acls(listener.name)
            host = listener.host or "0.0.0.0"
            try:
                address = await server.start(host, listener.port, serving=not (deferred or waits))
            except OSError as exc:  # one line naming the port and the setting, not "[Errno 98] ..." alone
                raise NetError(f"cannot listen on {host}:{listener.port} (listener {listener.name}): "
                               f"{(exc.strerror or str(exc)).lower()}") from None
            if deferred:
                self._deferred.append(server)
            elif waits:
                self._deferred_for_acls.append(server)
            self.address = self.address or address

    async def serve_broker_listeners(self, caught_up_at: int | None) -> None:
        """Open the broker's client listeners (bound at start, refusing connections until now); once only."""
        deferred, self._deferred = self._deferred, []
        for server in deferred:
            await server.start_serving()
        if deferred:
            _log.info("broker %d serves clients on %s (caught up with the metadata log at offset %s)",
                      self.config.node_id, ", ".join(s.listener_name or "?" for s in deferred), caught_up_at)

    def _waits_for_acls(self, listener_name: str) -> bool:
        """A listener not in early.start.listeners opens once the authorizer loaded the ACLs (Kafka's authorizer
        futures); by default the controller listeners start early."""
        security = self.config.security
        return security.authorizer and listener_name not in security.early_start_listeners and (
            listener_name in self.config.controller_listener_names)

    def acls_loaded(self) -> None:
        """The authorizer's initial load completed: open the listeners that waited for it (once)."""
        deferred, self._deferred_for_acls = self._deferred_for_acls, []
        for server in deferred:
            asyncio.get_running_loop().create_task(server.start_serving())
