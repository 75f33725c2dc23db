"""The listener a request came in on, and which endpoint of a broker an answer names on it (Kafka's
`RequestContext.listenerName` and `KRaftMetadataCache`'s choice of endpoints).

Kafka binds two kinds of listener: a broker's client listeners (served by `KafkaApis`) and a controller's listeners
(`controller.listener.names`, served by `ControllerApis`); a combined node binds both. pykraft answers every listener
with one handler, so an answer that names endpoints asks which kind of listener its request came in on:
- on a **broker listener** each broker is named by its endpoint on that same listener, and a broker without one is
  left out (a client on EXTERNAL must be sent to EXTERNAL endpoints: an INTERNAL address may not route from where
  it is). Metadata's partitions follow the same rule (client_apis.py: a leader without the listener is
  LISTENER_NOT_FOUND, a replica without it is offline);
- on a **controller listener** (Kafka's controllers answer neither Metadata nor DescribeCluster type 1; pykraft
  does, so that stock clients can bootstrap against controllers) a broker is named by its endpoint on the
  request's listener when it has one, else by its first registered listener: a controller listener is never a
  broker listener, so this is the broker's first listener.
A request decoded outside a server (no connection context) is answered as on the node's first kind of listener:
a broker-only node's as on a broker listener, any other node's as on a controller listener.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pykraft.controller.cluster import BrokerRegistration


@dataclass(frozen=True, slots=True)
class RequestListener:
    """The listener a request came in on. `name` None: no connection context (see the module docstring)."""

    name: str | None
    serves_brokers: bool  # a broker's client listener, not a controller listener

    @property
    def strict(self) -> bool:
        """Whether a broker without an endpoint on this listener is left out (Kafka's broker listeners)."""
        return self.serves_brokers and self.name is not None


CONTROLLER_LISTENER = RequestListener(None, serves_brokers=False)


def listener_name(decoded: Any) -> str | None:
    """The name of the listener a decoded request came in on (its connection context), or None."""
    return getattr(getattr(decoded, "context", None), "listener_name", None)


def request_listener(decoded: Any, config: Any) -> RequestListener:
    """The RequestListener of `decoded` on a node with `config` (its controller.listener.names and roles)."""
    name = listener_name(decoded)
    if name is None:
        return RequestListener(None, serves_brokers=config.is_broker and not config.is_controller)
    return RequestListener(name, serves_brokers=name not in config.controller_listener_names)


def broker_endpoint(registration: BrokerRegistration, listener: RequestListener) -> tuple[str, int] | None:
    """(host, port) of the broker as an answer on `listener` names it, or None when that answer leaves it out."""
    if listener.name is not None:
        for endpoint in registration.listeners:
            if endpoint.name == listener.name:
                return endpoint.host, int(endpoint.port)
        if listener.strict:
            return None
    if not registration.listeners:
        return None
    first = registration.listeners[0]
    return first.host, int(first.port)
