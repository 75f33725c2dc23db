"""`pykraft cluster`: Kafka's kafka-cluster (ClusterTool): `cluster-id` prints "Cluster ID: <id>" (DescribeCluster)
and `unregister --id N` removes broker N's registration (UnregisterBroker at the active controller, forwarded by a
broker: its partitions lose it from their ISRs and leaderships first; "Broker N is no longer registered."),
each against --bootstrap-server/-b or --bootstrap-controller/-C, with --config/-c for the admin client.
Failures are Kafka's message on stderr, exit 1 (e.g. "org.apache.kafka.common.errors.BrokerIdNotRegisteredException:
Broker ID 9 is not currently registered").
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence

from pykraft.admin.connect import SettingsError, make_client
from pykraft.admin.error_texts import exception_text
from pykraft.admin.errors import AdminClientError, AdminError
from pykraft.protocol.errors import ErrorCode

from .broker_tool import read_properties
from .kafka_args import REQUIRED, Flag, Options, ToolError, UsageError, run_tool

PROG = "pykraft cluster"
DESCRIPTION = "The Kafka cluster tool. Sub-commands: cluster-id (get the ID of a cluster), unregister (a broker)."
COMMON = (
    Flag("bootstrap-server", "A list of host/port pairs to use for establishing the connection to the Kafka "
                             "cluster.", REQUIRED, "BOOTSTRAP_SERVER", short="b"),
    Flag("bootstrap-controller", "A list of host/port pairs to use for establishing the connection to the KRaft "
                                 "controllers.", REQUIRED, "BOOTSTRAP_CONTROLLER", short="C"),
    Flag("config", "A property file containing configurations for the Admin client.", REQUIRED, "CONFIG",
         short="c"),
)
UNREGISTER = (*COMMON, Flag("id", "The ID of the broker to unregister.", REQUIRED, "ID", kind=int, short="i"))
COMMANDS = {"cluster-id": ("Get information about the ID of a cluster.", COMMON),
            "unregister": ("Unregister a broker.", UNREGISTER)}


def run(args: Sequence[str]) -> int:
    if not args or args[0] not in COMMANDS:
        if args and args[0] in ("-h", "--help"):
            print(f"usage: {PROG} {{cluster-id,unregister}} ...\n\n{DESCRIPTION}")
            return 0
        choice = f"invalid choice: '{args[0]}' (choose from 'cluster-id', 'unregister')" if args else \
            "too few arguments"
        print(f"{PROG}: error: argument command: {choice}" if args else f"{PROG}: error: {choice}", file=sys.stderr)
        return 1
    command = args[0]
    description, flags = COMMANDS[command]
    return run_tool(f"{PROG} {command}", description, flags, list(args[1:]),
                    lambda options: main(command, options), empty_is_help=False)


def _client(options: Options):  # an AdminClient
    if options.has("bootstrap-server") == options.has("bootstrap-controller"):
        raise UsageError("one of the arguments --bootstrap-server/-b --bootstrap-controller/-C is required"
                         if not options.has("bootstrap-server") else
                         "argument --bootstrap-controller/-C: not allowed with argument --bootstrap-server/-b")
    props = read_properties(options.get("config"))
    try:
        return make_client(options.get("bootstrap-controller"), options.get("bootstrap-server"), props,
                           on_wait=lambda text: print(f"{PROG}: {text}", file=sys.stderr, flush=True))
    except SettingsError as exc:
        raise UsageError(str(exc)) from None


def main(command: str, options: Options) -> int:
    if command == "unregister":
        if not options.has("id"):
            raise UsageError("argument --id/-i is required")
    client = _client(options)

    async def operation() -> str:
        async with client:
            if command == "cluster-id":
                info = await client.describe_cluster()
                return f"Cluster ID: {info.cluster_id}" if info.cluster_id else \
                    "No cluster ID found. The Kafka version is probably too old."
            broker = options.integer("id") or 0
            await client.unregister_broker(broker)
            return f"Broker {broker} is no longer registered."

    try:
        print(asyncio.run(operation()))
    except AdminError as exc:
        if exc.code == ErrorCode.UNSUPPORTED_VERSION:
            print("The target cluster does not support the broker unregistration API.")
            return 0
        raise ToolError(exception_text(exc.code, exc.message)) from None
    except AdminClientError as exc:
        raise ToolError(str(exc)) from None
    return 0
