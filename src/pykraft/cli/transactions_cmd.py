"""`pykraft transactions`: Kafka's kafka-transactions.sh (tools/.../TransactionsCommand.java).

    pykraft transactions --bootstrap-server H:P [--command-config F] COMMAND ...
      list [--duration-filter MS]
      describe --transactional-id ID
      describe-producers --topic T --partition N [--broker-id B]
      abort --topic T --partition N (--start-offset O | --producer-id P --producer-epoch E --coordinator-epoch C)
      find-hanging (--topic T [--partition N] | --broker-id B) [--max-transaction-timeout MINUTES]

Tables are printed as Kafka's ToolsUtils.prettyPrintTable does (each column padded to its widest cell, a tab after
every cell), with Kafka's headers; abort prints nothing. A failure is one line on stderr and exit 1, in Kafka's words
where Kafka has them ("Failed to describe transaction state of transactional-id `x`: ...").
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Annotated, Any

import typer

from pykraft.admin.errors import AdminClientError

from .metadata_quorum_cmd import BootstrapServer, CommandConfig, Connection, ToolFailure, invoke, run_admin

PROG = "pykraft transactions"
app = typer.Typer(name="transactions", add_completion=False, pretty_exceptions_enable=False,
                  help="This tool is used to analyze the transactional state of producers in the cluster. It can be "
                       "used to detect and recover from hanging transactions.")
LIST_HEADERS = ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
DESCRIBE_HEADERS = ["CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
                    "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs", "TopicPartitions"]
PRODUCERS_HEADERS = ["ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence", "LastTimestamp",
                     "CurrentTransactionStartOffset"]
HANGING_HEADERS = ["Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "StartOffset",
                   "LastTimestamp", "Duration(min)"]


def run(args: Sequence[str]) -> int:
    return invoke(app, args, PROG)


def pretty_table(headers: list[str], rows: list[list[str]]) -> list[str]:
    """Kafka's ToolsUtils.prettyPrintTable: left-aligned columns as wide as their widest cell, each cell then a tab."""
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(headers)]
    return ["".join(cell.ljust(width) + "\t" for cell, width in zip(row, widths)) for row in [headers, *rows]]


def _run(ctx: typer.Context, operation: Any, failure: str) -> Any:
    connection: Connection = ctx.obj
    if connection.bootstrap_server is None:
        raise ToolFailure('Missing required argument "[bootstrap-server]"')

    async def wrapped(client: Any) -> Any:
        try:
            return await operation(client)
        except AdminClientError as exc:
            raise ToolFailure(f"{failure}: {exc}") from None

    return run_admin(connection, wrapped)


def _echo(lines: list[str]) -> None:
    for line in lines:
        typer.echo(line)


@app.callback()
def options(ctx: typer.Context, bootstrap_server: BootstrapServer = None, command_config: CommandConfig = None) -> None:
    ctx.obj = Connection(None, bootstrap_server, command_config)


@app.command("list")
def list_(ctx: typer.Context, duration_filter: Annotated[int | None, typer.Option(
        "--duration-filter", help="Duration (in millis) to filter by: if < 0, all transactions will be returned; "
                                  "otherwise, only transactions running longer than this duration will be returned")] = None,
          ) -> None:
    """list transactions"""
    from pykraft.admin.transactions import list_transactions

    found = _run(ctx, lambda c: list_transactions(c, -1 if duration_filter is None else duration_filter),
                 "Failed to list transactions")
    rows = [[t.transactional_id, str(broker), str(t.producer_id), t.state]
            for broker, listed in sorted(found.items()) for t in listed]
    _echo(pretty_table(LIST_HEADERS, rows))


@app.command("describe")
def describe(ctx: typer.Context, transactional_id: Annotated[str, typer.Option(
        "--transactional-id", help="transactional id")]) -> None:
    """describe the state of an active transactional-id"""
    from pykraft.admin.transactions import describe_transaction

    d = _run(ctx, lambda c: describe_transaction(c, transactional_id),
             f"Failed to describe transaction state of transactional-id `{transactional_id}`")
    start = "None" if d.start_time_ms < 0 else str(d.start_time_ms)
    duration = "None" if d.start_time_ms < 0 else str(int(time.time() * 1000) - d.start_time_ms)
    row = [str(d.coordinator), transactional_id, str(d.producer_id), str(d.producer_epoch), d.state,
           str(d.timeout_ms), start, duration, ",".join(f"{t}-{p}" for t, p in d.partitions)]
    _echo(pretty_table(DESCRIBE_HEADERS, [row]))


@app.command("describe-producers")
def describe_producers(
    ctx: typer.Context,
    topic: Annotated[str, typer.Option("--topic", help="topic name")],
    partition: Annotated[int, typer.Option("--partition", help="partition number")],
    broker_id: Annotated[int | None, typer.Option(
        "--broker-id", help="optional broker id to describe the producer state on a specific replica")] = None,
) -> None:
    """describe the states of active producers for a topic partition"""
    from pykraft.admin.transactions import describe_producers as describe

    where = "leader" if broker_id is None else f"broker {broker_id}"
    states = _run(ctx, lambda c: describe(c, topic, partition, broker_id),
                  f"Failed to describe producers for partition {topic}-{partition} on {where}")
    rows = [[str(s.producer_id), str(s.producer_epoch), str(s.coordinator_epoch), str(s.last_sequence),
             str(s.last_timestamp), "None" if s.txn_start_offset < 0 else str(s.txn_start_offset)] for s in states]
    _echo(pretty_table(PRODUCERS_HEADERS, rows))


@app.command("abort")
def abort(
    ctx: typer.Context,
    topic: Annotated[str, typer.Option("--topic", help="topic name")],
    partition: Annotated[int, typer.Option("--partition", help="partition number")],
    start_offset: Annotated[int | None, typer.Option("--start-offset",
                                                     help="start offset of the transaction to abort")] = None,
    producer_id: Annotated[int | None, typer.Option("--producer-id", help="producer id")] = None,
    producer_epoch: Annotated[int | None, typer.Option("--producer-epoch", help="producer epoch")] = None,
    coordinator_epoch: Annotated[int | None, typer.Option("--coordinator-epoch", help="coordinator epoch")] = None,
) -> None:
    """abort a hanging transaction (requires administrative privileges)"""
    from pykraft.admin.transactions import abort_transaction
    from pykraft.admin.transactions import describe_producers as describe

    if start_offset is None and producer_id is None:
        raise ToolFailure("The transaction to abort must be identified either with --start-offset (for brokers on "
                          "3.0 or above) or with --producer-id, --producer-epoch, and --coordinator-epoch (for older "
                          "brokers)")
    if start_offset is None:
        if producer_epoch is None:
            raise ToolFailure("Missing required argument --producer-epoch")
        if coordinator_epoch is None:
            raise ToolFailure("Missing required argument --coordinator-epoch")

    async def operation(client: Any) -> None:
        spec = (producer_id, producer_epoch, coordinator_epoch)
        if start_offset is not None:
            found = [s for s in await describe(client, topic, partition) if s.txn_start_offset == start_offset]
            if not found:
                raise ToolFailure(f"Could not find any open transactions starting at offset {start_offset} on "
                                  f"partition {topic}-{partition}")
            spec = (found[0].producer_id, found[0].producer_epoch, max(found[0].coordinator_epoch, 0))
        await abort_transaction(client, topic, partition, *spec)  # type: ignore[arg-type]

    _run(ctx, operation, f"Failed to abort transaction on {topic}-{partition}")


@app.command("find-hanging")
def find_hanging(
    ctx: typer.Context,
    broker_id: Annotated[int | None, typer.Option("--broker-id",
                                                  help="broker id to search for hanging transactions")] = None,
    max_transaction_timeout: Annotated[int, typer.Option(
        "--max-transaction-timeout", help="maximum transaction timeout in minutes to limit the scope of the search "
                                          "(15 minutes by default)")] = 15,
    topic: Annotated[str | None, typer.Option(
        "--topic", help="topic name to limit search to (required if --partition is specified)")] = None,
    partition: Annotated[int | None, typer.Option("--partition", help="partition number")] = None,
) -> None:
    """find hanging transactions"""
    from pykraft.admin.transactions import find_hanging as find
    from pykraft.admin.transactions import partitions_to_search

    if topic is None and broker_id is None:
        raise ToolFailure("The `find-hanging` command requires either --topic or --broker-id to limit the scope of "
                          "the search")
    if partition is not None and topic is None:
        raise ToolFailure("The --partition argument requires --topic to be provided")
    now = int(time.time() * 1000)

    async def operation(client: Any) -> Any:
        partitions = await partitions_to_search(client, topic, partition, broker_id)
        return await find(client, partitions, max_transaction_timeout * 60_000, now, broker_id)

    hanging = _run(ctx, operation, "Failed to find hanging transactions")
    rows = [[h.topic, str(h.partition), str(h.state.producer_id), str(h.state.producer_epoch),
             str(h.state.coordinator_epoch), str(h.state.txn_start_offset), str(h.state.last_timestamp),
             str((now - h.state.last_timestamp) // 60_000)] for h in hanging]
    _echo(pretty_table(HANGING_HEADERS, rows))
