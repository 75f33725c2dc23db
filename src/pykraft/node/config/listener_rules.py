"""The listener settings as Kafka reads them (`KafkaConfig`: listeners, advertised.listeners,
controller.listener.names, listener.security.protocol.map, inter.broker.listener.name).

- `listener.security.protocol.map`: every listener name in use (a controller listener name, or a listener the node
  serves) needs a security protocol. Unset, the map is Kafka's default (each protocol name maps to itself), plus
  PLAINTEXT for the controller listener names when no SSL or SASL listener is in use (Kafka's
  effectiveListenerSecurityProtocolMap); any other name, INTERNAL or EXTERNAL say, must then be mapped explicitly.
  pykraft offers all four: PLAINTEXT, SSL, SASL_PLAINTEXT and SASL_SSL (security.py reads their settings).
- `advertised.listeners`: what a broker registers (and clients are sent to) is, as in Kafka, its broker entries
  when the key is set (`effectiveAdvertisedBrokerListeners`), and `listeners` otherwise; a controller listener not
  named there is advertised as bound (`effectiveAdvertisedControllerListeners`). Names must be bound listeners,
  hosts routable.
- `inter.broker.listener.name` (or else the listener named after `security.inter.broker.protocol`, default
  PLAINTEXT; setting both is refused): the listener brokers use to reach each other (the replica fetchers). On a
  broker it must be one of its advertised broker listeners, as Kafka requires.
"""

from __future__ import annotations

from pykraft.node.config.values import Listener, Problems, ValueReader, parse_listeners, parse_protocol_map

# Kafka's default listener.security.protocol.map
DEFAULT_PROTOCOL_MAP = {
    "PLAINTEXT": "PLAINTEXT", "SSL": "SSL", "SASL_PLAINTEXT": "SASL_PLAINTEXT", "SASL_SSL": "SASL_SSL",
}
SECURED_NAMES = ("SSL", "SASL_PLAINTEXT", "SASL_SSL")  # listener names that stop the controller default mapping
SUPPORTED_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
UNROUTABLE_HOSTS = ("0.0.0.0", "::")
PROTOCOL_MAP_KEY = "listener.security.protocol.map"
INTER_BROKER_NAME_KEY = "inter.broker.listener.name"
INTER_BROKER_PROTOCOL_KEY = "security.inter.broker.protocol"


def advertised(read: ValueReader, listeners: tuple[Listener, ...]) -> tuple[Listener, ...]:
    if not read.text("advertised.listeners"):
        return listeners
    found = parse_listeners("advertised.listeners", read.text("advertised.listeners"), read.problems)
    bound = {listener.name for listener in listeners}
    for listener in found:
        if listener.name not in bound:
            read.problems.error(f"advertised.listeners: listener name {listener.name} is not defined in listeners")
        if listener.host in UNROUTABLE_HOSTS:
            read.problems.error(f"advertised.listeners cannot use the nonroutable meta-address {listener.host}. "
                                "Use a routable IP address.")
    return found


def protocols(read: ValueReader, roles: list[str], listeners: tuple[Listener, ...],
              controller_names: tuple[str, ...]) -> dict[str, str]:
    """listener.security.protocol.map as Kafka reads it (see the module docstring), every name in use checked: the
    controller listener names and the listeners this node serves (a listener named nowhere else is reported by
    check_listeners, not here)."""
    served = [l.name for l in listeners if ("controller" in roles and l.name in controller_names)
              or ("broker" in roles and l.name not in controller_names)]
    names = dict.fromkeys(list(controller_names) + served)
    before = len(read.problems.errors)
    if read.text(PROTOCOL_MAP_KEY):
        found = parse_protocol_map(PROTOCOL_MAP_KEY, read.text(PROTOCOL_MAP_KEY), read.problems)
    else:
        found = dict(DEFAULT_PROTOCOL_MAP)
        if not any(name in SECURED_NAMES for name in (*controller_names, *(l.name for l in listeners))):
            for name in controller_names:
                found.setdefault(name, "PLAINTEXT")
    unparsable = len(read.problems.errors) > before
    for name in names:
        protocol = found.get(name)
        if protocol is None:
            if not unparsable:  # else the unparsable entry probably named it
                read.problems.error(f"{PROTOCOL_MAP_KEY}: no security protocol for listener {name} "
                                    f"(add {name}:PLAINTEXT, {name}:SSL, {name}:SASL_PLAINTEXT or {name}:SASL_SSL)")
        elif protocol not in SUPPORTED_PROTOCOLS:
            read.problems.error(f"{PROTOCOL_MAP_KEY}: listener {name} uses {protocol}, which is not a security "
                                "protocol (PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL)")
    return found


def inter_broker_listener_name(read: ValueReader, protocol_map: dict[str, str]) -> str | None:
    """Kafka's interBrokerListenerName: inter.broker.listener.name, or the listener named after
    security.inter.broker.protocol (default PLAINTEXT). None for a protocol that is none of Kafka's (the config
    table's check reports that value in ConfigDef's words)."""
    name = read.text(INTER_BROKER_NAME_KEY).upper()
    protocol = read.text(INTER_BROKER_PROTOCOL_KEY)
    if name and protocol:
        read.problems.error(f"Only one of {INTER_BROKER_NAME_KEY} and {INTER_BROKER_PROTOCOL_KEY} should be set.")
    if name:
        if name not in protocol_map:
            read.problems.error(f"Listener with name {name} defined in {INTER_BROKER_NAME_KEY} not found in "
                                f"{PROTOCOL_MAP_KEY}.")
        return name
    protocol = (protocol or "PLAINTEXT").upper()
    return protocol if protocol in DEFAULT_PROTOCOL_MAP else None


def check_listeners(problems: Problems, roles: list[str], listeners: tuple[Listener, ...],
                    advertised_listeners: tuple[Listener, ...], controller_names: tuple[str, ...],
                    inter_broker: str | None) -> None:
    bound = {listener.name for listener in listeners}
    if not controller_names:
        who = "a controller" if "controller" in roles else "a broker (to reach the controllers)"
        problems.error(f"controller.listener.names must contain at least one value on {who}")
    if "controller" in roles:
        for name in controller_names:
            if name not in bound:
                problems.error(f"controller.listener.names: {name} is not defined in listeners")
    elif "broker" in roles:
        for name in controller_names:
            if name in bound:
                problems.error(
                    "controller.listener.names must not contain a value appearing in the 'listeners' configuration "
                    f"when running KRaft with just the broker role ({name})"
                )
    if "broker" not in roles:
        return
    if not (bound - set(controller_names)):
        problems.error("listeners: a broker needs at least one listener that is not a controller listener")
        return
    broker_advertised = [listener for listener in advertised_listeners if listener.name not in controller_names]
    if not broker_advertised:
        problems.error("There must be at least one broker advertised listener. Perhaps all listeners appear in "
                       "controller.listener.names?")
        return
    for listener in broker_advertised:
        if listener.host in UNROUTABLE_HOSTS:
            problems.error(f"advertised.listeners cannot use the nonroutable meta-address {listener.host} "
                           f"(listener {listener.name}; set advertised.listeners to a routable address)")
    names = [listener.name for listener in broker_advertised]
    if inter_broker is not None and inter_broker not in names:
        problems.error(f"{INTER_BROKER_NAME_KEY} must be a listener name defined in advertised.listeners. The valid "
                       f"options based on currently configured listeners are {','.join(names)}")
