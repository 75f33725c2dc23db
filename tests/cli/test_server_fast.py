"""`pykraft server start --config FILE` runs without typer (cli/server_fast.py); every other command line still
goes through typer, and the server process leaves out the optional modules node/lean_imports.py names."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pykraft.cli.server_fast import config_of

ENTRY = "/venv/bin/pykraft"


@pytest.mark.parametrize("argv, expected", [
    ([ENTRY, "server", "start", "--config", "a.properties"], "a.properties"),
    (["/src/pykraft/cli/main.py", "server", "start", "-c", "b.properties"], "b.properties"),
    ([ENTRY, "server", "start", "--config=c.properties"], "c.properties"),
    ([ENTRY, "server", "start", "--help"], None),
    ([ENTRY, "server", "start", "--config"], None),
    ([ENTRY, "server", "start", "--config", "--help"], None),
    ([ENTRY, "server", "start", "--config", "a", "--extra"], None),
    ([ENTRY, "server", "start", "config/server.properties"], "config/server.properties"),  # Kafka's positional form
    ([ENTRY, "server", "start", "a", "b"], None),
    ([ENTRY, "server", "stop", "--config", "a"], None),
    ([ENTRY, "storage", "format", "--config", "a"], None),
    (["/usr/bin/pytest", "server", "start", "--config", "a"], None),  # importing cli.main elsewhere runs nothing
])
def test_only_a_plain_server_start_takes_the_fast_path(argv, expected):
    assert config_of(argv) == expected


PROBE = """
import atexit, sys
PROBED = ("typer", "pydantic", "hypothesis", "rich", "pykraft.node.runtime.runtime")
atexit.register(lambda: print(sorted(m for m in PROBED if sys.modules.get(m))))
sys.argv = [sys.argv[0].rsplit("/", 1)[0] + "/main.py", *sys.argv[1:]]
import pykraft.cli.main
"""


def test_the_fast_path_runs_the_server_without_typer_pydantic_hypothesis_or_rich(tmp_path):
    # a fresh interpreter, named like the module entry; the server refuses the missing file after its imports
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    done = subprocess.run([sys.executable, str(probe), "server", "start", "--config", str(tmp_path / "missing")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "missing" in done.stderr
    assert done.stdout.strip() == "['pykraft.node.runtime.runtime']"


def test_any_other_server_command_line_still_gets_typers_parsing_and_the_one_line_usage_error():
    done = subprocess.run([sys.executable, "-m", "pykraft.cli.main", "server", "start", "--bogus"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stderr == "pykraft server start: No such option: --bogus\n"
