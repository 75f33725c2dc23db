"""`pykraft consumer-perf-test`: Kafka's kafka-consumer-perf-test (ConsumerPerformance): consume --messages records
of --topic in group --group (default `perf-consumer-<random>`), from the earliest offset unless --from-latest, and
print Kafka's header and summary line (start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg,
nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec), or with --show-detailed-stats one line
per --reporting-interval. It stops early, with Kafka's WARNING line, when no record came for --timeout ms.
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Sequence

from pykraft.admin.brokers import BrokerClient
from pykraft.admin.connect import SettingsError
from pykraft.admin.consumer import Consumer, consumer_settings
from pykraft.admin.fetcher import FetchError

from .broker_tool import read_properties, run_with_client
from .kafka_args import OPTIONAL, REQUIRED, Flag, Options, ToolError, UsageError, require, run_tool
from .perf_stats import CONSUMER_HEADER, DETAILED_HEADER, consumer_metrics, consumer_progress, consumer_summary

PROG = "pykraft consumer-perf-test"
DESCRIPTION = "This tool is used to verify the consumer performance."
FLAGS = (
    Flag("bootstrap-server", "REQUIRED: The server(s) to connect to.", REQUIRED, "server to connect to"),
    Flag("topic", "REQUIRED: The topic to consume from.", REQUIRED, "topic"),
    Flag("group", "The group id to consume on.", REQUIRED, "gid"),
    Flag("fetch-size", "The amount of data to fetch in a single request.", REQUIRED, "size", default="1048576",
         kind=int),
    Flag("from-latest", "If the consumer does not already have an established offset to consume from, start with "
                        "the latest message present in the log rather than the earliest message."),
    Flag("socket-buffer-size", "The size of the tcp RECV size.", REQUIRED, "size", default="2097152", kind=int),
    Flag("consumer.config", "Consumer config properties file.", REQUIRED, "config file"),
    Flag("print-metrics", "Print out the metrics."),
    Flag("show-detailed-stats", "If set, stats are reported for each reporting interval as configured by "
                                "reporting-interval"),
    Flag("timeout", "The maximum allowed time in milliseconds between returned records.", OPTIONAL, "milliseconds",
         default="10000", kind=int),
    Flag("messages", "REQUIRED: The number of messages to send or consume", REQUIRED, "count", kind=int),
    Flag("reporting-interval", "Interval in milliseconds at which to print progress info.", REQUIRED, "interval_ms",
         default="5000", kind=int),
    Flag("date-format", "The date format to use for formatting the time field. See java.text.SimpleDateFormat for "
                        "options.", REQUIRED, "date format", default="yyyy-MM-dd HH:mm:ss:SSS"),
    Flag("hide-header", "If set, skips printing the header for the stats"),
)


def run(args: Sequence[str]) -> int:
    return run_tool(PROG, DESCRIPTION, FLAGS, args, main)


def main(options: Options) -> int:
    require(options, "topic", "messages")
    if not options.get("bootstrap-server"):
        raise UsageError('Missing required argument "[bootstrap-server]"')
    interval = options.integer("reporting-interval") or 0
    if interval <= 0:
        raise UsageError("Reporting interval must be greater than 0.")
    props = read_properties(options.get("consumer.config"))
    props.update({"group.id": options.get("group") or f"perf-consumer-{random.randrange(100_000)}",
                  "max.partition.fetch.bytes": options.get("fetch-size") or "1048576",
                  "auto.offset.reset": "latest" if options.has("from-latest") else "earliest"})
    props.setdefault("client.id", "perf-consumer-client")
    try:
        settings, unused = consumer_settings(props)
    except SettingsError as exc:
        raise ToolError(f"org.apache.kafka.common.config.ConfigException: {exc}") from None
    if options.has("socket-buffer-size"):
        unused.append("receive.buffer.bytes (--socket-buffer-size: the system's socket buffer is used)")
    if unused:
        print(f"{PROG}: these consumer settings are not implemented and are ignored: {', '.join(unused)}",
              file=sys.stderr)
    detailed = options.has("show-detailed-stats")
    pattern = options.get("date-format") or "yyyy-MM-dd HH:mm:ss:SSS"
    if not options.has("hide-header"):
        print(DETAILED_HEADER if detailed else CONSUMER_HEADER)

    async def operation(client: BrokerClient) -> int:
        consumer = Consumer(client, settings)
        consumer.subscribe([options.get("topic") or ""])
        start_ms = time.time() * 1000
        try:
            messages, size, join_ms = await _consume(consumer, options, interval, detailed, pattern)
        except FetchError as exc:
            raise ToolError(f"{PROG}: {exc}") from None
        finally:
            await consumer.close()
        end_ms = time.time() * 1000
        if not detailed:
            print(consumer_summary(pattern, start_ms, end_ms, size, messages, join_ms))
        if options.has("print-metrics"):
            print(consumer_metrics(props["client.id"], messages, size, join_ms))
        return 0

    return run_with_client(PROG, options.get("bootstrap-server"), props, operation,
                           lambda text: ToolError(f"{PROG}: {text}"), client_id=props["client.id"])


async def _consume(consumer: Consumer, options: Options, interval_ms: int, detailed: bool,
                   pattern: str) -> tuple[int, int, int]:
    wanted = options.integer("messages") or 0
    timeout_ms = options.integer("timeout") or 10_000
    messages = size = last_messages = last_size = 0
    joined_at = time.time() * 1000
    join_ms = 0
    now = last_report = last_consumed = time.time() * 1000
    while messages < wanted and now - last_consumed <= timeout_ms:
        generation = consumer.member.generation if consumer.member else -1
        records = await consumer.poll(100)
        if consumer.member is not None and consumer.member.generation != generation:
            join_ms += int(time.time() * 1000 - joined_at)  # Kafka counts the time until partitions are assigned
            joined_at = time.time() * 1000
        now = time.time() * 1000
        if records:
            last_consumed = now
        taken = records[:wanted - messages]
        if len(taken) < len(records):
            consumer.give_back(records[len(taken):])  # not counted: not committed as consumed either
        for record in taken:
            messages += 1
            size += len(record.key or b"") + len(record.value or b"")
            if now - last_report >= interval_ms:
                if detailed:
                    print(consumer_progress(pattern, size, last_size, messages, last_messages, last_report, now,
                                            join_ms))
                last_report, last_messages, last_size = now, messages, size
    if messages < wanted:
        print(f"WARNING: Exiting before consuming the expected number of messages: timeout ({timeout_ms} ms) "
              f"exceeded. You can use the --timeout option to increase the timeout.")
    return messages, size, join_ms
