"""The command-line reader of the Kafka tools (cli/kafka_args.py): joptsimple's rules, and every failure one line
with exit status 1 (usage) or the tool's own (running)."""

from __future__ import annotations

import pytest

from pykraft.cli.kafka_args import (
    MULTI,
    NONE,
    OPTIONAL,
    REQUIRED,
    Flag,
    ToolError,
    UsageError,
    parse,
    refuse_with,
    require,
    run_tool,
)

FLAGS = (
    Flag("bootstrap-server", "servers", REQUIRED),
    Flag("bootstrap-controller", "controllers", REQUIRED),
    Flag("group", "group", REQUIRED, many=True),
    Flag("shift-by", "n", REQUIRED, kind=int),
    Flag("state", "states", OPTIONAL),
    Flag("list", "list", NONE),
    Flag("props", "k=v", MULTI, many=True),
    Flag("id", "id", REQUIRED, kind=int, short="i"),
)


def test_a_unique_prefix_names_a_flag_and_an_ambiguous_one_is_refused():
    assert parse(FLAGS, ["--bootstrap-s", "h:1"]).get("bootstrap-server") == "h:1"
    with pytest.raises(UsageError, match="ambiguous"):
        parse(FLAGS, ["--bootstrap", "h:1"])
    with pytest.raises(UsageError, match="^nope is not a recognized option$"):
        parse(FLAGS, ["--nope"])


def test_values_inline_negative_repeated_and_typed():
    options = parse(FLAGS, ["--group=a", "--group", "b", "--shift-by", "-2", "-i", "7"])
    assert options.all("group") == ["a", "b"] and options.integer("shift-by") == -2 and options.integer("id") == 7
    with pytest.raises(UsageError, match="^Cannot parse argument 'x' of option shift-by$"):
        parse(FLAGS, ["--shift-by", "x"])
    with pytest.raises(UsageError, match="^Option group requires an argument$"):
        parse(FLAGS, ["--group"])
    with pytest.raises(UsageError, match="does not take an argument"):
        parse(FLAGS, ["--list=yes"])


def test_an_optional_value_is_taken_only_when_the_next_word_is_not_a_flag():
    assert parse(FLAGS, ["--state", "--list"]).get("state") is None
    assert parse(FLAGS, ["--state", "stable,empty", "--list"]).get("state") == "stable,empty"
    assert parse(FLAGS, ["--state"]).has("state")


def test_multi_takes_every_following_word_until_a_flag():
    options = parse(FLAGS, ["--props", "a=1", "b=2", "--list"])
    assert options.all("props") == ["a=1", "b=2"] and options.has("list")
    with pytest.raises(UsageError, match="expected at least one argument"):
        parse(FLAGS, ["--props", "--list"])


def test_kafka_checks_word_their_messages_as_kafka():
    options = parse(FLAGS, ["--group", "g", "--list"])
    with pytest.raises(UsageError, match=r'^Missing required argument "\[bootstrap-server\]"$'):
        require(options, "bootstrap-server")
    with pytest.raises(UsageError, match=r'^Option "\[group\]" can\'t be used with option "\[list\]"$'):
        refuse_with(options, "group", "list")


def _run(args, body=lambda options: 0):
    return run_tool("pykraft tool", "A tool.", FLAGS, args, body)


def test_a_usage_problem_is_one_stderr_line_and_exit_1(capsys):
    assert _run(["--nope"]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == "pykraft tool: nope is not a recognized option\n"
    assert _run(["stray", "--list"]) == 1
    assert capsys.readouterr().err == "pykraft tool: Found non-option arguments: stray\n"


def test_a_failure_while_running_prints_the_tools_text_on_its_stream_with_its_status(capsys):
    def body(options):
        raise ToolError("\nError: it failed", 3, "stdout")

    assert _run(["--list"], body) == 3
    assert capsys.readouterr().out == "\nError: it failed\n"


def test_help_and_version_and_an_empty_line(capsys):
    assert _run(["--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("A tool.") and "--bootstrap-server <bootstrap-server>" in out and "--version" in out
    assert _run(["--version"]) == 0
    assert capsys.readouterr().out.startswith("pykraft ")
    assert _run([]) == 1  # Kafka's tools print their usage and exit 1 on an empty line
    assert capsys.readouterr().out.startswith("A tool.")
