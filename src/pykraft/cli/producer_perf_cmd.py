"""`pykraft producer-perf-test`: Kafka's kafka-producer-perf-test (ProducerPerformance): send --num-records
records of --record-size bytes (or from --payload-file, or --payload-monotonic) to --topic, at most --throughput
records/s (-1: as fast as possible), with the producer of admin/producer.py configured by --producer-props
(bootstrap.servers=... acks=... linger.ms=...) and --producer.config, and print Kafka's lines: one per 5 s window
("N records sent, R records/sec (M MB/sec), A ms avg latency, X ms max latency.") and the summary with the 50th,
95th, 99th and 99.9th latency percentiles.

Payloads: Kafka draws every byte of every record at random (uppercase letters); drawing them one by one here
would cost more than sending, so a pool of 1000 such random payloads is drawn once (seeded, as Kafka's) and each
record takes one of them at random. Transactions (--transactional-id, --transaction-duration-ms, a transactional.id
property) are refused: pykraft has no transaction coordinator yet.
"""

from __future__ import annotations

import asyncio
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from pykraft.admin.brokers import BrokerClient
from pykraft.admin.connect import SettingsError
from pykraft.admin.producer import Producer, ProducerError, producer_settings

from .broker_tool import read_properties, run_with_client
from .kafka_args import MULTI, REQUIRED, Flag, Options, ToolError, UsageError, run_tool
from .perf_stats import ProducerStats

PROG = "pykraft producer-perf-test"
DESCRIPTION = "This tool is used to verify the producer performance."
POOL = 1000
FLAGS = (
    Flag("topic", "produce messages to this topic", REQUIRED, "TOPIC"),
    Flag("num-records", "number of messages to produce", REQUIRED, "NUM-RECORDS", kind=int),
    Flag("record-size", "message size in bytes. Note that you must provide exactly one of --record-size or "
                        "--payload-file or --payload-monotonic.", REQUIRED, "RECORD-SIZE", kind=int),
    Flag("payload-file", "file to read the message payloads from (UTF-8 text, split by --payload-delimiter).",
         REQUIRED, "PAYLOAD-FILE"),
    Flag("payload-monotonic", "payload is monotonically increasing integer."),
    Flag("payload-delimiter", "provides delimiter to be used when --payload-file is provided.", REQUIRED,
         "PAYLOAD-DELIMITER", default="\\n"),
    Flag("throughput", "throttle maximum message throughput to *approximately* THROUGHPUT messages/sec. Set this to "
                       "-1 to disable throttling.", REQUIRED, "THROUGHPUT"),
    Flag("producer-props", "kafka producer related configuration properties like bootstrap.servers,client.id etc.",
         MULTI, "PROP-NAME=PROP-VALUE", many=True),
    Flag("producer.config", "producer config properties file.", REQUIRED, "CONFIG-FILE"),
    Flag("print-metrics", "print out metrics at the end of the test."),
    Flag("transactional-id", "The transactional id to use (transactions are not implemented by pykraft).", REQUIRED,
         "TRANSACTIONAL-ID"),
    Flag("transaction-duration-ms", "The max age of each transaction (transactions are not implemented by "
                                    "pykraft).", REQUIRED, "TRANSACTION-DURATION", kind=int),
)


def run(args: Sequence[str]) -> int:
    return run_tool(PROG, DESCRIPTION, FLAGS, args, main)


def producer_props(options: Options) -> dict[str, str]:
    """Kafka's readProps: the file, then --producer-props words (each exactly one `=`)."""
    props = read_properties(options.get("producer.config"))
    for word in options.all("producer-props"):
        pieces = word.split("=")
        if len(pieces) != 2:
            raise UsageError(f"Invalid property: {word}")
        props[pieces[0]] = pieces[1]
    props.setdefault("client.id", "perf-producer-client")
    return props


def payloads(options: Options, rng: random.Random) -> list[bytes] | None:
    """The payloads to draw from; None with --payload-monotonic (each record's value is its index)."""
    sources = sum(options.has(f) for f in ("record-size", "payload-file", "payload-monotonic"))
    if sources != 1:
        raise UsageError("exactly one of --record-size, --payload-file or --payload-monotonic is required")
    if options.has("payload-monotonic"):
        return None
    if options.has("record-size"):
        size = options.integer("record-size") or 0
        if size <= 0:
            raise UsageError("--record-size should be greater than zero")
        return [bytes(rng.choices(range(65, 91), k=size)) for _ in range(POOL)]
    path = Path(options.get("payload-file") or "")
    print(f"Reading payloads from: {path.absolute()}")
    if not path.is_file() or path.stat().st_size == 0:
        raise ToolError("File does not exist or empty file provided.")
    delimiter = options.get("payload-delimiter") or "\\n"
    delimiter = "\n" if delimiter == "\\n" else delimiter
    found = [p.encode() for p in path.read_text(encoding="utf-8").split(delimiter)]
    print(f"Number of messages read: {len(found)}")
    return found


def main(options: Options) -> int:
    for name in ("topic", "num-records", "throughput"):
        if not options.has(name):
            raise UsageError(f"argument --{name} is required")
    count = options.integer("num-records") or 0
    if count <= 0:
        raise UsageError("--num-records should be greater than zero")
    try:
        throughput = float(options.get("throughput") or "-1")
    except ValueError:
        raise UsageError(f"argument --throughput: could not convert '{options.get('throughput')}' to Double") \
            from None
    if not options.has("producer-props") and not options.has("producer.config"):
        raise UsageError("Either --producer-props or --producer.config must be specified.")
    props = producer_props(options)
    if options.has("transactional-id") or options.has("transaction-duration-ms") or "transactional.id" in props:
        raise ToolError(f"{PROG}: transactions are not implemented by pykraft yet")
    try:
        settings, unused = producer_settings(props)
    except SettingsError as exc:
        raise ToolError(f"org.apache.kafka.common.config.ConfigException: {exc}") from None
    if unused:
        print(f"{PROG}: these producer settings are not implemented and are ignored: {', '.join(unused)}",
              file=sys.stderr)
    rng = random.Random(0)
    pool = payloads(options, rng)
    topic = options.get("topic") or ""

    async def operation(client: BrokerClient) -> int:
        producer = Producer(client, settings, random.Random(0))
        await producer.start()
        stats = ProducerStats(count)
        try:
            await _send_all(producer, topic, count, pool, rng, throughput, stats)
            await producer.flush()
        finally:
            await producer.close()
        print(stats.total_line())
        if options.has("print-metrics"):
            print(stats.metrics_text(client.client_id))
        return 1 if stats.failures else 0

    def failure(text: str) -> ToolError:
        return ToolError(f"{PROG}: {text}")

    return run_with_client(PROG, props.get("bootstrap.servers"), props, operation, failure,
                           client_id=props.get("client.id"))


async def _send_all(producer: Producer, topic: str, count: int, pool: list[bytes] | None, rng: random.Random,
                    throughput: float, stats: ProducerStats) -> None:
    start = time.monotonic()
    for index in range(count):
        payload = str(index).encode() if pool is None else pool[rng.randrange(len(pool))]
        sent = time.monotonic()
        try:
            future = await producer.send(topic, payload)
        except ProducerError as exc:
            raise ToolError(f"{PROG}: {exc}") from None
        future.add_done_callback(stats.callback(sent, len(payload)))
        if throughput > 0:
            ahead = (index + 1) / throughput - (time.monotonic() - start)  # Kafka's ThroughputThrottler
            if ahead > 0:
                await asyncio.sleep(ahead)
        elif index % 1000 == 999:
            await asyncio.sleep(0)  # let the sender and the answers in
