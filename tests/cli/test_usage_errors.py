"""One style of usage error across the whole CLI (cli/main.py run_cli): one stderr line naming the command and
the problem, exit status 1 as Kafka's tools, whether typer parses the line or the command does it itself."""

from __future__ import annotations

import pytest

from pykraft.cli.main import run_cli


@pytest.mark.parametrize("args, line", [
    (["storage", "format"], "pykraft storage format: Missing option '--config' / '-c'."),
    (["nope"], "pykraft: No such command 'nope'."),
    (["server", "start", "--bogus"], "pykraft server start: No such option: --bogus"),
    (["server", "start", "a.properties", "--config", "b.properties"],
     "pykraft server start: Invalid value: give the node's properties file once: server start FILE or --config FILE"),
    (["sim", "run"], "pykraft sim run: Missing option '--seed'."),
    (["dump-log"], "pykraft dump-log: Invalid value for FILES: give at least one file"),
    (["metadata-quorum", "describe"],
     "pykraft metadata-quorum: One of --status or --replication must be specified with describe sub-command"),
    (["consumer-groups", "--list"], 'pykraft consumer-groups: Missing required argument "[bootstrap-server]"'),
    (["console-consumer", "--bootstrap-server", "h:1"], "pykraft console-consumer: Exactly one of --include/--topic "
                                                        "is required."),
    (["console-producer", "--topic", "t"], 'pykraft console-producer: Missing required argument "[bootstrap-server]"'),
    (["get-offsets", "--topic", "t"], 'pykraft get-offsets: Missing required argument "[bootstrap-server]"'),
    (["cluster", "unregister", "-b", "h:1"], "pykraft cluster unregister: argument --id/-i is required"),
    (["producer-perf-test", "--topic", "t"], "pykraft producer-perf-test: argument --num-records is required"),
    (["consumer-perf-test", "--topic", "t", "--messages", "x"],
     "pykraft consumer-perf-test: Cannot parse argument 'x' of option messages"),
    (["broker-api-versions", "--bootstrap"], "pykraft broker-api-versions: Option bootstrap-server requires an "
                                             "argument"),
])
def test_every_usage_error_is_one_line_and_exit_1(args, line, capsys):
    assert run_cli(args) == 1
    captured = capsys.readouterr()
    assert captured.err == line + "\n"


def test_version(capsys):
    from importlib.metadata import version

    from pykraft.cli.build_info import build_line

    assert run_cli(["--version"]) == 0
    assert capsys.readouterr().out == f"pykraft {version('pykraft')} ({build_line()})\n"
