"""`pykraft brokers list`: the registered brokers (fenced ones too) as a table sorted by id, or JSON.

pykraft's own tool (Kafka has no such command; kafka-broker-api-versions is the nearest). It sends DescribeCluster
v2 with IncludeFencedBrokers to --bootstrap-server or --bootstrap-controller (metadata-quorum's connection flags).
A controller of a quorum without registered brokers answers with its controllers (node/runtime/client_apis.py), which
are then listed; a broker lists the brokers reachable on the listener it was asked on.
Failures are one stderr line, exit 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

import typer

from . import topics_output as out
from .metadata_quorum_cmd import BootstrapController, BootstrapServer, Connection, Timeout, invoke, run_admin
from .topics_cmd import CommandConfig

PROG = "pykraft brokers"

app = typer.Typer(name="brokers", add_completion=False, pretty_exceptions_enable=False,
                  help="List the brokers registered with the controller quorum.")


def run(args: Sequence[str]) -> int:
    return invoke(app, args, PROG)


@app.callback()
def options(ctx: typer.Context, bootstrap_server: BootstrapServer = None,
            bootstrap_controller: BootstrapController = None, command_config: CommandConfig = None,
            timeout: Timeout = None) -> None:
    ctx.obj = Connection(bootstrap_controller, bootstrap_server, command_config, timeout)


@app.command("list")
def list_brokers(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON array instead of the table.")] = False,
    bootstrap_server: BootstrapServer = None, bootstrap_controller: BootstrapController = None,
    command_config: CommandConfig = None,
) -> None:
    """List the brokers: ID, HOST, PORT, RACK, STATE (fenced/unfenced)."""
    group: Connection = ctx.obj
    conn = group.overridden_by(bootstrap_controller, bootstrap_server, command_config)
    brokers = run_admin(conn, lambda client: client.list_brokers())
    if as_json:
        typer.echo(out.broker_json(brokers))
    else:
        for line in out.broker_table(brokers):
            typer.echo(line)
