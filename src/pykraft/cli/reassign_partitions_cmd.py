"""`pykraft reassign-partitions`: Kafka's kafka-reassign-partitions (tools/.../reassign/ReassignPartitionsCommand) with
its flags, JSON files, texts and exit codes; a kafka-reassign-partitions.sh line runs with `pykraft
reassign-partitions` in its place. The JSON formats, the --generate placement and the texts are reassign_plan.py's.

Actions (exactly one): --generate --topics-to-move-json-file F --broker-list 1,2,3 [--disable-rack-aware];
--execute --reassignment-json-file F [--additional] [--disallow-replication-factor-change] [--timeout MS] (prints
the current assignment for rollback, refuses while other reassignments run unless --additional); --verify
--reassignment-json-file F [--preserve-throttles]; --cancel --reassignment-json-file F [--preserve-throttles]
[--timeout MS]; --list. --bootstrap-server (any action) or --bootstrap-controller (--cancel and --list, as Kafka),
--command-config for the admin client.

"log_dirs" naming a directory moves that replica into it (AlterReplicaLogDirs, reassign_log_dirs.py; --timeout
bounds the wait for a replica the partition move has not brought yet). What pykraft does not implement is refused
with one line rather than ignored: --throttle and --replica-alter-log-dirs-throttle with a rate (-1, Kafka's "no
throttle", is accepted). Since no throttle can be set, the "Clearing ... throttles" step of --verify and --cancel
has nothing to remove: it prints Kafka's lines and sends nothing.

Exit status 0, or 1 with one line: usage problems on stderr (`pykraft reassign-partitions: <Kafka's text>`),
failures on stdout as `Error: <text>` (Kafka's main); per-partition refusals as Kafka's report ("Error reassigning
partition(s):" then one line per partition).
"""

from __future__ import annotations

import random
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field

from . import reassign_actions as actions
from .reassign_plan import PlanError

PROG = "pykraft reassign-partitions"
ACTIONS = ("generate", "execute", "verify", "cancel", "list")
FLAGS = frozenset({*ACTIONS, "disable-rack-aware", "additional", "preserve-throttles",
                   "disallow-replication-factor-change", "help", "version"})
VALUED = frozenset({"bootstrap-server", "bootstrap-controller", "command-config", "reassignment-json-file",
                    "topics-to-move-json-file", "broker-list", "throttle", "replica-alter-log-dirs-throttle",
                    "timeout"})
REQUIRED = {"verify": ("reassignment-json-file",), "generate": ("topics-to-move-json-file", "broker-list"),
            "execute": ("reassignment-json-file",), "cancel": ("reassignment-json-file",), "list": ()}
PERMITTED = {
    "verify": ("bootstrap-server", "command-config", "preserve-throttles"),
    "generate": ("bootstrap-server", "broker-list", "command-config", "disable-rack-aware"),
    "execute": ("additional", "bootstrap-server", "command-config", "throttle", "replica-alter-log-dirs-throttle",
                "timeout", "disallow-replication-factor-change"),
    "cancel": ("command-config", "preserve-throttles", "timeout"),
    "list": ("command-config",),
}
USAGE = ("Usage: pykraft reassign-partitions (--generate | --execute | --verify | --cancel | --list) "
         "(--bootstrap-server H:P | --bootstrap-controller H:P) [--command-config F] [--reassignment-json-file F] "
         "[--topics-to-move-json-file F --broker-list IDS] [--additional] [--disable-rack-aware] "
         "[--preserve-throttles] [--disallow-replication-factor-change] [--timeout MS]\n"
         "This tool helps to move topic partitions between replicas.")


class UsageError(Exception):
    """A command line Kafka's option checks refuse: one stderr line, exit 1."""


@dataclass
class Options:
    given: dict[str, str | None] = field(default_factory=dict)

    def has(self, name: str) -> bool:
        return name in self.given

    def value(self, name: str) -> str | None:
        return self.given.get(name)

    def long(self, name: str, default: int) -> int:
        text = self.given.get(name)
        if text is None:
            return default
        try:
            return int(text)
        except ValueError:
            raise UsageError(f"Cannot parse argument '{text}' of option {name}") from None


def parse(args: Sequence[str]) -> Options:
    options = Options()
    items = list(args)
    while items:
        item = items.pop(0)
        if not item.startswith("--"):
            raise UsageError(f"Found non-option argument {item!r}")
        name, sep, inline = item[2:].partition("=")
        if name in FLAGS and not sep:
            options.given[name] = None
        elif name in VALUED:
            if not sep and not items:
                raise UsageError(f"Option {name} requires an argument")
            options.given[name] = inline if sep else items.pop(0)
        else:
            raise UsageError(f"{name} is not a recognized option")
    return options


def validate(options: Options) -> str:
    """Kafka's validateAndParseArgs: the action, the bootstrap flag, required and permitted options."""
    chosen = [a for a in ACTIONS if options.has(a)]
    if len(chosen) != 1:
        raise UsageError("Command must include exactly one action: " + ", ".join(f"--{a}" for a in ACTIONS))
    action = chosen[0]
    server, controller = options.has("bootstrap-server"), options.has("bootstrap-controller")
    if server and controller:
        raise UsageError("Please don't specify both --bootstrap-server and --bootstrap-controller")
    if not server and not controller:
        raise UsageError("Please specify either --bootstrap-server or --bootstrap-controller")
    for name in REQUIRED[action]:
        if not options.has(name):
            raise UsageError(f'Missing required argument "[{name}]"')
    bootstrap = ("bootstrap-server",) if server or action not in ("cancel", "list") else ("bootstrap-controller",)
    allowed = {action, *REQUIRED[action], *PERMITTED[action], *bootstrap}
    for name in options.given:
        if name not in allowed:
            raise UsageError(f'Option "[{name}]" can\'t be used with action "[{action}]"')
    return action


def run(args: Sequence[str], rng: random.Random | None = None) -> int:
    try:
        options = parse(args)
        if options.has("help") or not args:
            print(USAGE)
            return 0
        if options.has("version"):
            from importlib.metadata import version
            print(version("pykraft"))
            return 0
        action = validate(options)
        refuse_unsupported(options)
    except UsageError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 1
    try:
        actions.run(action, options, rng or random.Random())
    except (PlanError, actions.ToolError) as exc:
        print(str(exc) if isinstance(exc, actions.Report) else f"Error: {' '.join(str(exc).split())}")
        return 1
    return 0


def refuse_unsupported(options: Options) -> None:
    """What pykraft does not implement must not be silently ignored (see the module docstring); --timeout is read
    here too, so that a bad value is a usage error."""
    options.long("timeout", 10_000)
    for name, what in (("throttle", "replication throttling (leader/follower.replication.throttled.rate)"),
                       ("replica-alter-log-dirs-throttle", "throttling of replica moves between log directories "
                                                           "(replica.alter.log.dirs.io.max.bytes.per.second)")):
        if options.long(name, -1) >= 0:
            raise UsageError(f"--{name} is not supported: pykraft does not implement {what}")
