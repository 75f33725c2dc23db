"""The README's "A cluster of your own": the six properties files in `config/cluster/` (three controllers, three
brokers) formatted, started and used with the README's command lines, only the ports and directories moved so the
test can run beside anything else. A change that breaks the files or the lines the README shows fails here."""

from __future__ import annotations

import re
import signal
import subprocess
from pathlib import Path

from pykraft.node.local_cluster import CLI, free_ports

from .helpers import wait_for

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "config" / "cluster"
EXAMPLE_PORTS = (9092, 9093, 9094, 9095, 9096, 9097)


def _cli(*args: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120, input=stdin)
    assert not check or result.returncode == 0, result.stderr
    return result


def _moved_copies(target: Path) -> tuple[list[Path], dict[int, int]]:
    """The example files with every example port and /tmp/pykraft-cluster replaced."""
    ports = dict(zip(EXAMPLE_PORTS, free_ports(len(EXAMPLE_PORTS))))
    copies = []
    for source in sorted(EXAMPLE.glob("*.properties")):
        text = source.read_text().replace("/tmp/pykraft-cluster", str(target / "data"))
        text = re.sub(r"127\.0\.0\.1:(\d+)", lambda m: f"127.0.0.1:{ports[int(m.group(1))]}", text)
        copy = target / source.name
        copy.write_text(text)
        copies.append(copy)
    return copies, ports


def test_the_readme_cluster_runs_from_its_properties_files(tmp_path):
    readme = (REPO / "README.md").read_text()
    assert "for f in config/cluster/*.properties; do pykraft storage format --config $f" in readme
    assert "do pykraft server start $f" in readme
    copies, ports = _moved_copies(tmp_path)
    assert [c.name for c in copies] == [f"broker-{n}.properties" for n in (4, 5, 6)] + [
        f"controller-{n}.properties" for n in (1, 2, 3)]
    cluster_id = _cli("storage", "random-uuid").stdout.strip()
    for copy in copies:
        _cli("storage", "format", "--config", str(copy), "--cluster-id", cluster_id)
    processes = {}
    for copy in copies:
        log = open(tmp_path / f"{copy.stem}.log", "ab")  # the child owns it
        processes[copy.stem] = subprocess.Popen([*CLI, "server", "start", str(copy)], stdout=log,
                                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        log.close()
    broker = f"127.0.0.1:{ports[9092]}"
    try:
        wait_for(lambda: _cli("brokers", "list", "--bootstrap-server", broker, check=False).stdout.count("unfenced")
                 == 3, "three unfenced brokers")
        _cli("topics", "--create", "--topic", "events", "--bootstrap-server", broker)
        described = _cli("topics", "--describe", "--topic", "events", "--bootstrap-server",
                         f"127.0.0.1:{ports[9096]}").stdout
        # The controllers' num.partitions and default.replication.factor apply: the README's claim.
        assert "PartitionCount: 3\tReplicationFactor: 3" in described, described
        _cli("console-producer", "--topic", "events", "--bootstrap-server", broker, "--property", "parse.key=true",
             "--property", "key.separator=:", stdin="a:1\nb:2\nc:3\n")
        consumed = _cli("console-consumer", "--topic", "events", "--bootstrap-server", broker, "--from-beginning",
                        "--max-messages", "3", "--property", "print.key=true", "--group", "readme").stdout
        assert sorted(consumed.split("\n")[:3]) == ["a\t1", "b\t2", "c\t3"], consumed
        lags = _cli("consumer-groups", "--bootstrap-server", f"127.0.0.1:{ports[9094]}", "--describe", "--group",
                    "readme").stdout
        rows = [line.split() for line in lags.splitlines() if line.startswith("readme")]
        assert len(rows) == 3 and all(row[5] == "0" for row in rows), lags
    finally:
        # Brokers first (their controlled shutdown needs the controllers), as the README says.
        for names in ([n for n in processes if n.startswith("broker")],
                      [n for n in processes if n.startswith("controller")]):
            for name in names:
                processes[name].send_signal(signal.SIGTERM)
            codes = {name: processes[name].wait(timeout=60) for name in names}
            assert set(codes.values()) == {0}, codes
