"""`pykraft topics create|delete|describe|list`: Kafka's kafka-topics with its flag names and output
(topics_output.py), as sub-commands instead of --create/--delete/--describe/--list.

Connection flags (--bootstrap-server or --bootstrap-controller, --command-config with security.protocol, ssl.*
and timeouts) are metadata-quorum's (`Connection`, `run_admin`) and go before or after the sub-command.
--topic is a regular expression for delete and describe (and list), as in Kafka; a pattern that matches nothing
fails with "Topic 'x' does not exist as expected" unless --if-exists.

Every failure is one line on stderr and exit 1: flag values Kafka checks itself print Kafka's message as is
(e.g. `The partitions must be greater than 0`); server refusals and connection failures print
`Error while executing topic command : <message>` (Kafka prints that one on stdout; we keep stdout for results).
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
from .metadata_quorum_cmd import BootstrapController, BootstrapServer, Connection, ToolFailure, invoke, run_admin

T = TypeVar("T")
PROG = "pykraft topics"
EXIT_FAILURE = 1

app = typer.Typer(name="topics", add_completion=False, pretty_exceptions_enable=False,
                  help="Create, delete, describe and list topics (Kafka's kafka-topics).")


CommandConfig = Annotated[Path | None, typer.Option(
    "--command-config", help="Properties for the admin client (security.protocol, ssl.*, timeouts).")]


class KafkaLine(Exception):
    """Print `str()` as the one stderr line, without the program prefix (Kafka's own wording), and exit 1."""


def run(args: Sequence[str]) -> int:
    return run_app(app, args, PROG)


def run_app(typer_app: typer.Typer, args: Sequence[str], prog: str) -> int:
    try:
        return invoke(typer_app, args, prog)
    except KafkaLine as line:
        typer.echo(str(line), err=True)
        return EXIT_FAILURE


@app.callback()
def options(ctx: typer.Context, bootstrap_server: BootstrapServer = None,
            bootstrap_controller: BootstrapController = None, command_config: CommandConfig = None) -> None:
    ctx.obj = Connection(bootstrap_controller, bootstrap_server, command_config)


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
        return out.describe_lines(found, live, under_replicated=under_replicated, unavailable=unavailable)

    for line in admin_call(conn, operation):
        typer.echo(line)
