"""`pykraft consumer-groups`: Kafka's kafka-consumer-groups, a kafka-consumer-groups.sh line run unchanged.

Actions (exactly one): --list [--state [S,...]] [--type [T,...]], --describe (--group G... | --all-groups) with
--offsets (the default), --members [--verbose] or --state, --delete, --reset-offsets (reset_offsets.py) with
--dry-run (the default) / --execute / --export, --delete-offsets --group G --topic T[:P,...]. Flags, checks and
texts are Kafka's (ConsumerGroupCommandOptions, ConsumerGroupCommand); the tables are in consumer_groups_output.py.

Output streams as Kafka's: tables on stdout, "Consumer group 'g' has no active members." and "is rebalancing"
notices on stderr, and Kafka's "\\nError: ..." lines on stdout. Exit status: 1 for a usage problem (Kafka's), and
1 too when an "Error:" line was printed (a group that does not exist, a reset refused because the group is active,
a failed deletion, a dead cluster): Kafka's tool prints these and still exits 0, which leaves a script no way to
tell; pykraft's rule is that a command that could not do what it was asked says so and exits non-zero.
--timeout (milliseconds, default 5000 as Kafka's) bounds each request to the cluster, retries included.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from pykraft.admin import groups as group_admin
from pykraft.admin.brokers import BrokerClient
from pykraft.admin.error_texts import exception_text, message_of
from pykraft.admin.partition_calls import LATEST, list_offsets
from pykraft.protocol.errors import ErrorCode

from . import consumer_groups_output as out
from .broker_tool import read_properties, run_with_client
from .kafka_args import OPTIONAL, REQUIRED, Flag, Options, ToolError, UsageError, refuse_with, require, run_tool
from .reset_offsets import SCENARIOS, ResetFailure, ResetSpec, parse_reset_csv, partitions_in_scope, plan_reset

PROG = "pykraft consumer-groups"
DESCRIPTION = ("This tool helps to list all consumer groups, describe a consumer group, delete consumer group info, "
               "or reset consumer group offsets.")
ACTIONS = ("list", "describe", "delete", "reset-offsets", "delete-offsets")
FLAGS = (
    Flag("bootstrap-server", "REQUIRED: The server(s) to connect to.", REQUIRED, "server to connect to"),
    Flag("group", "The consumer group we wish to act on.", REQUIRED, "consumer group", many=True),
    Flag("topic", "The topic whose consumer group information should be deleted or topic whose should be included "
                  "in the reset offset process (topic1:0,1,2 for partitions).", REQUIRED, "topic", many=True),
    Flag("all-topics", "Consider all topics assigned to a group in the `reset-offsets` process."),
    Flag("list", "List all consumer groups."),
    Flag("describe", "Describe consumer group and list offset lag (number of messages not yet processed)."),
    Flag("all-groups", "Apply to all consumer groups."),
    Flag("delete", "Pass in groups to delete topic partition offsets and ownership information over the entire "
                   "consumer group."),
    Flag("timeout", "The maximum time in milliseconds to wait for the cluster's answers.", REQUIRED, "timeout (ms)",
         default="5000", kind=int),
    Flag("command-config", "Property file containing configs to be passed to Admin Client and Consumer.", REQUIRED,
         "command config property file"),
    Flag("reset-offsets", "Reset offsets of consumer group (--dry-run by default, --execute to apply)."),
    Flag("delete-offsets", "Delete offsets of consumer group. Supports one consumer group at the time, and multiple "
                           "topics."),
    Flag("dry-run", "Only show results without executing changes on Consumer Groups."),
    Flag("execute", "Execute operation. Supported operations: reset-offsets."),
    Flag("export", "Export operation execution to a CSV file. Supported operations: reset-offsets."),
    Flag("to-offset", "Reset offsets to a specific offset.", REQUIRED, "offset", kind=int),
    Flag("from-file", "Reset offsets to values defined in CSV file.", REQUIRED, "path to CSV file"),
    Flag("to-datetime", "Reset offsets to offset from datetime. Format: 'YYYY-MM-DDTHH:mm:SS.sss'", REQUIRED,
         "datetime"),
    Flag("by-duration", "Reset offsets to offset by duration from current timestamp. Format: 'PnDTnHnMnS'", REQUIRED,
         "duration"),
    Flag("to-earliest", "Reset offsets to earliest offset."),
    Flag("to-latest", "Reset offsets to latest offset."),
    Flag("to-current", "Reset offsets to current offset."),
    Flag("shift-by", "Reset offsets shifting current offset by 'n', where 'n' can be positive or negative.",
         REQUIRED, "number-of-offsets", kind=int),
    Flag("members", "Describe members of the group."),
    Flag("verbose", "Provide additional information, if any, when describing the group."),
    Flag("offsets", "Describe the group and list all topic partitions in the group along with their offset lag."),
    Flag("state", "With --describe, the state of the group; with --list, the state of all groups, or only those "
                  "in the given states.", OPTIONAL, "state"),
    Flag("type", "With --list, the types of all groups, or only those of the given types.", OPTIONAL, "type"),
)


def run(args: Sequence[str]) -> int:
    return run_tool(PROG, DESCRIPTION, FLAGS, args, main)


def _unavailable(options: Options, flag: str, *needs: str) -> None:
    if options.has(flag) and not any(options.has(n) for n in needs):
        raise UsageError(f"Option(s) [{flag}] are unavailable given other options on the command line")


def check(options: Options) -> None:
    """Kafka's checkArgs and main's action check, in their order."""
    for flag, needs in (("members", ("describe",)), ("verbose", ("describe",)), ("offsets", ("describe",)),
                        ("state", ("describe", "list")), ("type", ("list",))):
        _unavailable(options, flag, *needs)
    require(options, "bootstrap-server")
    scope = "[group], [all-groups]"
    if options.has("describe"):
        if not options.has("group") and not options.has("all-groups"):
            raise UsageError(f"Option [describe] takes one of these options: {scope}")
        if sum(options.has(o) for o in ("members", "offsets", "state")) > 1:
            raise UsageError("Option [describe] takes at most one of these options: [members], [offsets], [state]")
        if options.has("state") and options.get("state") is not None:
            raise UsageError("Option [describe] does not take a value for [state]")
    if options.has("delete"):
        if not options.has("group") and not options.has("all-groups"):
            raise UsageError(f"Option [delete] takes one of these options: {scope}")
        if options.has("topic"):
            raise UsageError("The consumer does not support topic-specific offset deletion from a consumer group.")
    if options.has("delete-offsets") and not (options.has("group") and options.has("topic")):
        raise UsageError("Option [delete-offsets] takes the following options: [group], [topic]")
    if options.has("reset-offsets"):
        _check_reset(options, scope)
    refuse_with(options, "group", "all-groups")
    refuse_with(options, "group", "list")
    refuse_with(options, "topic", "list", "describe")
    if sum(options.has(a) for a in ACTIONS) != 1:
        raise UsageError(out.ONE_ACTION)


def _check_reset(options: Options, scope: str) -> None:
    if options.has("dry-run") and options.has("execute"):
        raise UsageError("Option [reset-offsets] only accepts one of [execute] and [dry-run]")
    if not options.has("dry-run") and not options.has("execute"):
        print(out.NO_EXECUTE_WARNING, file=sys.stderr)
    if not options.has("group") and not options.has("all-groups"):
        raise UsageError(f"Option [reset-offsets] takes one of these options: {scope}")
    for scenario in SCENARIOS:
        refuse_with(options, scenario, *(s for s in SCENARIOS if s != scenario))


def main(options: Options) -> int:
    check(options)
    props = read_properties(options.get("command-config"))
    timeout = options.integer("timeout")

    def failure(text: str) -> ToolError:
        return ToolError(f"\nError: Executing consumer group command failed due to {text}", 1, "stdout")

    async def operation(client: BrokerClient) -> int:
        try:
            return await _dispatch(client, options)
        except ResetFailure as exc:
            raise failure(str(exc)) from None

    return run_with_client(PROG, options.get("bootstrap-server"), props, operation, failure, deadline_ms=timeout)


async def _dispatch(client: BrokerClient, options: Options) -> int:
    if options.has("list"):
        return await _list(client, options)
    groups = (await _all_group_ids(client)) if options.has("all-groups") else list(dict.fromkeys(options.all("group")))
    if options.has("describe"):
        return await _describe(client, options, groups)
    if options.has("delete"):
        return await _delete(client, groups)
    if options.has("delete-offsets"):
        return await _delete_offsets(client, groups[0], options.all("topic"))
    return await _reset(client, options, groups)


async def _all_group_ids(client: BrokerClient) -> list[str]:
    return [g.group_id for g in await group_admin.list_groups(client)]


def _parse_filter(text: str | None, valid: Sequence[str], what: str) -> list[str]:
    if not text:
        return []
    names = [s.strip() for s in text.split(",")]
    lookup = {v.lower(): v for v in valid}
    if any(n.lower() not in lookup for n in names):
        raise UsageError(f"Invalid {what} list '{text}'. Valid {what}s are: {', '.join(valid)}")
    return [lookup[n.lower()] for n in names]


async def _list(client: BrokerClient, options: Options) -> int:
    with_state, with_type = options.has("state"), options.has("type")
    states = _parse_filter(options.get("state"), out.GROUP_STATES, "state")
    types = _parse_filter(options.get("type"), out.GROUP_TYPES, "type")
    listings = await group_admin.list_groups(client, states, types)
    if not (with_state or with_type):
        for listing in listings:
            print(listing.group_id)
        return 0
    for line in out.listing_table([(g.group_id, g.group_type, g.state) for g in listings], with_type, with_state):
        print(line)
    return 0


def _report(group: str, state: str | None, rows: int | None) -> tuple[bool, bool]:
    """Print Kafka's state notice for a group; (print its table?, was it an error?)."""
    error, notice, show = out.state_message(group, state, rows)
    if notice:
        print(notice, file=sys.stderr)
    if error:
        print(error)
    return show, error is not None


async def _describe(client: BrokerClient, options: Options, groups: list[str]) -> int:
    described = await group_admin.describe_groups(client, groups)
    verbose, failed = options.has("verbose"), False
    for group in sorted(described):
        description = described[group]
        if options.has("members"):
            rows = [out.MemberRow(group, m.member_id, m.instance_id or "", m.host, m.client_id, m.assignment,
                                  m.member_epoch, description.assignment_epoch, m.target_assignment)
                    for m in description.members]
            _, error = _report(group, description.state, len(rows))
            print(out.members_table(group, rows, verbose))  # Kafka prints the header even without members
        elif options.has("state"):
            show, error = _report(group, description.state, 1)
            if show:
                c = description.coordinator
                print(out.state_table(group, out.coordinator_text(c.host, c.port, c.node_id), description.assignor,
                                      description.state, len(description.members), verbose,
                                      (description.group_epoch, description.assignment_epoch)))
        else:
            offsets = await offset_rows(client, description)
            show, error = _report(group, description.state, len(offsets))
            if show:
                print(out.offsets_table(offsets, verbose))
        failed = failed or error
    return 1 if failed else 0


async def offset_rows(client: BrokerClient, description: group_admin.GroupDescription) -> list[out.OffsetRow]:
    """Kafka's collectGroupOffsets: members with partitions first (most partitions first), then the committed
    partitions no member holds; each with its committed offset and its log end offset."""
    group = description.group_id
    committed = await group_admin.committed_offsets(client, group)
    members = sorted((m for m in description.members if m.assignment), key=lambda m: -len(m.assignment))
    assigned = {tp for m in members for tp in m.assignment}
    unassigned = sorted(tp for tp in committed if tp not in assigned)
    wanted = [tp for m in members for tp in m.assignment] + unassigned
    ends = await list_offsets(client, {tp: LATEST for tp in wanted}) if wanted else {}

    def row(tp: tuple[str, int], consumer: str, host: str, client_id: str) -> out.OffsetRow:
        entry, end = committed.get(tp), ends.get(tp)
        log_end = end.offset if end is not None and end.error == ErrorCode.NONE else None
        return out.OffsetRow(group, tp[0], tp[1], entry.offset if entry else None, log_end, consumer, host,
                             client_id, entry.leader_epoch if entry else None)

    rows = []
    for member in members:
        rows += [row(tp, member.member_id, member.host, member.client_id) for tp in sorted(member.assignment)]
    rows += [row(tp, out.MISSING, out.MISSING, out.MISSING) for tp in unassigned]
    return rows


async def _delete(client: BrokerClient, groups: list[str]) -> int:
    results = await group_admin.delete_groups(client, groups)
    failed = {g: code for g, code in results.items() if code != ErrorCode.NONE}
    done = [g for g in results if g not in failed]
    if not failed:
        print("Deletion of requested consumer groups (" + ", ".join(f"'{g}'" for g in done) + ") was successful.")
        return 0
    print("\nError: Deletion of some consumer groups failed:")
    for group, code in failed.items():
        print(f"* Group '{group}' could not be deleted due to: {exception_text(code)}")
    if done:
        print("\nThese consumer groups were deleted successfully: " + ", ".join(f"'{g}'" for g in done))
    return 1


async def _delete_offsets(client: BrokerClient, group: str, topics: list[str]) -> int:
    from .reset_offsets import parse_topic_arg

    partitions = [tp for arg in topics if ":" in arg for tp in parse_topic_arg(arg)]
    whole = [t for t in topics if ":" not in t]
    results: dict[tuple[str, int], str | None] = {}
    if whole:
        metadata = await client.metadata(whole)
        for topic in whole:
            if topic in metadata.topics:
                partitions += [(topic, p.partition) for p in metadata.topics[topic].partitions]
            else:
                results[(topic, -1)] = exception_text(metadata.topic_errors.get(topic,
                                                                                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
    top, per_partition = await group_admin.delete_offsets(client, group, partitions)
    for tp, code in per_partition.items():
        results[tp] = None if code == ErrorCode.NONE else exception_text(code)
    if top == ErrorCode.NONE and any(v is not None for v in results.values()):
        top = next(c for c in per_partition.values() if c != ErrorCode.NONE) if any(
            c != ErrorCode.NONE for c in per_partition.values()) else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    if top == ErrorCode.NONE:
        print(f"Request succeeded for deleting offsets from group {group}.")
    elif top in (ErrorCode.INVALID_GROUP_ID, ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.GROUP_AUTHORIZATION_FAILED,
                 ErrorCode.NON_EMPTY_GROUP):
        print(f"\nError: {message_of(top)}")
    elif top in (ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC, ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                 ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
        print("\nError: Encountered some partition-level error, see the follow-up details.")
    else:
        print(f"\nError: Encountered some unknown error: {top.name}")
    sys.stdout.write(out.delete_offsets_table(results))
    return 0 if top == ErrorCode.NONE else 1


async def _reset(client: BrokerClient, options: Options, groups: list[str]) -> int:
    scenario = next((s for s in SCENARIOS if options.has(s)), None)
    if scenario is None:
        raise UsageError(f"Option '[reset-offsets]' requires one of the following scenarios: "
                         f"{', '.join(f'[{s}]' for s in SCENARIOS)}")
    plan_file = None
    if scenario == "from-file":
        path = options.get("from-file") or ""
        try:
            plan_file = parse_reset_csv(Path(path).read_text(encoding="utf-8"), groups)
        except OSError as exc:
            raise ResetFailure(f"java.nio.file.NoSuchFileException: {path}" if isinstance(exc, FileNotFoundError)
                               else f"{path}: {exc.strerror or exc}") from None
    spec = ResetSpec(scenario, options.get(scenario), plan_file)
    execute = options.has("execute") and not options.has("dry-run")
    described = await group_admin.describe_groups(client, groups)
    plan: dict[str, dict[tuple[str, int], int]] = {}
    failed = False
    for group in groups:
        state = described[group].state
        if state not in ("Empty", "Dead"):
            print(f"\nError: Assignments can only be reset if the group '{group}' is inactive, but the current "
                  f"state is {state}.")
            plan[group], failed = {}, True
            continue
        partitions = await partitions_in_scope(client, group, options.has("all-topics"), options.all("topic"),
                                               scenario == "from-file")
        offsets = await plan_reset(client, group, partitions, spec)
        if execute and offsets:
            errors = await group_admin.commit_offsets(client, group, offsets)
            refused = {tp: code for tp, code in errors.items() if code != ErrorCode.NONE}
            if refused:
                code = next(iter(refused.values()))
                raise ResetFailure(exception_text(code))
        plan[group] = offsets
    if options.has("export"):
        print(out.export_csv(plan, len(options.all("group")) == 1))
    else:
        sys.stdout.write(out.reset_table(plan))
    return 1 if failed else 0
