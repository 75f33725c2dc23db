"""The command line of `pykraft acls`, read as Kafka's AclCommand reads it (pure: no I/O): joptsimple-style flags
(`--flag value` or `--flag=value`, the repeatable ones repeatable), Kafka's checkArgs with its messages, and the
resources, ACLs and filters the flags stand for (getResourceFilterToAcls: --producer and --consumer conveniences, the
default host `*`, the operation `All`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pykraft.controller.acl_model import (
    CLUSTER_NAME,
    SUPPORTED_OPERATIONS,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from pykraft.protocol.principal import PrincipalError, parse_principal

__all__ = ["AclOptions", "UsageError", "acls_by_resource", "operation_name", "parse", "principals",
           "resource_filters"]

_VALUED = ("bootstrap-server", "bootstrap-controller", "command-config", "topic", "group", "transactional-id",
           "delegation-token", "user-principal", "resource-pattern-type", "operation", "allow-principal",
           "deny-principal", "principal", "allow-host", "deny-host")
_FLAGS = ("add", "remove", "list", "cluster", "producer", "consumer", "idempotent", "force", "help", "version")
_REPEATED = ("topic", "group", "transactional-id", "delegation-token", "user-principal", "operation",
             "allow-principal", "deny-principal", "principal", "allow-host", "deny-host")


class UsageError(Exception):
    """A command line Kafka's AclCommand refuses: the message is Kafka's."""


@dataclass
class AclOptions:
    values: dict[str, list[str]] = field(default_factory=dict)
    flags: set[str] = field(default_factory=set)

    def has(self, name: str) -> bool:
        return name in self.flags or name in self.values

    def value(self, name: str) -> str | None:
        found = self.values.get(name)
        return found[0] if found else None

    def values_of(self, name: str) -> list[str]:
        return [v.strip() for v in self.values.get(name, [])]

    @property
    def pattern_type(self) -> PatternType:
        text = self.value("resource-pattern-type") or "LITERAL"
        try:
            found = PatternType[text.strip().upper()]
        except KeyError:
            found = PatternType.UNKNOWN
        if found == PatternType.UNKNOWN:
            raise UsageError(f"Unknown resource-pattern-type: {text}")
        return found


def operation_name(operation: AclOperation) -> str:
    """Kafka's SecurityUtils.operationName: PascalCase (DescribeConfigs)."""
    return "".join(part.capitalize() for part in operation.name.split("_"))


def parse_operation(text: str) -> AclOperation:
    """Kafka's SecurityUtils.operation: PascalCase or upper case; UNKNOWN otherwise."""
    by_name = {operation_name(op): op for op in AclOperation}
    found = by_name.get(text) or by_name.get(text.upper()) or AclOperation.__members__.get(text.upper())
    return found if found is not None else AclOperation.UNKNOWN


def parse(args: Sequence[str]) -> AclOptions:
    options = AclOptions()
    items = list(args)
    i = 0
    while i < len(items):
        word = items[i]
        name, equals, inline = word[2:].partition("=") if word.startswith("--") else (word, "", "")
        if not word.startswith("--") or name not in (*_VALUED, *_FLAGS):
            raise UsageError(f"{name} is not a recognized option")
        if name in _FLAGS:
            options.flags.add(name)
        elif name == "principal" and not equals and (i + 1 >= len(items) or items[i + 1].startswith("--")):
            options.values.setdefault(name, [])  # --principal takes an optional argument
        else:
            if not equals:
                i += 1
                if i >= len(items):
                    raise UsageError(f"Option {name} requires an argument")
                inline = items[i]
            values = options.values.setdefault(name, [])
            values.append(inline) if name in _REPEATED or not values else values.__setitem__(0, inline)
        i += 1
    if not (options.has("help") or options.has("version")):
        _check(options)
    return options


def _check(options: AclOptions) -> None:
    """Kafka's AclCommandOptions.checkArgs."""
    has = options.has
    if has("bootstrap-server") and has("bootstrap-controller"):
        raise UsageError("Only one of --bootstrap-server or --bootstrap-controller must be specified")
    if not has("bootstrap-server") and not has("bootstrap-controller"):
        raise UsageError("One of --bootstrap-server or --bootstrap-controller must be specified")
    if sum(has(a) for a in ("add", "remove", "list")) != 1:
        raise UsageError("Command must include exactly one action: --list, --add, --remove. ")
    if has("list"):
        for other in ("producer", "consumer", "allow-host", "allow-principal", "deny-host", "deny-principal"):
            if has(other):
                raise UsageError(f'Option "[list]" can\'t be used with option "[{other}]"')
    for convenience in ("producer", "consumer"):
        for other in ("operation", "deny-principal", "deny-host"):
            if has(convenience) and has(other):
                raise UsageError(f'Option "[{convenience}]" can\'t be used with option "[{other}]"')
    if has("principal") and not has("list"):
        raise UsageError("The --principal option is only available if --list is set")
    if has("producer") and not has("topic"):
        raise UsageError("With --producer you must specify a --topic")
    if has("idempotent") and not has("producer"):
        raise UsageError("The --idempotent option is only available if --producer is set")
    if has("consumer") and (not has("topic") or not has("group") or (
            not has("producer") and (has("cluster") or has("transactional-id")))):
        raise UsageError("With --consumer you must specify a --topic and a --group and no --cluster or "
                         "--transactional-id option should be specified.")


Filter = tuple[ResourceType, str, PatternType]


def resource_filters(options: AclOptions, *, required: bool = True) -> list[Filter]:
    """Kafka's getResourceFilter: the resources (or patterns) the flags name, in Kafka's order."""
    pattern = options.pattern_type
    found: list[Filter] = [(ResourceType.TOPIC, t, pattern) for t in options.values_of("topic")]
    if pattern == PatternType.LITERAL and (options.has("cluster") or options.has("idempotent")):
        found.append((ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL))
    found += [(ResourceType.GROUP, g, pattern) for g in options.values_of("group")]
    found += [(ResourceType.TRANSACTIONAL_ID, t, pattern) for t in options.values.get("transactional-id", [])]
    found += [(ResourceType.DELEGATION_TOKEN, t, pattern) for t in options.values_of("delegation-token")]
    found += [(ResourceType.USER, u, pattern) for u in options.values_of("user-principal")]
    if not found and required:
        raise UsageError("You must provide at least one resource: --topic <topic> or --cluster or --group <group> or "
                         "--delegation-token <Delegation Token ID>")
    return list(dict.fromkeys(found))


def principals(options: AclOptions, flag: str) -> list[str]:
    found = []
    for text in options.values_of(flag):
        try:
            found.append(str(parse_principal(text)))
        except PrincipalError as exc:
            raise UsageError(str(exc)) from None
    return found


Entry = tuple[str, str, AclOperation, AclPermissionType]  # principal, host, operation, permission


def _entries(options: AclOptions, operations: set[AclOperation]) -> set[Entry]:
    """Kafka's getAcl: every (principal, host, operation) of the allowed and the denied principals."""
    entries: set[Entry] = set()
    for flag, host_flag, permission in (("allow-principal", "allow-host", AclPermissionType.ALLOW),
                                        ("deny-principal", "deny-host", AclPermissionType.DENY)):
        named = principals(options, flag)
        hosts = options.values_of(host_flag) or (["*"] if named else [])
        entries |= {(p, h, op, permission) for p in named for op in operations for h in hosts}
    return entries


def acls_by_resource(options: AclOptions) -> dict[Filter, set[Entry]]:
    """Kafka's getResourceFilterToAcls, with validateOperation."""
    found: dict[Filter, set[Entry]] = {}
    filters = resource_filters(options)
    if not options.has("producer") and not options.has("consumer"):
        operations = {parse_operation(o) for o in options.values_of("operation") or ["All"]}
        found = {f: _entries(options, operations) for f in filters}
    if options.has("producer"):
        topic_acls = _entries(options, {AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.CREATE})
        txn_acls = _entries(options, {AclOperation.WRITE, AclOperation.DESCRIBE})
        found.update({f: topic_acls for f in filters if f[0] == ResourceType.TOPIC})
        found.update({f: txn_acls for f in filters if f[0] == ResourceType.TRANSACTIONAL_ID})
        if options.has("idempotent"):
            found[(ResourceType.CLUSTER, CLUSTER_NAME, PatternType.LITERAL)] = _entries(
                options, {AclOperation.IDEMPOTENT_WRITE})
    if options.has("consumer"):
        for f in filters:
            if f[0] == ResourceType.TOPIC:
                found[f] = found.get(f, set()) | _entries(options, {AclOperation.READ, AclOperation.DESCRIBE})
            elif f[0] == ResourceType.GROUP:
                found[f] = found.get(f, set()) | _entries(options, {AclOperation.READ})
    for (kind, _name, _pattern), entries in found.items():
        valid = set(SUPPORTED_OPERATIONS[kind]) | {AclOperation.ALL}
        if any(op not in valid for _p, _h, op, _perm in entries):
            names = ", ".join(operation_name(op) for op in sorted(valid))
            raise UsageError(f"ResourceType {kind.name} only supports operations {names}")
    return found

