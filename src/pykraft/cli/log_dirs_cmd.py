"""`pykraft log-dirs`: Kafka's kafka-log-dirs.sh (tools/.../LogDirsCommand.java).

    pykraft log-dirs --bootstrap-server H:P --describe [--broker-list 1,2] [--topic-list t1,t2] [--command-config F]

Prints "Querying brokers for log directories information", "Received log directory information from brokers
1,2,3" and one JSON line: {"brokers":[{"broker":1,"logDirs":[{"partitions":[{"partition":"t-0","size":N,
"offsetLag":0,"isFuture":false}],"error":null,"logDir":"/path"}]}],"version":1} (Kafka's key order). A broker of
--broker-list that is not in the cluster: `ERROR: The given brokers do not exist from --broker-list: 7. Current
existent brokers: 1,2,3`, exit 1; any other failure one line, exit 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

import typer

from pykraft.admin.errors import AdminError

from . import log_tools_output as out
from .metadata_quorum_cmd import Connection, ToolFailure, invoke, run_admin
from .topics_cmd import CommandConfig

PROG = "pykraft log-dirs"

app = typer.Typer(name="log-dirs", add_completion=False, pretty_exceptions_enable=False,
                  help="Query log directory usage on the specified brokers.")


def run(args: Sequence[str]) -> int:
    return invoke(app, args, PROG)


def _split(text: str) -> list[str]:
    return [part for part in text.split(",") if part]


def parse_brokers(text: str) -> set[int]:
    brokers = set()
    for part in _split(text):
        try:
            brokers.add(int(part))
        except ValueError:
            raise ToolFailure(f'For input string: "{part}"') from None
    return brokers


@app.command()
def log_dirs(
    bootstrap_server: Annotated[str | None, typer.Option(
        "--bootstrap-server", help="REQUIRED: the server(s) to use for bootstrapping")] = None,
    describe: Annotated[bool, typer.Option(
        "--describe", help="Describe the specified log directories on the specified brokers.")] = False,
    topic_list: Annotated[str, typer.Option(
        "--topic-list", help='The list of topics to be queried in the form "topic1,topic2,topic3". All topics will '
                             'be queried if no topic list is specified')] = "",
    broker_list: Annotated[str, typer.Option(
        "--broker-list", help='The list of brokers to be queried in the form "0,1,2". All brokers in the cluster '
                              'will be queried if no broker list is specified')] = "",
    command_config: CommandConfig = None,
) -> None:
    """Query log directory usage on the specified brokers."""
    if bootstrap_server is None:
        raise ToolFailure('Missing required argument "[bootstrap-server]"')
    if not describe:
        raise ToolFailure('Missing required argument "[describe]"')
    topics = set(_split(topic_list))
    asked = parse_brokers(broker_list)

    async def operation(client: Any) -> Any:
        from pykraft.admin.log_admin import describe_log_dirs

        metadata = await client.metadata([])
        cluster = {int(b.node_id) for b in metadata.brokers}
        missing = asked - cluster
        if missing:
            return cluster, missing, None
        chosen = asked or cluster
        return cluster, set(), (chosen, await describe_log_dirs(client, sorted(chosen)))

    cluster, missing, described = run_admin(Connection(None, bootstrap_server, command_config), operation)
    if missing:
        raise ToolFailure(f"ERROR: The given brokers do not exist from --broker-list: {out.comma_list(missing)}. "
                          f"Current existent brokers: {out.comma_list(cluster)}")
    chosen, by_broker = described
    typer.echo("Querying brokers for log directories information")
    failed = next((r for r in by_broker.values() if isinstance(r, AdminError)), None)
    if failed is not None:
        name, message = out.java_exception(failed.code)
        raise ToolFailure(f"{name}: {message}")
    typer.echo(f"Received log directory information from brokers {out.comma_list(chosen)}")
    typer.echo(out.log_dirs_json(by_broker, topics))
