"""How `console-producer` turns a line of input into a record: Kafka's LineMessageReader.

Properties (--property or --reader-config): parse.key (false), key.separator (a tab), parse.headers (false),
headers.delimiter (a tab), headers.separator (","), headers.key.separator (":"), ignore.error (false),
null.marker (unset: a field equal to it becomes null). With both parse.headers and parse.key a line is
`h1:v1,h2:v2<TAB>key<TAB>value`. A line without the separator it needs fails with Kafka's message, unless
ignore.error. Pure: text in, (key, value, headers) out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass


class LineError(Exception):
    """A line or a reader setting Kafka's reader refuses (Kafka's KafkaException message)."""


@dataclass(frozen=True, slots=True)
class ParsedLine:
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]


def _true(props: Mapping[str, str], name: str) -> bool:
    return props.get(name, "false").strip().lower() == "true"


class LineReader:
    def __init__(self, props: Mapping[str, str]) -> None:
        self.parse_key = _true(props, "parse.key")
        self.key_separator = props.get("key.separator", "\t")
        self.parse_headers = _true(props, "parse.headers")
        self.headers_delimiter = props.get("headers.delimiter", "\t")
        self.headers_separator = props.get("headers.separator", ",")
        self.headers_key_separator = props.get("headers.key.separator", ":")
        self.ignore_error = _true(props, "ignore.error")
        self.null_marker = props.get("null.marker")
        pairs = (("headers.delimiter", self.headers_delimiter, "headers.separator", self.headers_separator),
                 ("headers.delimiter", self.headers_delimiter, "headers.key.separator", self.headers_key_separator),
                 ("headers.separator", self.headers_separator, "headers.key.separator", self.headers_key_separator))
        for a, a_value, b, b_value in pairs:
            if a_value == b_value:
                raise LineError(f"{a} and {b} may not be equal")
        for name, value in (("key.separator", self.key_separator), ("headers.separator", self.headers_separator),
                            ("headers.delimiter", self.headers_delimiter),
                            ("headers.key.separator", self.headers_key_separator)):
            if value == self.null_marker:
                raise LineError(f"null.marker and {name} may not be equal")
        self.line_number = 0

    def _field(self, enabled: bool, line: str, start: int, separator: str, name: str) -> str | None:
        if not enabled:
            return None
        index = line.find(separator, start)
        if index == -1:
            if self.ignore_error:
                return None
            raise LineError(f"No {name} found on line number {self.line_number}: '{line}'")
        return line[start:index]

    def _bytes(self, text: str | None) -> bytes | None:
        return None if text is None or text == self.null_marker else text.encode("utf-8")

    def parse(self, line: str) -> ParsedLine:
        self.line_number += 1
        headers = self._field(self.parse_headers, line, 0, self.headers_delimiter, "headers delimiter")
        header_end = 0 if headers is None else len(headers) + len(self.headers_delimiter)
        key = self._field(self.parse_key, line, header_end, self.key_separator, "key separator")
        key_end = 0 if key is None else len(key) + len(self.key_separator)
        value = line[header_end + key_end:]
        parsed_headers: tuple[tuple[str, bytes | None], ...] = ()
        if headers is not None and headers != self.null_marker:
            parsed_headers = tuple(self._header(pair) for pair in re.split(self.headers_separator, headers))
        return ParsedLine(self._bytes(key), self._bytes(value), parsed_headers)

    def _header(self, pair: str) -> tuple[str, bytes | None]:
        index = pair.find(self.headers_key_separator)
        if index == -1:
            if self.ignore_error:
                return pair, None
            raise LineError(f"No header key separator found in pair '{pair}' on line number {self.line_number}")
        name = pair[:index]
        if name == self.null_marker:
            raise LineError(f"Header keys should not be equal to the null marker '{self.null_marker}' as they can't "
                            f"be null")
        return name, self._bytes(pair[index + len(self.headers_key_separator):])
