"""`pykraft topics`: Kafka's kafka-topics with its flag names and output (topics_output.py), in two forms:
- Kafka's action flags: `pykraft topics --create --topic t --bootstrap-server H:P ...` (exactly one of --create,
  --delete, --describe, --list, --alter, anywhere on the line), so a kafka-topics.sh line runs as it is;
- sub-commands: `pykraft topics create --topic t ...` (and delete, describe, list, alter).

Connection flags (--bootstrap-server or --bootstrap-controller, --command-config with security.protocol, ssl.*
and timeouts) are metadata-quorum's (`Connection`, `run_admin`) and go before or after the sub-command.
--topic is a regular expression for delete and describe (and list), as in Kafka; a pattern that matches nothing
fails with "Topic 'x' does not exist as expected" unless --if-exists.

Every failure is one line and exit 1, where Kafka prints it: usage and argument problems Kafka checks itself on
stderr, in Kafka's words (e.g. `The partitions must be greater than 0`, `Topic 'x' does not exist as expected`);
what fails while executing (server refusals, unreachable servers, bad --replica-assignment values) on stdout as
`Error while executing topic command : <message>` (Kafka's printException). --alter grows a topic's partition count
(`--partitions N`, optionally `--replica-assignment` for every partition, the existing ones first, as Kafka reads
it) and prints nothing, as Kafka.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Annotated, TypeVar

import typer

from pykraft.admin.client import AdminClient
from pykraft.admin.errors import TopicError
from pykraft.admin.model import TopicDescription
from pykraft.protocol.errors import ErrorCode

from . import topics_output as out
from .metadata_quorum_cmd import (BootstrapController, BootstrapServer, Connection, Timeout, ToolFailure, invoke,
                                  run_admin)

T = TypeVar("T")
PROG = "pykraft topics"
EXIT_FAILURE = 1

app = typer.Typer(name="topics", add_completion=False, pretty_exceptions_enable=False,
                  help="Create, delete, describe and list topics (Kafka's kafka-topics).")


CommandConfig = Annotated[Path | None, typer.Option(
    "--command-config", help="Properties for the admin client (security.protocol, ssl.*, timeouts).")]


ACTIONS = {"--create": "create", "--delete": "delete", "--describe": "describe", "--list": "list",
           "--alter": "alter"}
ONE_ACTION = "Command must include exactly one action: --list, --describe, --create, --alter or --delete"


class KafkaLine(Exception):
    """Print `str()` as the one line, without the program prefix (Kafka's own wording), and exit 1: on stdout when
    it is Kafka's "Error while executing topic command" line (printException), on stderr otherwise."""


def run(args: Sequence[str]) -> int:
    try:
        return run_app(app, action_form(args), PROG)
    except KafkaLine as line:
        return _print_failure(line)


def action_form(args: Sequence[str]) -> list[str]:
    """Kafka's flag form turned into the sub-command form (the action flag becomes the sub-command, first); a line
    without an action flag is returned as it is (the sub-command form). KafkaLine: more than one action flag.
    pykraft's --timeout (a group option) moves to the front wherever it stands."""
    args, timeout = _take_timeout(list(args))
    return timeout + _action_form(args)


def _take_timeout(args: list[str]) -> tuple[list[str], list[str]]:
    for index, word in enumerate(args):
        if word == "--timeout" and index + 1 < len(args):
            return args[:index] + args[index + 2:], args[index:index + 2]
        if word.startswith("--timeout="):
            return args[:index] + args[index + 1:], [word]
    return args, []


def _action_form(args: Sequence[str]) -> list[str]:
    actions = [a for a in args if a in ACTIONS]
    has_command = any(a in ACTIONS.values() and _is_command_position(args, a) for a in args)
    if not actions:
        if has_command or not args or "--help" in args:
            return list(args)
        raise KafkaLine(ONE_ACTION)
    if len(actions) > 1 or has_command:
        raise KafkaLine(ONE_ACTION)
    return [ACTIONS[actions[0]], *(a for a in args if a not in ACTIONS)]


def _is_command_position(args: Sequence[str], word: str) -> bool:
    """True when `word` stands where a sub-command would (not as the value of the option before it)."""
    index = list(args).index(word)
    return index == 0 or not args[index - 1].startswith("--") or args[index - 1] in ACTIONS


def _print_failure(line: KafkaLine) -> int:
    text = str(line)
    typer.echo(text, err=not text.startswith(out.ERROR_PREFIX))
    return EXIT_FAILURE


def run_app(typer_app: typer.Typer, args: Sequence[str], prog: str) -> int:
    try:
        return invoke(typer_app, args, prog)
    except KafkaLine as line:
        return _print_failure(line)


@app.callback(invoke_without_command=True)
def options(ctx: typer.Context, bootstrap_server: BootstrapServer = None,
            bootstrap_controller: BootstrapController = None, command_config: CommandConfig = None,
            timeout: Timeout = None) -> None:
    ctx.obj = Connection(bootstrap_controller, bootstrap_server, command_config, timeout)
    if ctx.invoked_subcommand is None:
        raise KafkaLine(ONE_ACTION)


def connection(ctx: typer.Context, bootstrap_server: str | None, bootstrap_controller: str | None,
               command_config) -> Connection:
    """The group's flags, overridden by the same flags given after the sub-command."""
    group: Connection = ctx.obj or Connection(None, None, None)
    conn = group.overridden_by(bootstrap_controller, bootstrap_server, command_config)
    if conn.bootstrap_server is None and conn.bootstrap_controller is None:
        raise KafkaLine("--bootstrap-server must be specified")
    return conn


def admin_call(conn: Connection, operation: Callable[[AdminClient], Awaitable[T]]) -> T:
    """run_admin with Kafka's error line: a topic refusal prints the server's message, anything else ours."""
    async def guarded(client: AdminClient) -> T:
        try:
            return await operation(client)
        except TopicError as exc:
            raise KafkaLine(out.ERROR_PREFIX + (exc.message or exc.code.name)) from None

    try:
        return run_admin(conn, guarded)
    except ToolFailure as failure:
        raise KafkaLine(out.ERROR_PREFIX + " ".join(str(failure).split())) from None


def _flag(check: Callable[[], T]) -> T:
    try:
        return check()
    except out.FlagError as exc:
        raise KafkaLine(str(exc)) from None


Topic = Annotated[str | None, typer.Option("--topic", help="The topic; a regular expression except for create.")]
IfExists = Annotated[bool, typer.Option("--if-exists", help="Only act if the topic exists (no error otherwise).")]
ExcludeInternal = Annotated[bool, typer.Option("--exclude-internal", help="Leave out internal topics.")]


@app.command("create")
def create(
    ctx: typer.Context,
    topic: Annotated[str, typer.Option("--topic", help="The topic to create.")],
    partitions: Annotated[int | None, typer.Option("--partitions", help="Partitions (default: the cluster's).")]
    = None,
    replication_factor: Annotated[int | None, typer.Option(
        "--replication-factor", help="Replicas per partition (default: the cluster's).")] = None,
    replica_assignment: Annotated[str | None, typer.Option(
        "--replica-assignment", help="Manual placement, e.g. 1:2,2:3 (partition 0 on 1 and 2, ...).")] = None,
    config: Annotated[list[str] | None, typer.Option("--config", help="A topic config as key=value "
                                                     "(repeatable).")] = None,
    if_not_exists: Annotated[bool, typer.Option("--if-not-exists", help="No error if the topic exists.")] = False,
    bootstrap_server: BootstrapServer = None, bootstrap_controller: BootstrapController = None,
    command_config: CommandConfig = None,
) -> None:
    """Create a topic."""
    conn = connection(ctx, bootstrap_server, bootstrap_controller, command_config)
    assignment = None
    if replica_assignment:
        for name, value in (("partitions", partitions), ("replication-factor", replication_factor)):
            if value is not None:
                raise KafkaLine(f'Option "[replica-assignment]" can\'t be used with option "[{name}]"')
        assignment = _flag(lambda: out.parse_replica_assignment(replica_assignment))
    configs = _flag(lambda: out.parse_configs(config or []))
    if out.has_collision_chars(topic):
        typer.echo(out.COLLISION_WARNING)
    if replication_factor is not None and not 1 <= replication_factor <= out.MAX_REPLICATION_FACTOR:
        raise KafkaLine(f"The replication factor must be between 1 and {out.MAX_REPLICATION_FACTOR} inclusive")
    if partitions is not None and partitions < 1:
        raise KafkaLine("The partitions must be greater than 0")

    async def operation(client: AdminClient) -> bool:
        try:
            await client.create_topics(topic, partitions, replication_factor, assignment, configs)
        except TopicError as exc:
            if if_not_exists and exc.code == ErrorCode.TOPIC_ALREADY_EXISTS:
                return False  # Kafka prints nothing then
            raise
        return True

    if admin_call(conn, operation):
        typer.echo(out.created_line(topic))


async def _matching(client: AdminClient, pattern: str | None, exclude_internal: bool,
                    if_exists: bool) -> list[TopicDescription]:
    allowed = _flag(lambda: out.topic_filter(pattern, exclude_internal))
    found = [t for t in await client.describe_topics() if allowed(t)]
    if pattern and not found and not if_exists:
        raise KafkaLine(f"Topic '{pattern}' does not exist as expected")
    return found


@app.command("delete")
def delete(
    ctx: typer.Context,
    topic: Annotated[str, typer.Option("--topic", help="The topic(s) to delete: a regular expression.")],
    if_exists: IfExists = False,
    bootstrap_server: BootstrapServer = None, bootstrap_controller: BootstrapController = None,
    command_config: CommandConfig = None,
) -> None:
    """Delete the topics --topic matches (Kafka prints nothing on success)."""
    conn = connection(ctx, bootstrap_server, bootstrap_controller, command_config)

    async def operation(client: AdminClient) -> None:
        found = await _matching(client, topic, False, if_exists)
        ids: list[str | uuid.UUID] = [t.topic_id if t.topic_id is not None else t.name for t in found]
        if ids:
            await client.delete_topics(ids)

    admin_call(conn, operation)


@app.command("list")
def list_topics(
    ctx: typer.Context,
    topic: Topic = None,
    exclude_internal: ExcludeInternal = False,
    bootstrap_server: BootstrapServer = None, bootstrap_controller: BootstrapController = None,
    command_config: CommandConfig = None,
) -> None:
    """List the topic names, sorted."""
    conn = connection(ctx, bootstrap_server, bootstrap_controller, command_config)
    allowed = _flag(lambda: out.topic_filter(topic, exclude_internal))
    found = admin_call(conn, lambda client: client.describe_topics())
    typer.echo("\n".join(t.name for t in found if allowed(t)))  # an empty list still prints a line, as Kafka's


@app.command("describe")
def describe(
    ctx: typer.Context,
    topic: Topic = None,
    if_exists: IfExists = False,
    exclude_internal: ExcludeInternal = False,
    under_replicated: Annotated[bool, typer.Option(
        "--under-replicated-partitions", help="Only partitions whose ISR is smaller than the replicas.")] = False,
    unavailable: Annotated[bool, typer.Option(
        "--unavailable-partitions", help="Only partitions without a leader on a live broker.")] = False,
    bootstrap_server: BootstrapServer = None, bootstrap_controller: BootstrapController = None,
    command_config: CommandConfig = None,
) -> None:
    """Describe the topics (all, or those --topic matches) and their partitions."""
    conn = connection(ctx, bootstrap_server, bootstrap_controller, command_config)

    async def operation(client: AdminClient) -> list[str]:
        found = await _matching(client, topic, exclude_internal, if_exists)
        live = {b.broker_id for b in await client.list_brokers() if not b.fenced} if unavailable else set()
        configs = await client.topic_configs([t.name for t in found]) if found else {}
        return out.describe_lines(found, live, under_replicated=under_replicated, unavailable=unavailable,
                                  configs=configs)

    for line in admin_call(conn, operation):
        typer.echo(line)


@app.command("alter")
def alter(
    ctx: typer.Context,
    topic: Annotated[str | None, typer.Option("--topic", help="The topic(s) to alter: a regular expression.")] = None,
    partitions: Annotated[int | None, typer.Option("--partitions", help="The new partition count.")] = None,
    replica_assignment: Annotated[str | None, typer.Option(
        "--replica-assignment", help="Replicas of every partition, e.g. 1:2,2:3,3:1 (existing ones first).")] = None,
    if_exists: IfExists = False,
    bootstrap_server: BootstrapServer = None, bootstrap_controller: BootstrapController = None,
    command_config: CommandConfig = None,
) -> None:
    """Add partitions to the topics --topic matches (Kafka prints nothing on success)."""
    conn = connection(ctx, bootstrap_server, bootstrap_controller, command_config)
    if topic is None:
        raise KafkaLine('Missing required argument "[topic]"')
    if partitions is None:
        raise KafkaLine('Missing required argument "[partitions]"')
    assignment = _flag(lambda: out.parse_replica_assignment(replica_assignment)) if replica_assignment else None

    async def operation(client: AdminClient) -> None:
        for found in await _matching(client, topic, False, if_exists):
            new = None if assignment is None else assignment[len(found.partitions):]  # Kafka skips existing ones
            await client.create_partitions(found.name, partitions, new)

    admin_call(conn, operation)
