"""`pykraft get-offsets`: Kafka's kafka-get-offsets (GetOffsetShell): `topic:partition:offset` for every partition
the filters select, sorted as Kafka sorts them (by the `topic-partition` text).

Filters: --topic (a regular expression, whole name) with --partitions (ids), or --topic-partitions
`topic1:1,topic2:0-3,topic3,topic4:5-,:-3` (a topic regex, then a partition, an upper-exclusive range, a lower
bound or an upper bound); --exclude-internal-topics. --time: latest / -1 (the default), earliest / -2,
max-timestamp / -3, earliest-local / -4 (the log start: pykraft has no tiered storage, so the local log is the
whole log), latest-tiered / -5 (nothing is tiered: no offset, as Kafka answers then), or a timestamp in ms (the
first offset at or after it; a partition without one is left out, as Kafka does).
Errors are Kafka's `Error occurred: ...` on stderr, exit 1.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from pykraft.admin.brokers import BrokerClient
from pykraft.admin.error_texts import exception_text
from pykraft.admin.partition_calls import EARLIEST, LATEST, MAX_TIMESTAMP, list_offsets
from pykraft.protocol.errors import ErrorCode

from .broker_tool import read_properties, run_with_client
from .kafka_args import REQUIRED, Flag, Options, ToolError, require, run_tool

PROG = "pykraft get-offsets"
DESCRIPTION = "An interactive shell for getting topic-partition offsets."
NO_TIERED_OFFSET = None  # latest-tiered: nothing is tiered, so there is no such offset
RULE = re.compile(r"([^:,]*)(?::(?:([0-9]*)|(?:([0-9]*)-([0-9]*))))?")
FLAGS = (
    Flag("bootstrap-server", "REQUIRED. The server(s) to connect to in the form HOST1:PORT1,HOST2:PORT2.", REQUIRED,
         "HOST1:PORT1,...,HOST3:PORT3"),
    Flag("topic-partitions", "Comma separated list of topic-partition patterns to get the offsets for, with the "
                             "format of 'topic-regex:partition' (a number, NUMBER-NUMBER, NUMBER- or -NUMBER).",
         REQUIRED, "topic1:1,topic2:0-3,topic3,topic4:5-,topic5:-3"),
    Flag("topic", "The topic to get the offsets for. It also accepts a regular expression. If not present, all "
                  "authorized topics are queried. Cannot be used if --topic-partitions is present.", REQUIRED,
         "topic"),
    Flag("partitions", "Comma separated list of partition ids to get the offsets for. If not present, all "
                       "partitions of the authorized topics are queried.", REQUIRED, "partition ids"),
    Flag("time", "timestamp of the offsets before that.", REQUIRED,
         "<timestamp> / -1 or latest / -2 or earliest / -3 or max-timestamp / -4 or earliest-local / -5 or "
         "latest-tiered", default="latest"),
    Flag("command-config", "Property file containing configs to be passed to Admin Client.", REQUIRED,
         "config file"),
    Flag("exclude-internal-topics", "By default, internal topics are included. If specified, internal topics are "
                                    "excluded."),
)


def run(args: Sequence[str]) -> int:
    return run_tool(PROG, DESCRIPTION, FLAGS, args, main)


def error(text: str) -> ToolError:
    return ToolError(f"Error occurred: {text}")


def offset_spec(text: str) -> int | None:
    """Kafka's parseOffsetSpec as a ListOffsets timestamp (None: latest-tiered, which has no offset here)."""
    named = {"earliest": EARLIEST, "latest": LATEST, "max-timestamp": MAX_TIMESTAMP, "earliest-local": EARLIEST,
             "latest-tiered": NO_TIERED_OFFSET}
    if text in named:
        return named[text]
    try:
        value = int(text)
    except ValueError:
        raise error(f"Malformed time argument {text}. Please use -1 or latest / -2 or earliest / -3 or max-timestamp "
                    f"/ -4 or earliest-local / -5 or latest-tiered, or a specified long format timestamp") from None
    return {-4: EARLIEST, -5: NO_TIERED_OFFSET}.get(value, value)


@dataclass(frozen=True, slots=True)
class Rule:
    topic: re.Pattern[str]
    low: int
    high: int  # exclusive

    def allows(self, topic: str, partition: int) -> bool:
        return self.topic.fullmatch(topic) is not None and self.low <= partition < self.high


def _regex(text: str) -> re.Pattern[str]:
    try:
        return re.compile(text.strip().strip("'\"").replace(",", "|"))
    except re.error as exc:
        raise error(f"Invalid topic pattern {text!r}: {exc}") from None


def rules_of(options: Options) -> list[Rule]:
    if options.has("topic-partitions"):
        rules = []
        for spec in (options.get("topic-partitions") or "").split(","):
            match = RULE.fullmatch(spec)
            if match is None:
                raise error(f"Invalid rule specification: {spec}")
            topic, single, low, high = (g or None for g in match.groups())
            pattern = _regex(topic or ".*")
            if single is not None:
                rules.append(Rule(pattern, int(single), int(single) + 1))
            else:
                rules.append(Rule(pattern, int(low or 0), int(high) if high else 2**31 - 1))
        return rules
    text = options.get("partitions")
    pattern = _regex(options.get("topic") or ".*")
    if not text:
        return [Rule(pattern, 0, 2**31 - 1)]
    try:
        ids = sorted({int(p) for p in text.split(",")})
    except ValueError:
        raise error(f"--partitions expects a comma separated list of numeric partition ids, but received: "
                    f"{text}") from None
    return [Rule(pattern, p, p + 1) for p in ids]


def main(options: Options) -> int:
    require(options, "bootstrap-server")
    if options.has("topic-partitions") and (options.has("topic") or options.has("partitions")):
        raise error("--topic-partitions cannot be used with --topic or --partitions")
    spec = offset_spec(options.get("time") or "latest")
    rules = rules_of(options)
    props = read_properties(options.get("command-config"))

    async def operation(client: BrokerClient) -> list[str]:
        metadata = await client.metadata()
        chosen = [(t.name, p.partition) for t in metadata.topics.values()
                  if not (options.has("exclude-internal-topics") and t.is_internal)
                  for p in t.partitions if any(r.allows(t.name, p.partition) for r in rules)]
        if not chosen:
            raise error("Could not match any topic-partitions with the specified filters")
        if spec is NO_TIERED_OFFSET:
            return []
        answers = await list_offsets(client, {tp: spec for tp in chosen})
        lines = []
        for topic, index in sorted(chosen, key=lambda tp: f"{tp[0]}-{tp[1]}"):
            answer = answers[(topic, index)]
            if answer.error != ErrorCode.NONE:
                print(f"Skip getting offsets for topic-partition {topic}-{index} due to error: "
                      f"{exception_text(answer.error)}", file=sys.stderr)
            elif answer.offset != -1:
                lines.append(f"{topic}:{index}:{answer.offset}")
        return lines

    lines = run_with_client(PROG, options.get("bootstrap-server"), props, operation, error,
                            client_id="GetOffsetShell")
    for line in lines:
        print(line)
    return 0
