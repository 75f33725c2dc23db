"""Kafka's LineMessageReader (console-producer) and DefaultMessageFormatter (console-consumer), as pure functions."""

from __future__ import annotations

import struct

import pytest

from pykraft.admin.fetcher import ConsumedRecord
from pykraft.cli.line_reader import LineError, LineReader
from pykraft.cli.message_formatter import FormatterError, MessageFormatter


def test_a_plain_line_is_a_value_without_key():
    parsed = LineReader({}).parse("hello\tworld")
    assert (parsed.key, parsed.value, parsed.headers) == (None, b"hello\tworld", ())


def test_keys_headers_and_the_null_marker():
    reader = LineReader({"parse.key": "true", "key.separator": ":", "parse.headers": "true",
                         "headers.delimiter": "|", "null.marker": "NULL"})
    parsed = reader.parse("h1:a,h2:NULL|k:v:w")
    assert parsed.key == b"k" and parsed.value == b"v:w" and parsed.headers == (("h1", b"a"), ("h2", None))
    assert reader.parse("NULL|NULL:NULL").key is None
    with pytest.raises(LineError, match=r"^No key separator found on line number 3: 'a\|b'$"):
        reader.parse("a|b")
    assert LineReader({"parse.key": "true", "ignore.error": "true"}).parse("nokey").key is None


def test_reader_settings_kafka_refuses():
    with pytest.raises(LineError, match="headers.delimiter and headers.separator may not be equal"):
        LineReader({"headers.delimiter": ",", "headers.separator": ","})
    with pytest.raises(LineError, match="null.marker and key.separator may not be equal"):
        LineReader({"null.marker": "\t"})


def record(**changes):
    fields = dict(topic="t", partition=2, offset=5, timestamp=1700000000000, timestamp_type="CreateTime", key=b"k",
                  value=b"v", headers=(("a", b"1"), ("b", None)), leader_epoch=3)
    fields.update(changes)
    return ConsumedRecord(**fields)


def test_the_default_prints_the_value_alone():
    assert MessageFormatter({}).format(record()) == b"v\n"
    assert MessageFormatter({}).format(record(value=None)) == b"null\n"


def test_every_column_in_kafkas_order_and_words():
    formatter = MessageFormatter({p: "true" for p in ("print.timestamp", "print.partition", "print.offset",
                                                      "print.epoch", "print.headers", "print.key")})
    assert formatter.format(record()) == b"CreateTime:1700000000000\tPartition:2\tOffset:5\tEpoch:3\ta:1,b:null\tk\tv\n"
    custom = MessageFormatter({"print.key": "true", "print.value": "false", "key.separator": " | ",
                               "line.separator": ";", "print.headers": "true", "null.literal": "-"})
    assert custom.format(record(headers=())) == b"NO_HEADERS | k;"
    assert custom.format(record(key=None, headers=())) == b"NO_HEADERS | -;"


def test_kafkas_stock_deserializers():
    longs = MessageFormatter({"value.deserializer": "org.apache.kafka.common.serialization.LongDeserializer"})
    assert longs.format(record(value=struct.pack(">q", -7))) == b"-7\n"
    with pytest.raises(FormatterError):
        MessageFormatter({"key.deserializer": "com.example.Custom"})
