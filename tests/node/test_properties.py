"""The Java-properties reader used by the node configuration and meta.properties (java.util.Properties.load)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pykraft.storage.meta_properties import MetaProperties, parse_properties


def test_comments_and_blank_lines_are_skipped():
    text = "# a comment\n   ! another\n\n\t\nkey=value\n"
    assert parse_properties(text) == {"key": "value"}


def test_the_three_separators_and_whitespace_around_them():
    text = "a=1\nb : 2\nc 3\nd\t=\t4\ne:5\n"
    assert parse_properties(text) == {"a": "1", "b": "2", "c": "3", "d": "4", "e": "5"}


def test_escaped_separators_belong_to_the_key():
    text = "d\\=x=y\nkey\\ with\\ spaces = v\nc\\:d:e\n"
    assert parse_properties(text) == {"d=x": "y", "key with spaces": "v", "c:d": "e"}


def test_only_the_first_separator_splits():
    assert parse_properties("url=http://host:9092/a=b\n") == {"url": "http://host:9092/a=b"}


def test_line_continuation_drops_the_next_lines_leading_whitespace():
    text = "listeners=CONTROLLER://:9093,\\\n          BROKER://:9092\nnext=1\n"
    assert parse_properties(text) == {"listeners": "CONTROLLER://:9093,BROKER://:9092", "next": "1"}


def test_an_even_run_of_backslashes_does_not_continue():
    text = "path=C:\\\\dir\\\\\nnext=1\n"
    assert parse_properties(text) == {"path": "C:\\dir\\", "next": "1"}


def test_continuation_at_end_of_file():
    assert parse_properties("a=b\\") == {"a": "b"}


def test_character_escapes_and_unicode():
    text = "a=\\u0041\\u00e9\\tB\\nC\\rD\\fE\nb=\\q\\#\\!\n"
    assert parse_properties(text) == {"a": "A\u00e9\tB\nC\rD\fE", "b": "q#!"}


def test_comment_marker_inside_a_value_is_kept():
    assert parse_properties("a=b # not a comment\n") == {"a": "b # not a comment"}


def test_key_without_value_and_later_keys_win():
    assert parse_properties("alone\na=1\na=2\n") == {"alone": "", "a": "2"}


def test_trailing_whitespace_is_dropped_unless_escaped():
    assert parse_properties("a=x   \nb=y\\ \n") == {"a": "x", "b": "y "}


def test_windows_line_endings():
    assert parse_properties("a=1\r\nb=2\r\n") == {"a": "1", "b": "2"}


@given(st.dictionaries(st.text(min_size=1, max_size=10), st.text(max_size=20), max_size=5))
def test_escaped_keys_and_values_round_trip(props):
    def escape(text: str, is_key: bool) -> str:
        out = []
        for i, ch in enumerate(text):
            if ch in "\\=:#! \t\f" and (is_key or ch in "\\" or (ch in " \t\f" and (i == 0 or i == len(text) - 1))):
                out.append("\\" + ch)
            elif ch in "\n\r" or not ch.isprintable():
                out.append(f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else ch)
            else:
                out.append(ch)
        return "".join(out)

    if any(ord(ch) > 0xFFFF for text in (*props, *props.values()) for ch in text):
        props = {k.encode("ascii", "ignore").decode() or "k": v.encode("ascii", "ignore").decode() for k, v in props.items()}
    text = "".join(f"{escape(k, True)}={escape(v, False)}\n" for k, v in props.items())
    assert parse_properties(text) == props


def test_meta_properties_still_parse_through_the_java_reader():
    meta = MetaProperties("MkU3OEVBNTcwNTJENDM2Qg", 3, None)
    assert MetaProperties.parse(meta.to_text()) == meta
