"""`pykraft console-consumer`: Kafka's kafka-console-consumer: read --topic (or the topics --include matches)
and print each record with Kafka's DefaultMessageFormatter (message_formatter.py) on stdout.

Without --partition the consumer joins a group (--group, or group.id from --consumer-property /
--consumer.config; else `console-consumer-<random>` with auto-commit off, as Kafka's tool) and starts where the
group committed, else by auto.offset.reset (--from-beginning: earliest; default latest). With --partition it
reads that partition alone from --offset (earliest, latest or a number). --max-messages stops after that many
records; --timeout-ms stops when none came for that long. On exit it prints "Processed a total of N messages" on
stderr, commits what it printed (when auto-commit is on) and leaves the group. Ctrl-C ends it the same way.
"""

from __future__ import annotations

import asyncio
import random
import re
import signal
import sys
import time
from collections.abc import Sequence

from pykraft.admin.brokers import BrokerClient
from pykraft.admin.connect import SettingsError
from pykraft.admin.consumer import Consumer, consumer_settings
from pykraft.admin.fetcher import FetchError
from pykraft.admin.partition_calls import EARLIEST, LATEST

from .broker_tool import key_values, read_properties, run_with_client
from .kafka_args import REQUIRED, Flag, Options, ToolError, UsageError, require, run_tool
from .message_formatter import FORMATTERS, FormatterError, MessageFormatter

PROG = "pykraft console-consumer"
DESCRIPTION = "This tool helps to read data from Kafka topics and outputs it to standard output."
DEFAULT_FORMATTER = "org.apache.kafka.tools.consumer.DefaultMessageFormatter"
FLAGS = (
    Flag("topic", "The topic to consume on.", REQUIRED, "topic"),
    Flag("include", "Regular expression specifying list of topics to include for consumption.", REQUIRED,
         "Java regex (String)"),
    Flag("partition", "The partition to consume from. Consumption starts from the end of the partition unless "
                      "'--offset' is specified.", REQUIRED, "partition", kind=int),
    Flag("offset", "The offset to consume from (a non-negative number), or 'earliest' which means from beginning, "
                   "or 'latest' which means from end", REQUIRED, "consume offset", default="latest"),
    Flag("consumer-property", "A mechanism to pass user-defined properties in the form key=value to the consumer.",
         REQUIRED, "consumer_prop", many=True),
    Flag("consumer.config", "Consumer config properties file (--consumer-property takes precedence).", REQUIRED,
         "config file"),
    Flag("formatter", "The name of a class to use for formatting kafka messages for display.", REQUIRED, "class",
         default=DEFAULT_FORMATTER),
    Flag("property", "The properties to initialize the message formatter: print.timestamp, print.key, print.offset, "
                     "print.epoch, print.partition, print.headers, print.value, key.separator, line.separator, "
                     "headers.separator, null.literal, key.deserializer, value.deserializer, headers.deserializer.",
         REQUIRED, "prop", many=True),
    Flag("formatter-config", "Config properties file to initialize the message formatter (--property takes "
                             "precedence).", REQUIRED, "config file"),
    Flag("from-beginning", "If the consumer does not already have an established offset to consume from, start "
                           "with the earliest message present in the log rather than the latest message."),
    Flag("max-messages", "The maximum number of messages to consume before exiting. If not set, consumption is "
                         "continual.", REQUIRED, "num_messages", kind=int),
    Flag("timeout-ms", "If specified, exit if no message is available for consumption for the specified "
                       "interval.", REQUIRED, "timeout_ms", kind=int),
    Flag("skip-message-on-error", "If there is an error when processing a message, skip it instead of halt."),
    Flag("bootstrap-server", "REQUIRED: The server(s) to connect to.", REQUIRED, "server to connect to"),
    Flag("key-deserializer", "The deserializer for keys.", REQUIRED, "deserializer for key"),
    Flag("value-deserializer", "The deserializer for values.", REQUIRED, "deserializer for values"),
    Flag("isolation-level", "Set to read_committed in order to filter out transactional messages which are not "
                            "committed. Set to read_uncommitted to read all messages.", REQUIRED, "isolation level",
         default="read_uncommitted"),
    Flag("group", "The consumer group id of the consumer.", REQUIRED, "consumer group id"),
)


def run(args: Sequence[str]) -> int:
    return run_tool(PROG, DESCRIPTION, FLAGS, args, main)


def check(options: Options) -> None:
    """Kafka's checkRequiredArgs, in its order."""
    if options.has("topic") == options.has("include"):
        raise UsageError("Exactly one of --include/--topic is required. ")
    if options.has("partition"):
        if not options.has("topic"):
            raise UsageError("The topic is required when partition is specified.")
        if options.has("from-beginning") and options.has("offset"):
            raise UsageError("Options from-beginning and offset cannot be specified together.")
    elif options.has("offset"):
        raise UsageError("The partition is required when offset is specified.")
    require(options, "bootstrap-server")


def consumer_properties(options: Options) -> dict[str, str]:
    """Kafka's buildConsumerProps: the files and flags merged, the group and auto.offset.reset decided."""
    from_file = read_properties(options.get("consumer.config"))
    extra = key_values(options.all("consumer-property"), "consumer property")
    groups = {g for g in (options.get("group"), from_file.get("group.id"), extra.get("group.id")) if g is not None}
    if len(groups) > 1:
        raise UsageError("The group ids provided in different places (directly using '--group', via "
                         "'--consumer-property', or via '--consumer.config') do not match. Detected group ids: "
                         + ", ".join(f"'{g}'" for g in sorted(groups)))
    if groups and options.has("partition"):
        raise UsageError("Options group and partition cannot be specified together.")
    props = {**from_file, **extra}
    if "auto.offset.reset" in props:
        if options.has("from-beginning") and props["auto.offset.reset"] != "earliest":
            raise ToolError(f"Can't simultaneously specify --from-beginning and 'auto.offset.reset="
                            f"{props['auto.offset.reset']}', please remove one option")
    else:
        props["auto.offset.reset"] = "earliest" if options.has("from-beginning") else "latest"
    props.setdefault("client.id", "console-consumer")
    if options.has("isolation-level") or "isolation.level" not in props:
        props["isolation.level"] = options.get("isolation-level") or "read_uncommitted"
    if groups:
        props["group.id"] = groups.pop()
    else:
        props["group.id"] = f"console-consumer-{random.randrange(100000)}"
        props.setdefault("enable.auto.commit", "false")
    return props


def start_offset(options: Options) -> int:
    text = options.get("offset") if options.has("offset") else ("earliest" if options.has("from-beginning")
                                                                  else "latest")
    lowered = (text or "").lower()
    if lowered == "earliest":
        return EARLIEST
    if lowered == "latest":
        return LATEST
    if not re.fullmatch(r"\d+", text or ""):
        raise UsageError(f"The provided offset value '{text}' is incorrect. Valid values are 'earliest', 'latest', "
                         f"or a non-negative long.")
    return int(text or 0)


def formatter_of(options: Options) -> MessageFormatter:
    if options.get("formatter") not in FORMATTERS:
        raise UsageError(f"Only Kafka's DefaultMessageFormatter is available, not {options.get('formatter')}")
    props = read_properties(options.get("formatter-config"))
    for flag, key in (("key-deserializer", "key.deserializer"), ("value-deserializer", "value.deserializer")):
        if options.get(flag):
            props[key] = options.get(flag) or ""
    props.update(key_values(options.all("property"), "property"))
    try:
        return MessageFormatter(props)
    except FormatterError as exc:
        raise UsageError(str(exc)) from None


def main(options: Options) -> int:
    check(options)
    props = consumer_properties(options)
    offset = start_offset(options) if options.has("partition") else None
    formatter = formatter_of(options)
    try:
        settings, unused = consumer_settings(props)
    except SettingsError as exc:
        raise ToolError(f"org.apache.kafka.common.config.ConfigException: {exc}") from None
    if unused:
        print(f"{PROG}: these consumer settings are not implemented and are ignored: {', '.join(unused)}",
              file=sys.stderr)
    limit = options.integer("max-messages")
    timeout_ms = options.integer("timeout-ms")
    state = {"count": 0}

    async def operation(client: BrokerClient) -> int:
        consumer = Consumer(client, settings)
        if offset is not None:
            consumer.assign({(options.get("topic") or "", options.integer("partition") or 0): offset})
        else:
            consumer.subscribe(await _topics(client, options))
        try:
            return await _consume(consumer, formatter, limit, timeout_ms, state,
                                  options.has("skip-message-on-error"))
        finally:
            await consumer.close()

    def failure(text: str) -> ToolError:
        return ToolError(f"Processed a total of {state['count']} messages\n{PROG}: {text}")

    code = run_with_client(PROG, options.get("bootstrap-server"), props, operation, failure,
                           client_id=props.get("client.id"))
    print(f"Processed a total of {state['count']} messages", file=sys.stderr)
    return code


async def _topics(client: BrokerClient, options: Options) -> list[str]:
    if options.has("topic"):
        return [options.get("topic") or ""]
    try:
        pattern = re.compile(options.get("include") or "")
    except re.error as exc:
        raise UsageError(f"Invalid --include pattern: {exc}") from None
    metadata = await client.metadata()
    return sorted(t for t in metadata.topics if pattern.fullmatch(t) and not t.startswith("__"))


async def _consume(consumer: Consumer, formatter: MessageFormatter, limit: int | None, timeout_ms: int | None,
                   state: dict[str, int], skip_errors: bool) -> int:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    out = sys.stdout.buffer
    last = time.monotonic()
    try:
        while not stop.is_set() and (limit is None or state["count"] < limit):
            wait = 1000 if timeout_ms is None else max(min(1000, timeout_ms), 1)
            poll = asyncio.ensure_future(consumer.poll(wait))
            await asyncio.wait([poll, asyncio.ensure_future(stop.wait())], return_when=asyncio.FIRST_COMPLETED)
            if not poll.done():
                poll.cancel()
                break
            try:
                records = poll.result()
            except FetchError as exc:
                raise ToolError(f"Processed a total of {state['count']} messages\n{PROG}: {exc}") from None
            if records:
                last = time.monotonic()
            elif timeout_ms is not None and (time.monotonic() - last) * 1000 >= timeout_ms:
                break
            for index, record in enumerate(records):
                if limit is not None and state["count"] >= limit:
                    consumer.give_back(records[index:])
                    break
                state["count"] += 1
                try:
                    out.write(formatter.format(record))
                except FormatterError as exc:
                    if not skip_errors:
                        raise ToolError(f"{PROG}: {exc}") from None
                    print(f"{PROG}: error processing message, skipping this message: {exc}", file=sys.stderr)
            try:
                out.flush()
            except BrokenPipeError:
                print("Unable to write to standard out, closing consumer.", file=sys.stderr)
                break
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
    return 0
