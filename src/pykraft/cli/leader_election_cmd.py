"""`pykraft leader-election`: Kafka's kafka-leader-election (LeaderElectionCommand): ElectLeaders at the active
controller (through the broker given, which forwards it) for --topic T --partition P, every partition
(--all-topic-partitions), or the partitions of a JSON file ({"partitions": [{"topic": "t", "partition": 0}]}).

Prints Kafka's lines: "Successfully completed leader election (PREFERRED) for partitions t-0, t-1",
"Valid replica already elected for partitions ...", and per failed partition "Error completing leader election
(UNCLEAN) for partition: t-0: <exception>"; then "N replica(s) could not be elected" on stderr and exit 1.
Kafka's defaults: default.api.timeout.ms 30000 and request.timeout.ms 15000 unless --admin.config sets them.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from pykraft.admin.connect import SettingsError, make_client
from pykraft.admin.error_texts import exception_text
from pykraft.admin.errors import AdminClientError
from pykraft.protocol.errors import ErrorCode

from .broker_tool import read_properties
from .kafka_args import REQUIRED, Flag, Options, ToolError, run_tool

PROG = "pykraft leader-election"
DESCRIPTION = ("This tool attempts to elect a new leader for a set of topic partitions. The type of elections "
               "supported are preferred replicas and unclean replicas.")
ELECTION_TYPES = {"preferred": 0, "unclean": 1}
FLAGS = (
    Flag("bootstrap-server", "A hostname and port for the broker to connect to, in the form host:port. Multiple "
                             "comma separated URLs can be given. REQUIRED.", REQUIRED, "host:port"),
    Flag("admin.config", "Configuration properties files to pass to the admin client", REQUIRED, "config file"),
    Flag("path-to-json-file", "The JSON file with the list of partition for which leader elections should be "
                              "performed: {\"partitions\": [{\"topic\": \"foo\", \"partition\": 1}]}. Not allowed if "
                              "--all-topic-partitions or --topic flags are specified.", REQUIRED, "Path to JSON file"),
    Flag("topic", "Name of topic for which to perform an election. Not allowed if --path-to-json-file or "
                  "--all-topic-partitions is specified.", REQUIRED, "topic name"),
    Flag("partition", "Partition id for which to perform an election. REQUIRED if --topic is specified.", REQUIRED,
         "partition id", kind=int),
    Flag("all-topic-partitions", "Perform election on all of the eligible topic partitions based on the type of "
                                 "election (see the --election-type flag)."),
    Flag("election-type", "Type of election to attempt: \"preferred\" or \"unclean\". REQUIRED.", REQUIRED,
         "election type"),
)


def run(args: Sequence[str]) -> int:
    return run_tool(PROG, DESCRIPTION, FLAGS, args, main)


def fail(text: str) -> ToolError:
    return ToolError(text)  # Kafka prints the exception's message on stderr and exits 1


def validate(options: Options) -> str:
    """Kafka's validate(): the election type's name in Kafka's enum spelling (PREFERRED / UNCLEAN)."""
    missing = [name for name in ("bootstrap-server", "election-type") if not options.has(name)]
    if missing:
        raise fail(f"Missing required option(s): {', '.join(missing)}")
    if sum(options.has(o) for o in ("topic", "all-topic-partitions", "path-to-json-file")) != 1:
        raise fail("One and only one of the following options is required: topic, all-topic-partitions, "
                   "path-to-json-file")
    if options.has("topic") and not options.has("partition"):
        raise fail("Missing required option(s): partition")
    if not options.has("topic") and options.has("partition"):
        raise fail("Option partition is only allowed if topic is used")
    kind = (options.get("election-type") or "").lower()
    if kind not in ELECTION_TYPES:
        raise fail(f"Cannot parse argument '{options.get('election-type')}' of option election-type")
    return kind.upper()


def partitions_from_file(path: str) -> list[tuple[str, int]]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise fail(f"java.nio.file.NoSuchFileException: {path}") from None
    except (OSError, ValueError) as exc:
        raise fail(f"Cannot read the replica election data in {path}: {exc}") from None
    if not data:
        raise fail("Replica election data is empty")
    if not isinstance(data, dict) or "partitions" not in data:
        raise fail('Replica election data is missing "partitions" field')
    found = []
    for entry in data["partitions"] if isinstance(data["partitions"], list) else []:
        if not isinstance(entry, dict) or not isinstance(entry.get("topic"), str) or \
                not isinstance(entry.get("partition"), int):
            raise fail(f"Invalid partition entry in {path}: {json.dumps(entry)}")
        found.append((entry["topic"], entry["partition"]))
    duplicates = sorted({f"{t}-{p}" for t, p in found if found.count((t, p)) > 1})
    if duplicates:
        raise fail(f"Replica election data contains duplicate partitions: [{', '.join(duplicates)}]")
    return found


def main(options: Options) -> int:
    kind = validate(options)
    if options.has("path-to-json-file"):
        partitions: list[tuple[str, int]] | None = partitions_from_file(options.get("path-to-json-file") or "")
    elif options.has("topic"):
        partitions = [(options.get("topic") or "", options.integer("partition") or 0)]
    else:
        partitions = None
    props = read_properties(options.get("admin.config"))
    props.setdefault("default.api.timeout.ms", "30000")
    props.setdefault("request.timeout.ms", "15000")
    try:
        client = make_client(None, options.get("bootstrap-server"), props,
                             on_wait=lambda text: print(f"{PROG}: {text}", file=sys.stderr, flush=True))
    except SettingsError as exc:
        raise fail(str(exc)) from None

    async def operation() -> dict:
        async with client:
            return await client.elect_leaders(ELECTION_TYPES[kind.lower()], partitions)

    try:
        results = asyncio.run(operation())
    except AdminClientError as exc:
        raise fail(f"Timeout waiting for election results ({exc})" if "did not complete" in str(exc)
                   else str(exc)) from None
    return report(kind, results)


def report(kind: str, results: dict[tuple[str, int], tuple[ErrorCode, str | None]]) -> int:
    ordered = sorted(results.items())
    done = [f"{t}-{p}" for (t, p), (code, _) in ordered if code == ErrorCode.NONE]
    noop = [f"{t}-{p}" for (t, p), (code, _) in ordered if code == ErrorCode.ELECTION_NOT_NEEDED]
    failed = [(f"{t}-{p}", code, message) for (t, p), (code, message) in ordered
              if code not in (ErrorCode.NONE, ErrorCode.ELECTION_NOT_NEEDED)]
    if done:
        print(f"Successfully completed leader election ({kind}) for partitions {', '.join(done)}")
    if noop:
        print(f"Valid replica already elected for partitions {', '.join(noop)}")
    for name, code, message in failed:
        print(f"Error completing leader election ({kind}) for partition: {name}: {exception_text(code, message)}")
    if failed:
        raise fail(f"{len(failed)} replica(s) could not be elected")
    return 0
