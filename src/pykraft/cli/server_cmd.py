"""`pykraft server start FILE` (or `--config FILE`): run a node in the foreground (Kafka's
kafka-server-start.sh)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

server_app = typer.Typer(
    name="server",
    help="Run a node (Kafka's kafka-server-start.sh).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@server_app.command("start")
def start(
    config_file: Annotated[Path | None, typer.Argument(
        metavar="[FILE]", help="The node's server.properties (Kafka's kafka-server-start.sh FILE).")] = None,
    config: Annotated[Path | None, typer.Option("--config", "-c", help="The node's server.properties.")] = None,
) -> None:
    """Start the node and run until SIGTERM or SIGINT (graceful resignation, then exit 0)."""
    if (config_file is None) == (config is None):
        raise typer.BadParameter("give the node's properties file once: server start FILE or --config FILE")
    from pykraft.node.serve import run_server

    path = config if config is not None else config_file
    assert path is not None  # exactly one of them, checked above
    raise typer.Exit(run_server(path))
