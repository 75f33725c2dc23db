"""Checks a node start runs before it touches its data directory, so that a refused start changes nothing on disk.

Opening the storage repairs what it may (a torn tail cut, indexes rewritten, a stale quorum-state copy restored)
and the runtime then writes its trace; a start refused after that (a listener port in use) would leave those
changes behind. So a listener that cannot be bound is found first, by binding each address the way asyncio's
`create_server` will (SO_REUSEADDR, every address the host resolves to) and releasing it at once. Another process
could still take the port in between; that race only means the old, later refusal.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable
from typing import Any

__all__ = ["check_listeners_bindable"]


def check_listeners_bindable(listeners: Iterable[Any]) -> None:
    """Raise OSError (one line naming the listener) if a listener's host:port cannot be bound now."""
    for listener in listeners:
        host, port = listener.host or "0.0.0.0", listener.port
        if not port:
            continue  # an ephemeral port is always available
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        except socket.gaierror as exc:
            raise OSError(f"cannot listen on {host}:{port} (listener {listener.name}): {exc.strerror}") from None
        for family, kind, proto, _, address in infos:
            with socket.socket(family, kind, proto) as probe:
                probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    probe.bind(address)
                except OSError as exc:
                    # The message alone (no "[Errno 98]" before it): it is the one line the refused start prints.
                    raise OSError(f"cannot listen on {host}:{port} (listener {listener.name}): "
                                  f"{(exc.strerror or str(exc)).lower()}") from None
