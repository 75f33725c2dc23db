"""The command line of `pykraft configs`, read as Kafka's ConfigCommand reads it (pure: no I/O).

`parse(args)` reads Kafka's flags (joptsimple style: `--flag value` or `--flag=value`, repeatable where Kafka's
are) and runs Kafka's checkArgs, raising UsageError with Kafka's message for the first problem. The entity is given
by `--entity-type`/`--entity-name`/`--entity-default` or by Kafka's shortcut flags (`--topic t`, `--broker 1`,
`--broker-defaults`, `--broker-logger 1`, ...). `parse_add_config` is Kafka's reading of `--add-config`: commas
separate entries except inside square brackets, which group a value's commas and are dropped.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

TOPICS, CLIENTS, USERS, BROKERS, IPS, CLIENT_METRICS, GROUPS = (
    "topics", "clients", "users", "brokers", "ips", "client-metrics", "groups")
BROKER_LOGGERS = "broker-loggers"
ALL_TYPES = (TOPICS, CLIENTS, USERS, BROKERS, IPS, CLIENT_METRICS, GROUPS, BROKER_LOGGERS)

_VALUED = ("bootstrap-server", "bootstrap-controller", "command-config", "entity-type", "entity-name",
           "add-config", "add-config-file", "delete-config", "topic", "client", "user", "broker", "broker-logger",
           "ip", "group", "client-metrics")
_FLAGS = ("describe", "alter", "all", "entity-default", "force", "client-defaults", "user-defaults",
          "broker-defaults", "ip-defaults", "help", "version")
# Kafka's shortcut flags: (flag, entity type), the named ones then the defaults
_ENTITY_FLAGS = (("topic", TOPICS), ("client", CLIENTS), ("user", USERS), ("broker", BROKERS),
                 ("broker-logger", BROKER_LOGGERS), ("ip", IPS), ("client-metrics", CLIENT_METRICS),
                 ("group", GROUPS))
_DEFAULT_FLAGS = (("client-defaults", CLIENTS), ("user-defaults", USERS), ("broker-defaults", BROKERS),
                  ("ip-defaults", IPS))


class UsageError(Exception):
    """A command line Kafka's ConfigCommand refuses: the message is Kafka's."""


@dataclass
class Options:
    values: dict[str, list[str]] = field(default_factory=dict)  # valued flags in the order given
    flags: set[str] = field(default_factory=set)
    order: list[str] = field(default_factory=list)  # every flag in the order given

    def has(self, name: str) -> bool:
        return name in self.flags or name in self.values

    def value(self, name: str) -> str | None:
        found = self.values.get(name)
        return found[0] if found else None

    @property
    def entity_types(self) -> list[str]:
        return self.values.get("entity-type", []) + [kind for flag, kind in (*_ENTITY_FLAGS, *_DEFAULT_FLAGS)
                                                     if self.has(flag)]

    @property
    def entity_names(self) -> list[str]:
        names = iter(self.values.get("entity-name", []))
        given = [next(names) if flag == "entity-name" else "" for flag in self.order
                 if flag in ("entity-name", "entity-default")]
        return given + [self.values[flag][0] for flag, _ in _ENTITY_FLAGS if flag in self.values] + [
            "" for flag, _ in _DEFAULT_FLAGS if flag in self.flags]

    @property
    def delete_configs(self) -> list[str]:
        return [name.strip() for value in self.values.get("delete-config", []) for name in value.split(",")]


def read_flags(args: Sequence[str]) -> Options:
    options = Options()
    items = list(args)
    i = 0
    while i < len(items):
        word = items[i]
        name, equals, inline = word[2:].partition("=") if word.startswith("--") else (word, "", "")
        if not word.startswith("--") or name not in (*_VALUED, *_FLAGS):
            raise UsageError(f"{name} is not a recognized option")
        if name in _FLAGS:
            options.flags.add(name)
        else:
            if not equals:
                i += 1
                if i >= len(items):
                    raise UsageError(f"Option {name} requires an argument")
                inline = items[i]
            options.values.setdefault(name, []).append(inline)
        options.order.append(name)
        i += 1
    return options


def parse(args: Sequence[str]) -> Options:
    """The options, checked as Kafka's ConfigCommandOptions.checkArgs checks them."""
    options = read_flags(args)
    if options.has("help") or options.has("version"):
        return options
    if sum(options.has(a) for a in ("alter", "describe")) != 1:
        raise UsageError("Command must include exactly one action: --describe, --alter")
    for other in ("add-config", "delete-config"):
        if options.has("describe") and options.has(other):
            raise UsageError(f'Option "[describe]" can\'t be used with option "[{other}]"')
    _check_entities(options)
    if options.has("alter"):
        _check_alter(options)
    return options


def _check_entities(options: Options) -> None:
    types = options.entity_types
    duplicates = sorted({t for t in types if types.count(t) > 1})
    if duplicates:
        raise UsageError(f"Duplicate entity type(s) specified: {','.join(duplicates)}")
    servers = options.has("bootstrap-server") + options.has("bootstrap-controller")
    if not servers:
        raise UsageError("Either --bootstrap-server or --bootstrap-controller must be specified.")
    for kind in types:
        if kind not in ALL_TYPES:
            raise UsageError(f"Invalid entity type {kind}, the entity type must be one of {', '.join(ALL_TYPES)} "
                             "with a --bootstrap-server or --bootstrap-controller argument")
    if not types:
        raise UsageError("At least one entity type must be specified")
    if len(types) > 1 and set(types) != {USERS, CLIENTS}:
        raise UsageError(f"Only '{USERS}' and '{CLIENTS}' entity types may be specified together")
    shortcut = any(options.has(flag) for flag, _ in (*_ENTITY_FLAGS, *_DEFAULT_FLAGS))
    if shortcut and any(options.has(f) for f in ("entity-name", "entity-type", "entity-default")):
        raise UsageError("--entity-{type,name,default} should not be used in conjunction with specific entity flags")
    if servers > 1:
        raise UsageError("Only one of --bootstrap-server or --bootstrap-controller can be specified")
    names = options.entity_names
    if any(names) and (BROKERS in types or BROKER_LOGGERS in types):
        for flag in ("entity-name", "broker", "broker-logger"):
            value = options.value(flag)
            if value is not None and not _is_int(value):
                raise UsageError(f"The entity name for {types[0]} must be a valid integer broker id, but it is: "
                                 f"{value}")
    if options.has("describe"):
        if not {USERS, CLIENTS, BROKERS, IPS} & set(types) and options.has("entity-default"):
            raise UsageError(f"--entity-default must not be specified with --describe of {','.join(types)}")
        if BROKER_LOGGERS in types and not any(names):
            raise UsageError(f"An entity name must be specified with --describe of {','.join(types)}")


def _check_alter(options: Options) -> None:
    types, names = options.entity_types, options.entity_names
    if {USERS, CLIENTS, BROKERS, IPS} & set(types):
        if not names:
            raise UsageError("An entity-name or default entity must be specified with --alter of users, clients, "
                             "brokers or ips")
    elif not any(names):
        raise UsageError(f"An entity name must be specified with --alter of {','.join(types)}")
    if options.has("add-config") and options.has("add-config-file"):
        raise UsageError("Only one of --add-config or --add-config-file must be specified")
    if not any(options.has(f) for f in ("add-config", "add-config-file", "delete-config")):
        raise UsageError("At least one of --add-config, --add-config-file, or --delete-config must be specified "
                         "with --alter")
    if len(types) != len(names):
        raise UsageError("An entity name must be specified for every entity type")


def _is_int(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return -(2**31) <= int(text) < 2**31


_OUTSIDE_BRACKETS = r"(?=[^\]]*(?:\[|$))"
BAD_ENTRY = ('Invalid entity config: all configs to be added must be in the format "key=val" or  '
             '"key=[val1,val2]" to group values which contain commas.')


def parse_add_config(text: str) -> dict[str, str]:
    """Kafka's parseConfigsToBeAdded for `--add-config`: {key: value}."""
    found: dict[str, str] = {}
    for entry in re.split("," + _OUTSIDE_BRACKETS, text):
        parts = re.split(r"\s*=\s*" + _OUTSIDE_BRACKETS, entry)
        if len(parts) != 2:
            raise UsageError(BAD_ENTRY)
        found[parts[0].strip()] = re.sub(r"\[?\]?", "", parts[1]).strip()
    check_keys(found)
    return found


def check_keys(configs: dict[str, str]) -> None:
    for key in configs:
        if not re.fullmatch(r"[a-zA-Z0-9._-]*", key):
            raise UsageError(f"Invalid character found for config key: {key}")
