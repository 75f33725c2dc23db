"""The pure parts of `consumer-groups --reset-offsets` (cli/reset_offsets.py): Kafka's argument formats and its
clamping of explicit offsets into the log's range."""

from __future__ import annotations

import datetime

import pytest

from pykraft.admin.partition_calls import OffsetAnswer
from pykraft.cli.kafka_args import UsageError
from pykraft.cli.reset_offsets import (
    ResetFailure,
    clamp,
    parse_datetime,
    parse_duration_ms,
    parse_reset_csv,
    parse_topic_arg,
)
from pykraft.protocol.errors import ErrorCode


def test_topic_args_name_partitions_as_kafka_reads_them():
    assert parse_topic_arg("orders:0,2") == [("orders", 0), ("orders", 2)]
    with pytest.raises(UsageError, match="^Invalid topic arg 'orders:', expected topic name and partitions$"):
        parse_topic_arg("orders:")
    with pytest.raises(UsageError, match="Invalid partition 'x' specified in topic arg 'orders:x'"):
        parse_topic_arg("orders:x")


def _ms(*fields, tz=datetime.timezone.utc) -> int:
    return int(datetime.datetime(*fields, tzinfo=tz).timestamp() * 1000)


def test_datetimes_are_utc_unless_they_name_a_zone():
    assert parse_datetime("2024-03-01T12:30:00.250") == _ms(2024, 3, 1, 12, 30, 0, 250_000)
    assert parse_datetime("2024-03-01T12:30:00.000Z") == _ms(2024, 3, 1, 12, 30)
    plus_two = datetime.timezone(datetime.timedelta(hours=2))
    for text in ("2024-03-01T12:30:00.000+02:00", "2024-03-01T12:30:00.000+0200", "2024-03-01T12:30:00.000+02"):
        assert parse_datetime(text) == _ms(2024, 3, 1, 12, 30, tz=plus_two)
    with pytest.raises(ResetFailure, match="does not contain a 'T'"):
        parse_datetime("2024-03-01 12:30:00.000")
    with pytest.raises(ResetFailure, match='Unparseable date: "2024-03-01T12:30:00"'):
        parse_datetime("2024-03-01T12:30:00")
    with pytest.raises(ResetFailure):
        parse_datetime("2024-02-30T00:00:00.000")


@pytest.mark.parametrize("text, ms", [("PT1H", 3_600_000), ("P1DT30M", 88_200_000), ("PT0.5S", 500),
                                      ("-PT10S", -10_000), ("pt2m", 120_000), ("PT1M-1S", 59_000)])
def test_durations_are_javas(text, ms):
    assert parse_duration_ms(text) == ms


@pytest.mark.parametrize("text", ["1H", "PT", "P", "PTH", ""])
def test_bad_durations_are_javas_error(text):
    with pytest.raises(ResetFailure, match="Text cannot be parsed to a Duration"):
        parse_duration_ms(text)


def test_reset_plans_in_both_csv_forms():
    assert parse_reset_csv("t,0,5\nt,1,7\n", ["g"]) == {"g": {("t", 0): 5, ("t", 1): 7}}
    assert parse_reset_csv("g1,t,0,5\ng2,t,0,9", ["g1", "g2"]) == {"g1": {("t", 0): 5}, "g2": {("t", 0): 9}}
    with pytest.raises(ResetFailure):
        parse_reset_csv("t,0", ["g"])


def test_explicit_offsets_are_clamped_into_the_log_with_kafkas_warnings():
    starts = {("t", 0): OffsetAnswer(ErrorCode.NONE, 3), ("t", 1): OffsetAnswer(ErrorCode.NONE, 0)}
    ends = {("t", 0): OffsetAnswer(ErrorCode.NONE, 10), ("t", 1): OffsetAnswer(ErrorCode.NONE, 4)}
    result, warnings = clamp({("t", 0): 1, ("t", 1): 9}, starts, ends)
    assert result == {("t", 0): 3, ("t", 1): 4}
    assert warnings == ["New offset (1) is lower than earliest offset for topic partition t-0. Value will be set to 3.",
                        "New offset (9) is higher than latest offset for topic partition t-1. Value will be set to 4."]
    assert clamp({("t", 0): 5}, starts, ends) == ({("t", 0): 5}, [])
