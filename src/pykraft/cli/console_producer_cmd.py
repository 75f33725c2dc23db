"""`pykraft console-producer`: Kafka's kafka-console-producer: each line of standard input becomes a record of
--topic (line_reader.py: --property parse.key=true --property key.separator=: ...), sent by the producer of
admin/producer.py with the console producer's settings.

Producer settings come, lowest first, from the tool's own defaults (Kafka's: linger.ms 1000 from --timeout,
acks -1, request.timeout.ms 1500, retries 3, batch.size 16384, max.block.ms 60000, ...), --producer.config,
--producer-property, then the tool's flags given on the line (Kafka's maybeMergeOptions). --sync sends each record
alone and waits for it. A record that cannot be delivered prints Kafka's ErrorLoggingCallback line on stderr;
the tool then exits 1 (Kafka's exits 0 in async mode; pykraft's tools exit non-zero when they failed). When stdin
is a terminal a `>` prompt is shown before each line, as Kafka's reader does.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Sequence

from pykraft.admin.brokers import BrokerClient
from pykraft.admin.connect import SettingsError
from pykraft.admin.producer import Producer, ProducerError, producer_settings

from .broker_tool import key_values, read_properties, run_with_client
from .kafka_args import OPTIONAL, REQUIRED, Flag, Options, ToolError, UsageError, require, run_tool
from .line_reader import LineError, LineReader

PROG = "pykraft console-producer"
DESCRIPTION = "This tool helps to read data from standard input and publish it to Kafka."
LINE_READER = "org.apache.kafka.tools.LineMessageReader"
# (flag, producer key, the tool's default): CommandLineUtils.maybeMergeOptions applies the flag's value when the
# flag is given or the key is not already set.
MERGED = (("timeout", "linger.ms", "1000"), ("request-required-acks", "acks", "-1"),
          ("request-timeout-ms", "request.timeout.ms", "1500"), ("message-send-max-retries", "retries", "3"),
          ("retry-backoff-ms", "retry.backoff.ms", "100"), ("max-memory-bytes", "buffer.memory", "33554432"),
          ("batch-size", "batch.size", "16384"), ("max-partition-memory-bytes", "batch.size", "16384"),
          ("max-block-ms", "max.block.ms", "60000"))
# Set by Kafka's tool on every run; they tune the JVM client's socket and metadata cache, which this client does
# not have (its metadata is read fresh for each request), so the tool's defaults are not reported as unused.
TOOL_ONLY = {"send.buffer.bytes", "metadata.max.age.ms"}

FLAGS = (
    Flag("topic", "REQUIRED: The topic name to produce messages to.", REQUIRED, "topic"),
    Flag("bootstrap-server", "REQUIRED: The server(s) to connect to. The broker list string in the form "
                             "HOST1:PORT1,HOST2:PORT2.", REQUIRED, "server to connect to"),
    Flag("sync", "If set message send requests to the brokers are synchronously, one at a time as they arrive."),
    Flag("compression-codec", "The compression codec: either 'none', 'gzip', 'snappy', 'lz4', or 'zstd'. If "
                              "specified without value, then it defaults to 'gzip'", OPTIONAL, "compression-codec"),
    Flag("batch-size", "Number of bytes to send in a single batch if they are not being sent synchronously.",
         REQUIRED, "size", default="16384", kind=int),
    Flag("message-send-max-retries", "How many times a failed send is retried (the producer's `retries`).",
         REQUIRED, "retries", default="3", kind=int),
    Flag("retry-backoff-ms", "How long to wait before a retry (`retry.backoff.ms`).", REQUIRED, "ms",
         default="100", kind=int),
    Flag("timeout", "How long a message waits for a fuller batch in asynchronous mode (`linger.ms`).", REQUIRED,
         "timeout_ms", default="1000", kind=int),
    Flag("request-required-acks", "The required `acks` of the producer requests", REQUIRED,
         "request required acks", default="-1"),
    Flag("request-timeout-ms", "The ack timeout of the producer requests.", REQUIRED, "request timeout ms",
         default="1500", kind=int),
    Flag("metadata-expiry-ms", "`metadata.max.age.ms` (metadata is read for every request here).", REQUIRED,
         "metadata expiration interval", default="300000", kind=int),
    Flag("max-block-ms", "The max time that the producer will block for during a send request.", REQUIRED,
         "max block on send", default="60000", kind=int),
    Flag("max-memory-bytes", "The total memory used by the producer to buffer records (`buffer.memory`).",
         REQUIRED, "total memory in bytes", default="33554432", kind=int),
    Flag("max-partition-memory-bytes", "The buffer size allocated for a partition (`batch.size`).", REQUIRED,
         "memory in bytes per partition", default="16384", kind=int),
    Flag("line-reader", "The class of the line reader; only Kafka's default, LineMessageReader.", REQUIRED,
         "reader_class", default=LINE_READER),
    Flag("socket-buffer-size", "The size of the tcp send buffer (`send.buffer.bytes`).", REQUIRED, "size",
         default="102400", kind=int),
    Flag("property", "A property of the line reader: parse.key, key.separator, parse.headers, headers.delimiter, "
                     "headers.separator, headers.key.separator, ignore.error, null.marker.", REQUIRED, "prop",
         many=True),
    Flag("reader-config", "Config properties file for the message reader (--property takes precedence).", REQUIRED,
         "config file"),
    Flag("producer-property", "A property of the producer in the form key=value.", REQUIRED, "producer_prop",
         many=True),
    Flag("producer.config", "Producer config properties file (--producer-property takes precedence).", REQUIRED,
         "config file"),
)


def run(args: Sequence[str]) -> int:
    return run_tool(PROG, DESCRIPTION, FLAGS, args, main)


def producer_properties(options: Options) -> tuple[dict[str, str], set[str]]:
    """The producer's properties (Kafka's producerProps) and the keys the user gave explicitly."""
    props = read_properties(options.get("producer.config"))
    props.update(key_values(options.all("producer-property"), "producer property"))
    explicit = set(props)
    codec = options.get("compression-codec") if options.has("compression-codec") else "none"
    props["compression.type"] = codec or "gzip"
    props.setdefault("client.id", "console-producer")
    for flag, key, default in MERGED:
        if options.has(flag) or key not in props:
            props[key] = options.get(flag) or default
            if options.has(flag):
                explicit.add(key)
    return props, explicit


def main(options: Options) -> int:
    require(options, "topic")
    if not options.get("bootstrap-server"):
        raise UsageError('Missing required argument "[bootstrap-server]"')
    if options.get("line-reader") != LINE_READER:
        raise UsageError(f"Only the default line reader {LINE_READER} is available, not {options.get('line-reader')}")
    reader_props = read_properties(options.get("reader-config"))
    reader_props.update(key_values(options.all("property"), "property"))
    try:
        reader = LineReader(reader_props)
    except LineError as exc:
        raise ToolError(f"org.apache.kafka.common.KafkaException: {exc}") from None
    props, explicit = producer_properties(options)
    try:
        settings, unused = producer_settings(props)
    except SettingsError as exc:
        raise ToolError(f"org.apache.kafka.common.config.ConfigException: {exc}") from None
    ignored = sorted(k for k in unused if k in explicit and k not in TOOL_ONLY)
    if options.has("socket-buffer-size"):
        ignored.append("send.buffer.bytes (--socket-buffer-size: the system's socket buffer is used)")
    if ignored:
        print(f"{PROG}: these producer settings are not implemented and are ignored: {', '.join(ignored)}",
              file=sys.stderr)
    topic = options.get("topic") or ""

    async def operation(client: BrokerClient) -> int:
        producer = Producer(client, settings)
        await producer.start()
        try:
            return await _pump(producer, reader, topic, options.has("sync"))
        finally:
            await producer.close()

    def failure(text: str) -> ToolError:
        return ToolError(f"{PROG}: {text}")

    return run_with_client(PROG, options.get("bootstrap-server"), props, operation, failure,
                           client_id=props.get("client.id"))


def _error_line(topic: str, key: bytes | None, value: bytes | None, error: BaseException) -> str:
    key_text = "null" if key is None else f"{len(key)} bytes"
    value_text = "null" if value is None else f"{len(value)} bytes"
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    return (f"[{stamp}] ERROR Error when sending message to topic {topic} with key: {key_text}, value: {value_text} "
            f"with error: {error}")


async def _pump(producer: Producer, reader: LineReader, topic: str, sync: bool) -> int:
    """Read stdin line by line (off the event loop), send each record; 1 if any record failed."""
    loop = asyncio.get_running_loop()
    prompt = sys.stdin.isatty()
    failed = False
    pending: list[asyncio.Future] = []

    def report(key: bytes | None, value: bytes | None):  # a future's done callback
        def done(future: asyncio.Future) -> None:
            nonlocal failed
            error = future.exception()
            if error is not None:
                failed = True
                print(_error_line(topic, key, value, error), file=sys.stderr, flush=True)
        return done

    while True:
        if prompt:
            print(">", end="", flush=True)
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:
            break
        try:
            parsed = reader.parse(line.rstrip("\n").removesuffix("\r"))
        except LineError as exc:
            raise ToolError(f"org.apache.kafka.common.KafkaException: {exc}") from None
        try:
            future = await producer.send(topic, parsed.value, parsed.key, parsed.headers)
        except ProducerError as exc:
            raise ToolError(f"{PROG}: {exc}") from None
        future.add_done_callback(report(parsed.key, parsed.value))
        if sync:
            await asyncio.wait([future])
        else:
            pending.append(future)
            pending = [f for f in pending if not f.done()]
    await producer.flush()
    return 1 if failed else 0
