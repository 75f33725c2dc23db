"""`pykraft server start --config FILE` runs without typer (cli/server_fast.py); every other command line still
goes through typer, and the server process leaves out the optional modules node/lean_imports.py names."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from pykraft.cli.server_fast import config_of
from pykraft.node.local_cluster import LocalCluster

ENTRY = "/venv/bin/pykraft"


@pytest.mark.parametrize("argv, expected", [
    ([ENTRY, "server", "start", "--config", "a.properties"], "a.properties"),
    (["/src/pykraft/cli/main.py", "server", "start", "-c", "b.properties"], "b.properties"),
    ([ENTRY, "server", "start", "--config=c.properties"], "c.properties"),
    ([ENTRY, "server", "start", "--help"], None),
    ([ENTRY, "server", "start", "--config"], None),
    ([ENTRY, "server", "start", "--config", "--help"], None),
    ([ENTRY, "server", "start", "--config", "a", "--extra"], None),
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


def test_any_other_server_command_line_still_gets_typers_help_and_errors():
    done = subprocess.run([sys.executable, "-m", "pykraft.cli.main", "server", "start", "--bogus"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--bogus" in done.stderr


# What a running controller-only node must not hold (cli/server_fast.py, node/lean_imports.py, records/crc.py,
# node/runtime/metrics.py): the broker, pipeline, simulator and admin client; prometheus_client and what it drags in
# (http.server, email, urllib.request) while nobody reads the metrics; crc32c's package __init__ (importlib.metadata,
# argparse); gzip until a gzip batch arrives; structlog, which only renders the `text` log format (node/logs.py).
NOT_IN_A_CONTROLLER = ("pykraft.broker", "pykraft.pipeline", "pykraft.sim", "pykraft.admin", "typer", "pydantic",
                       "hypothesis", "rich", "prometheus_client", "http.server", "email", "urllib.request",
                       "importlib.metadata", "argparse", "crc32c", "gzip", "structlog")
RUNNING_PROBE = """
import json, sys, threading
def answer():  # a line on stdin: print the loaded modules now (the node runs on)
    for _ in sys.stdin:
        loaded = sorted(m for m, v in list(sys.modules.items()) if v is not None)
        print("LOADED " + json.dumps(loaded), flush=True)
threading.Thread(target=answer, daemon=True).start()
sys.argv = [sys.argv[0].rsplit("/", 1)[0] + "/main.py", *sys.argv[1:]]
import pykraft.cli.main
"""


def test_a_running_controller_leaves_out_what_it_does_not_use(tmp_path):
    cluster = LocalCluster(tmp_path / "cluster", controllers=1)
    cluster.format_all()
    node = cluster.nodes[1]
    probe = tmp_path / "probe.py"
    probe.write_text(RUNNING_PROBE)
    server = subprocess.Popen([sys.executable, str(probe), "server", "start", "--config", str(node.config_path)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert _line_with("is the active controller", server), "the node never became the active controller"
        server.stdin.write("now\n")  # the single voter elected itself, replayed and wrote: what does it hold?
        server.stdin.flush()
        report = _line_with("LOADED ", server)
    finally:
        server.kill()
        server.communicate(timeout=60)
    loaded = json.loads(report[report.index("LOADED ") + len("LOADED "):])
    assert "pykraft.controller.controller" in loaded and "pykraft.records.crc" in loaded  # it did run
    held = [name for name in loaded if name in NOT_IN_A_CONTROLLER or name.startswith(
        tuple(prefix + "." for prefix in NOT_IN_A_CONTROLLER))]
    assert held == []


def _line_with(text: str, process: subprocess.Popen, timeout_s: float = 60) -> str | None:
    """The first line of the process' output containing `text`; None if it exits (or `timeout_s` passes) first."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            return None
        if text in line:
            return line
    return None
