"""`pykraft metadata-quorum`: Kafka's kafka-metadata-quorum (describe, add-controller, remove-controller) plus
`reassign`. Output is Kafka's (quorum_output.py). Every failure is one line on stderr:
exit 1 for bad flags, unreachable bootstrap addresses and Kafka errors; exit 3 when a voter change's outcome is
unknown (it may or may not have been applied: check with `describe --status`).

The sub-app runs in click's non-standalone mode (`invoke`) so that usage errors, too, print one line instead
of click's usage block.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, TypeVar

import typer

from pykraft.admin.client import AdminClient
from pykraft.admin.connect import SettingsError, make_client, parse_directory_id, read_command_config
from pykraft.admin.errors import AdminClientError, OutcomeUnknownError

from . import quorum_output as out

T = TypeVar("T")
PROG = "pykraft metadata-quorum"
EXIT_FAILURE = 1
EXIT_OUTCOME_UNKNOWN = 3

app = typer.Typer(name="metadata-quorum", add_completion=False, pretty_exceptions_enable=False,
                  help="Describe the KRaft metadata quorum and change its voters (Kafka's kafka-metadata-quorum).")


class ToolFailure(Exception):
    """Print `message` as the one stderr line and exit with `code`."""

    def __init__(self, message: str, code: int = EXIT_FAILURE) -> None:
        super().__init__(message)
        self.code = code


def invoke(typer_app: typer.Typer, args: Sequence[str], prog: str) -> int:
    """Run a sub-app on `args`; return the exit code. Usage errors and failures are one line on stderr."""
    command = typer.main.get_command(typer_app)
    try:
        result = command.main(args=list(args) or ["--help"], prog_name=prog, standalone_mode=False)
    except ToolFailure as failure:
        typer.echo(f"{prog}: {' '.join(str(failure).split())}", err=True)
        return failure.code
    except typer.TyperException as exc:  # click's usage errors (typer vendors click; this is their public base)
        typer.echo(f"{prog}: {' '.join(exc.format_message().split())}", err=True)
        return EXIT_FAILURE
    except typer.Abort:
        typer.echo(f"{prog}: aborted", err=True)
        return EXIT_FAILURE
    return result if isinstance(result, int) else 0


def run(args: Sequence[str]) -> int:
    return invoke(app, args, PROG)


@dataclass(frozen=True, slots=True)
class Connection:
    bootstrap_controller: str | None
    bootstrap_server: str | None
    command_config: Path | None
    timeout_ms: int | None = None  # --timeout: the deadline of each operation (else default.api.timeout.ms)

    def overridden_by(self, bootstrap_controller: str | None, bootstrap_server: str | None,
                      command_config: Path | None) -> Connection:
        """These flags (a group's), each replaced by the same flag given after the sub-command."""
        return Connection(self.bootstrap_controller if bootstrap_controller is None else bootstrap_controller,
                          self.bootstrap_server if bootstrap_server is None else bootstrap_server,
                          self.command_config if command_config is None else command_config, self.timeout_ms)


def wait_notice(text: str) -> None:
    """A long wait for a dead bootstrap address says what it waits for (one stderr line, once)."""
    typer.echo(f"pykraft: {text}", err=True)


def run_admin(connection: Connection, operation: Callable[[AdminClient], Awaitable[T]]) -> T:
    """Build the admin client from the global flags, run `operation`, and turn errors into ToolFailure."""
    overrides: dict[str, object] = {"on_wait": wait_notice}
    if connection.timeout_ms is not None:
        overrides["deadline_ms"] = connection.timeout_ms
    try:
        props = read_command_config(connection.command_config)
        client = make_client(connection.bootstrap_controller, connection.bootstrap_server, props, **overrides)
    except SettingsError as exc:
        raise ToolFailure(str(exc)) from None

    async def go() -> T:
        async with client:
            return await operation(client)

    try:
        return asyncio.run(go())
    except OutcomeUnknownError as exc:
        raise ToolFailure(str(exc), EXIT_OUTCOME_UNKNOWN) from None
    except (AdminClientError, SettingsError) as exc:
        raise ToolFailure(str(exc)) from None


BootstrapServer = Annotated[str | None, typer.Option(
    "--bootstrap-server", help="Comma-separated HOST:PORT of brokers (requests are forwarded to the controller).")]
BootstrapController = Annotated[str | None, typer.Option(
    "--bootstrap-controller", help="Comma-separated HOST:PORT of controllers.")]
CommandConfig = Annotated[Path | None, typer.Option(
    "--command-config", help="Properties for the admin client (security.protocol, ssl.*, timeouts); for "
                             "add-controller, the new controller's own properties file.")]
Timeout = Annotated[int | None, typer.Option(
    "--timeout", min=1, help="Milliseconds each operation may take, retries included (pykraft's; default: the "
                             "command config's default.api.timeout.ms, 60000).")]


@app.callback()
def options(ctx: typer.Context, bootstrap_server: BootstrapServer = None,
            bootstrap_controller: BootstrapController = None, command_config: CommandConfig = None,
            timeout: Timeout = None) -> None:
    # The bootstrap flags are checked when a request is about to be sent (make_client): click runs this callback
    # before it parses the sub-command, so checking here would break `describe --help`.
    ctx.obj = Connection(bootstrap_controller, bootstrap_server, command_config, timeout)


@app.command("describe")
def describe(
    ctx: typer.Context,
    status: Annotated[bool, typer.Option("--status", help="A short summary of the quorum status.")] = False,
    replication: Annotated[bool, typer.Option("--replication", help="Replication state of every replica.")] = False,
    human_readable: Annotated[bool, typer.Option("--human-readable", help="Relative times (--replication).")] = False,
) -> None:
    """Describe the metadata quorum."""
    if status and replication:
        raise ToolFailure("Only one of --status or --replication should be specified with describe sub-command")
    if not status and not replication:
        raise ToolFailure("One of --status or --replication must be specified with describe sub-command")
    if status and human_readable:
        raise ToolFailure("The option --human-readable is only supported along with --replication")

    async def operation(client: AdminClient) -> str:
        if replication:
            info = await client.describe_quorum()
            return out.replication_table(info, human_readable=human_readable, now_ms=int(time.time() * 1000))
        cluster = await client.describe_cluster()
        return out.status_text(cluster.cluster_id, await client.describe_quorum())

    typer.echo(run_admin(ctx.obj, operation))


@app.command("add-controller")
def add_controller(
    ctx: typer.Context,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print what would be done, but do not do it.")] = False,
) -> None:
    """Add the controller described by --command-config to the voters (it must be running and caught up)."""
    from pykraft.admin.connect import read_new_controller

    connection: Connection = ctx.obj
    if connection.command_config is None:
        raise ToolFailure("You must supply the configuration file of the controller you are adding when using "
                          "add-controller.")
    try:
        identity = read_new_controller(connection.command_config)
    except SettingsError as exc:
        raise ToolFailure(str(exc)) from None
    if not dry_run:
        key = identity.key
        run_admin(connection, lambda client: client.add_voter(key.id, key.directory_id, identity.endpoints))
    typer.echo(out.added_controller_line(identity.key, identity.endpoints, dry_run))


@app.command("remove-controller")
def remove_controller(
    ctx: typer.Context,
    controller_id: Annotated[str, typer.Option("--controller-id", "-i", help="The id of the controller to remove.")],
    directory_id: Annotated[str, typer.Option("--controller-directory-id", "-d",
                                              help="The directory id of the controller to remove.")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print what would be done, but do not do it.")] = False,
) -> None:
    """Remove a controller (id and metadata directory id) from the voters."""
    from pykraft.raft.voter_set import ReplicaKey

    try:
        node_id = int(controller_id)
    except ValueError:
        raise ToolFailure(f"Invalid --controller-id: {controller_id}") from None
    if node_id < 0:
        raise ToolFailure(f"Invalid negative --controller-id: {node_id}")
    try:
        key = ReplicaKey(node_id, parse_directory_id(directory_id))
    except SettingsError as exc:
        raise ToolFailure(str(exc)) from None
    if not dry_run:
        run_admin(ctx.obj, lambda client: client.remove_voter(key.id, key.directory_id))
    typer.echo(out.removed_controller_line(key, dry_run))


@app.command("reassign")
def reassign_command(
    ctx: typer.Context,
    target_voters: Annotated[str | None, typer.Option(
        "--target-voters", help="The voter ids to end with: ID,ID,... (ID@HOST:PORT:DIRECTORY_ID items count by "
                                "their id)")] = None,
    cancel: Annotated[bool, typer.Option("--cancel", help="Cancel the reassignment in progress: the voters stay "
                                                          "as they are now.")] = False,
    show: Annotated[bool, typer.Option("--status", help="Show the reassignment in progress.")] = False,
    timeout_ms: Annotated[int, typer.Option("--timeout-ms", help="How long to report progress before giving up "
                                                                 "(the leader goes on).")] = 600_000,
) -> None:
    """Move the quorum to --target-voters (pykraft only: AlterPartitionReassignments on __cluster_metadata-0,
    KIP-642; the raft leader records the target and moves the voters one at a time, resuming after failovers)."""
    if (target_voters is not None) + cancel + show != 1:
        raise ToolFailure("give exactly one of --target-voters, --cancel or --status")
    if timeout_ms <= 0:
        raise ToolFailure(f"Invalid --timeout-ms: {timeout_ms}")
    run_admin(ctx.obj, lambda client: _reassign(client, target_voters, cancel, timeout_ms))


async def _reassign(client: AdminClient, target_text: str | None, cancel: bool, timeout_ms: int) -> None:
    from pykraft.admin import reassign as driver

    if target_text is None and not cancel:
        progress = await driver.status(client)
        typer.echo("No quorum reassignment is in progress." if progress is None else out.reassign_event_line(progress))
        return
    target = None if cancel else driver.parse_target_ids(target_text or "")
    async for event in driver.reassign(client, target, deadline_ms=timeout_ms):
        typer.echo(out.reassign_event_line(event))
