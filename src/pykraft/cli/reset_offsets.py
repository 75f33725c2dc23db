"""`consumer-groups --reset-offsets`: which partitions to reset and to what (Kafka's GroupOffsetsResetter).

Scopes: `--all-topics` (every partition the group has committed offsets for), `--topic t` (every partition of t)
and `--topic t:0,2` (those partitions); `--from-file` brings its own partitions. Specifications: --to-earliest,
--to-latest, --to-current (the committed offset, or the log end where none), --to-offset N, --shift-by N (from the
committed offset), --to-datetime (the first offset at or after it; an empty partition falls back to the log end,
with Kafka's "Warn" line), --by-duration (the same, at now minus the duration), --from-file (a CSV Kafka's --export
wrote). Explicit offsets (to-offset, shift-by, from-file) are clamped into [log start, log end] with Kafka's
warning. The pure parts (argument parsing, clamping) are functions here; `plan_reset` asks the cluster.
"""

from __future__ import annotations

import datetime
import re
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pykraft.admin import groups as group_admin
from pykraft.admin.brokers import BrokerClient
from pykraft.admin.partition_calls import EARLIEST, LATEST, OffsetAnswer, list_offsets
from pykraft.protocol.errors import ErrorCode

from .kafka_args import ToolError, UsageError

TopicPartition = tuple[str, int]
SCENARIOS = ("to-offset", "shift-by", "to-datetime", "by-duration", "to-earliest", "to-latest", "to-current",
             "from-file")


class ResetFailure(Exception):
    """The reset cannot be planned; `str()` is what follows Kafka's "Executing consumer group command failed due
    to"."""


def tp_text(tp: TopicPartition) -> str:
    return f"{tp[0]}-{tp[1]}"  # Kafka's TopicPartition.toString


def parse_topic_arg(arg: str) -> list[TopicPartition]:
    """`topic:0,1,2` into its partitions (Kafka's parseTopicsWithPartitions)."""
    parts = arg.split(":")
    if len(parts) != 2 or not parts[1]:
        raise UsageError(f"Invalid topic arg '{arg}', expected topic name and partitions")
    found = []
    for item in parts[1].split(","):
        if not re.fullmatch(r"[+-]?\d+", item):
            raise UsageError(f"Invalid partition '{item}' specified in topic arg '{arg}''")
        found.append((parts[0], int(item)))
    return found


def parse_datetime(text: str) -> int:
    """Kafka's Utils.getDateTime: yyyy-MM-ddTHH:mm:ss.SSS with an optional zone (Z, +hh, +hhmm, +hh:mm); UTC
    when none. Epoch milliseconds."""
    match = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{3})(Z|[+-]\d{2}(?::?\d{2})?)?", text)
    if "T" not in text:
        raise ResetFailure("java.text.ParseException: Error parsing timestamp. It does not contain a 'T' according to "
                           "ISO8601 format")
    if match is None:
        raise ResetFailure(f'java.text.ParseException: Unparseable date: "{text}"')
    year, month, day, hour, minute, second, millis, zone = match.groups()
    offset = datetime.timedelta(0)
    if zone and zone != "Z":
        sign = -1 if zone[0] == "-" else 1
        digits = zone[1:].replace(":", "")
        offset = sign * datetime.timedelta(hours=int(digits[:2]), minutes=int(digits[2:4] or 0))
    try:
        moment = datetime.datetime(int(year), int(month), int(day), int(hour), int(minute), int(second),
                                   int(millis) * 1000, tzinfo=datetime.timezone(offset))
    except ValueError:
        raise ResetFailure(f'java.text.ParseException: Unparseable date: "{text}"') from None
    return int(moment.timestamp() * 1000)


_DURATION = re.compile(r"([-+]?)P(?:([-+]?\d+)D)?(?:T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?(?:([-+]?\d+)(?:[.,](\d{0,9}))?S)?)?",
                       re.IGNORECASE)


def parse_duration_ms(text: str) -> int:
    """java.time.Duration.parse ("PnDTnHnMn.nS", e.g. PT1H, P1DT30M, -PT10S) in milliseconds."""
    match = _DURATION.fullmatch(text)
    if match is None or text.upper().endswith("T") or not any(match.groups()[1:5]):
        raise ResetFailure(f"Text cannot be parsed to a Duration: {text}")
    sign, days, hours, minutes, seconds, fraction = match.groups()
    total = (int(days or 0) * 86_400_000 + int(hours or 0) * 3_600_000 + int(minutes or 0) * 60_000
             + int(seconds or 0) * 1000)
    if fraction:
        millis = int((fraction + "000")[:3])
        total += -millis if (seconds or "").startswith("-") else millis
    return -total if sign == "-" else total


def parse_reset_csv(text: str, groups: Sequence[str]) -> dict[str, dict[TopicPartition, int]]:
    """`topic,partition,offset` lines (for the one --group) or `group,topic,partition,offset` lines."""
    lines = [line.strip() for line in text.split("\n") if line.strip()]
    plan: dict[str, dict[TopicPartition, int]] = {}
    for line in lines:
        cells = line.split(",")
        if len(groups) == 1 and len(cells) == 3:
            group, (topic, index, offset) = groups[0], cells
        elif len(cells) == 4:
            group, topic, index, offset = cells
        else:
            raise ResetFailure(f"cannot read the reset plan line '{line}': expected topic,partition,offset or "
                               f"group,topic,partition,offset")
        try:
            plan.setdefault(group, {})[(topic, int(index))] = int(offset)
        except ValueError:
            raise ResetFailure(f"cannot read the reset plan line '{line}': partition and offset must be numbers") \
                from None
    return plan


def clamp(requested: Mapping[TopicPartition, int], starts: Mapping[TopicPartition, OffsetAnswer],
          ends: Mapping[TopicPartition, OffsetAnswer]) -> tuple[dict[TopicPartition, int], list[str]]:
    """Kafka's checkOffsetsRange: each offset moved into [log start, log end]; the warnings it logs."""
    result, warnings = {}, []
    for tp, offset in requested.items():
        end, start = ends.get(tp), starts.get(tp)
        if end is not None and end.error == ErrorCode.NONE and offset > end.offset:
            warnings.append(f"New offset ({offset}) is higher than latest offset for topic partition {tp_text(tp)}. "
                            f"Value will be set to {end.offset}.")
            result[tp] = end.offset
        elif start is not None and start.error == ErrorCode.NONE and offset < start.offset:
            warnings.append(f"New offset ({offset}) is lower than earliest offset for topic partition {tp_text(tp)}. "
                            f"Value will be set to {start.offset}.")
            result[tp] = start.offset
        else:
            result[tp] = offset
    return result, warnings


@dataclass(frozen=True)
class ResetSpec:
    scenario: str
    value: str | None
    plan_from_file: Mapping[str, Mapping[TopicPartition, int]] | None = None


async def partitions_in_scope(client: BrokerClient, group: str, all_topics: bool, topics: Sequence[str],
                              from_file: bool) -> list[TopicPartition]:
    if all_topics:
        return sorted(await group_admin.committed_offsets(client, group))
    if topics:
        named = [tp for arg in topics if ":" in arg for tp in parse_topic_arg(arg)]
        whole = [arg for arg in topics if ":" not in arg]
        if whole:
            metadata = await client.metadata(whole)
            for topic in whole:
                if topic not in metadata.topics:
                    raise ResetFailure("org.apache.kafka.common.errors.UnknownTopicOrPartitionException: This server "
                                       "does not host this topic-partition.")
                named += [(topic, p.partition) for p in metadata.topics[topic].partitions]
        return list(dict.fromkeys(named))
    if not from_file:
        raise UsageError("One of the reset scopes should be defined: --all-topics, --topic.")
    return []


async def check_partitions(client: BrokerClient, partitions: Sequence[TopicPartition]) -> None:
    """Kafka's checkAllTopicPartitionsValid: every partition exists and has a leader."""
    if not partitions:
        return
    metadata = await client.metadata(sorted({t for t, _ in partitions}))
    missing = [tp for tp in partitions if metadata.partition(*tp) is None]
    if missing:
        raise ResetFailure(f'The partitions "{",".join(tp_text(tp) for tp in missing)}" do not exist')
    leaderless = [tp for tp in partitions if metadata.partition(*tp).leader is None]  # type: ignore[union-attr]
    if leaderless:
        raise ResetFailure(f'The partitions "{",".join(tp_text(tp) for tp in leaderless)}" have no leader')


async def _offsets(client: BrokerClient, partitions: Sequence[TopicPartition], spec: int, what: str
                   ) -> dict[TopicPartition, int]:
    answers = await list_offsets(client, {tp: spec for tp in partitions})
    found = {}
    for tp in partitions:
        answer = answers.get(tp)
        if answer is None or answer.error != ErrorCode.NONE:
            raise UsageError(f"Error getting {what} of topic partition: {tp_text(tp)}")
        found[tp] = answer.offset
    return found


async def _by_time(client: BrokerClient, partitions: Sequence[TopicPartition], timestamp: int) -> dict[TopicPartition, int]:
    answers = await list_offsets(client, {tp: timestamp for tp in partitions})
    found, empty = {}, []
    for tp in partitions:
        answer = answers.get(tp)
        if answer is None or answer.error != ErrorCode.NONE:
            raise UsageError(f"Error getting offset by timestamp of topic partition: {tp_text(tp)}")
        if answer.offset == -1:
            empty.append(tp)
        else:
            found[tp] = answer.offset
    for topic, index in empty:
        print(f"\nWarn: Partition {index} from topic {topic} is empty. Falling back to latest known offset.")
    found.update(await _offsets(client, empty, LATEST, "ending offset"))
    return found


async def _clamped(client: BrokerClient, requested: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
    partitions = list(requested)
    starts = await list_offsets(client, {tp: EARLIEST for tp in partitions})
    ends = await list_offsets(client, {tp: LATEST for tp in partitions})
    result, warnings = clamp(requested, starts, ends)
    for warning in warnings:
        print(f"[{time.strftime('%Y-%m-%d %H:%M:%S')}] WARN {warning}", file=sys.stderr)
    return result


async def plan_reset(client: BrokerClient, group: str, partitions: Sequence[TopicPartition], spec: ResetSpec
                     ) -> dict[TopicPartition, int]:
    """The new offset of each partition of `group` under `spec` (Kafka's prepareOffsetsToReset)."""
    await check_partitions(client, partitions)
    scenario = spec.scenario
    if scenario == "to-offset":
        return await _clamped(client, {tp: int(spec.value or 0) for tp in partitions})
    if scenario == "to-earliest":
        return await _offsets(client, partitions, EARLIEST, "starting offset")
    if scenario == "to-latest":
        return await _offsets(client, partitions, LATEST, "ending offset")
    if scenario in ("shift-by", "to-current"):
        committed = await group_admin.committed_offsets(client, group)
        if scenario == "to-current":
            without = [tp for tp in partitions if tp not in committed]
            found = {tp: committed[tp].offset for tp in partitions if tp in committed}
            found.update(await _offsets(client, without, LATEST, "ending offset"))
            return found
        missing = [tp for tp in partitions if tp not in committed]
        if missing:
            raise UsageError(f"Cannot shift offset for partition {tp_text(missing[0])} since there is no current "
                             f"committed offset")
        return await _clamped(client, {tp: committed[tp].offset + int(spec.value or 0) for tp in partitions})
    if scenario == "to-datetime":
        return await _by_time(client, partitions, parse_datetime(spec.value or ""))
    if scenario == "by-duration":
        return await _by_time(client, partitions, int(time.time() * 1000) - parse_duration_ms(spec.value or ""))
    if scenario == "from-file":
        plan = (spec.plan_from_file or {}).get(group)
        if plan is None:
            print(f"\nError: No reset plan for group {group} found.")
            return {}
        await check_partitions(client, list(plan))
        return await _clamped(client, plan)
    raise ToolError(f"unknown reset scenario {scenario}")  # the caller checked the flags
