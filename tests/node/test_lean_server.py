"""A controller-only `pykraft server start` process holds only what it uses (issue 16: idle RSS), and still answers
what it loads lazily: the same ApiVersions table as a node whose modules are all imported, and a CreateTopics."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time

import pytest
from kio.schema.api_versions.v3.request import ApiVersionsRequest

from pykraft.node.roles.controller_host import controller_runtime
from pykraft.node.local_cluster import LocalCluster, free_ports
from pykraft.protocol.errors import ErrorCode

from .helpers import call, leader_of, make_config, wait_for
from .test_controller_host import create_topic

# What a running controller-only node must not hold (cli/server_fast.py, node/lean_imports.py, records/crc.py,
# node/logs.py, node/runtime/metrics.py, protocol/lazy_schema.py): the broker, pipeline, simulator and admin client;
# prometheus_client and what it drags in (http.server, email, urllib.request) while nobody reads the metrics;
# crc32c's package __init__ (importlib.metadata, argparse); gzip until a gzip batch arrives; decimal (dump-log's
# float fields); structlog (node/logs.py writes both log formats itself); the kio schemas of RPCs from brokers and
# admin clients until one arrives.
NOT_IN_AN_IDLE_CONTROLLER = (
    "pykraft.broker", "pykraft.pipeline", "pykraft.sim", "pykraft.admin", "typer", "pydantic", "hypothesis", "rich",
    "prometheus_client", "http.server", "email", "urllib.request", "importlib.metadata", "argparse", "crc32c", "gzip",
    "decimal", "structlog", "kio.schema.broker_registration", "kio.schema.broker_heartbeat", "kio.schema.create_topics",
    "kio.schema.describe_configs", "kio.schema.elect_leaders", "kio.schema.update_features",
    "kio.schema.alter_partition")

PROBE = """
import json, sys, threading
def answer():  # a line on stdin: print the loaded modules now (the node runs on)
    for _ in sys.stdin:
        loaded = sorted(m for m, v in list(sys.modules.items()) if v is not None)
        print("LOADED " + json.dumps(loaded), flush=True)
threading.Thread(target=answer, daemon=True).start()
sys.argv = [sys.argv[0].rsplit("/", 1)[0] + "/main.py", *sys.argv[1:]]
import pykraft.cli.main
"""


def held(loaded: list[str]) -> list[str]:
    prefixes = tuple(name + "." for name in NOT_IN_AN_IDLE_CONTROLLER)
    return [name for name in loaded if name in NOT_IN_AN_IDLE_CONTROLLER or name.startswith(prefixes)]


def line_with(text: str, process: subprocess.Popen, *also: str, timeout_s: float = 60) -> str:
    """The first line of the process' output containing `text`, read on until lines with each of `also` went by
    too, in any order (a liveness bound, not a timing assertion)."""
    deadline = time.monotonic() + timeout_s
    wanted, found = {text, *also}, None
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        wanted -= {want for want in wanted if want in line}
        found = line if found is None and text in line else found
        if not wanted:
            return found
    raise AssertionError(f"the server never printed {sorted(wanted)}")


def loaded_modules(process: subprocess.Popen) -> list[str]:
    process.stdin.write("now\n")
    process.stdin.flush()
    report = line_with("LOADED ", process)
    # raw_decode: the print's newline is a write of its own, and a log line of the server can come before it
    return json.JSONDecoder().raw_decode(report[report.index("LOADED ") + len("LOADED "):])[0]


def version_table(answer) -> list[tuple[int, int, int]]:
    return sorted((int(k.api_key), int(k.min_version), int(k.max_version)) for k in answer.api_keys)


@pytest.mark.asyncio
async def test_an_idle_controller_process_holds_only_what_it_uses_and_answers_the_rest(tmp_path):
    cluster = LocalCluster(tmp_path / "lean", controllers=1)
    cluster.format_all()
    node = cluster.nodes[1]
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    server = subprocess.Popen([sys.executable, str(probe), "server", "start", "--config", str(node.config_path)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        # elected, replayed, wrote; and listening (the two lines come in either order)
        await asyncio.to_thread(line_with, "is the active controller", server, "listening on")
        loaded = await asyncio.to_thread(loaded_modules, server)
        assert "pykraft.controller.controller" in loaded and "pykraft.records.crc" in loaded  # it did run
        assert held(loaded) == []

        lean_versions = await call(node.address[1], ApiVersionsRequest(client_software_name="t",
                                                                       client_software_version="1"))
        created = await call(node.address[1], create_topic("lazy", 1))  # its kio module loads now
        assert created.topics[0].name == "lazy" and created.topics[0].error_code in set(ErrorCode)
        assert "kio.schema.create_topics.v7.response" in await asyncio.to_thread(loaded_modules, server)
    finally:
        server.kill()
        server.communicate(timeout=60)

    port = free_ports(1)[0]  # a node in this process, where the tests imported every module eagerly
    full = controller_runtime(make_config(tmp_path / "full", 1, {1: port}))
    await full.start()
    try:
        await wait_for(lambda: leader_of([full]) is not None)
        full_versions = await call(port, ApiVersionsRequest(client_software_name="t", client_software_version="1"))
    finally:
        await full.stop()
    assert lean_versions.error_code == full_versions.error_code == ErrorCode.NONE
    assert version_table(lean_versions) == version_table(full_versions)
    assert len(version_table(lean_versions)) > 10


def test_prometheus_client_loads_on_first_use_without_snappy_which_stays_importable():
    script = """
import sys
from pykraft.node.runtime import metrics
assert "prometheus_client" not in sys.modules
metrics.prometheus_client().CollectorRegistry()
held = "snappy" in sys.modules
import snappy
print(held, snappy.decompress(snappy.compress(b"abc")))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout.strip()) == (0, "False b'abc'"), done.stderr
