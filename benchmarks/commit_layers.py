"""Where a linger-0 commit's CPU goes, by layer: the four processes of benchmarks/quorum.py's latency run (client,
leader, two followers) under cProfile, each one's own time grouped by the layer its functions live in.

Used by `benchmarks/quorum.py --profile` (run it alone: `.venv/bin/python benchmarks/commit_layers.py [--count N]`).
cProfile's per-call cost inflates Python-heavy layers against C ones, so the shares say where the time goes, not
what the commit costs without the profiler (quorum.py's CPU per commit row says that). In the compiled build
(`.venv-compiled`) the mypyc-compiled functions are invisible to cProfile: their time is counted in their
interpreted callers, so compare the pure build's shares with the compiled build's totals. A server's profile
covers its whole life: imports are left out, the rest of its start-up (a few ms) is in, so use a count of writes
that dwarfs it (1000 by default).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import runpy
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import quorum_pykraft as pk  # after the path insert
from pykraft.node.local_cluster import LocalCluster

LINGER0 = {"controller.quorum.append.linger.ms": "0"}


def layer_of(filename: str) -> str:
    """The layer a profiled function belongs to: pykraft's package, asyncio, kio, C built-ins, or the rest."""
    path = filename.replace("\\", "/")
    if "/pykraft/" in path:
        parts = path.split("/pykraft/", 1)[1].split("/")
        return f"pykraft.{parts[0]}" if len(parts) > 1 else "pykraft"
    if filename == "~" or filename.startswith("<"):
        return "C built-ins (syscalls, struct, crc, ...)"
    for name in ("asyncio", "uvloop", "kio", "structlog", "selectors", "socket", "ssl"):
        if f"/{name}/" in path or path.endswith(f"/{name}.py"):
            return name
    return "stdlib and other libraries"


def layer_shares(stats: pstats.Stats) -> tuple[float, dict[str, float]]:
    """(total own seconds, share of each layer) of one profile."""
    own: dict[str, float] = defaultdict(float)
    for (filename, _, name), row in stats.stats.items():  # type: ignore[attr-defined]
        if name == "<module>" or filename.startswith("<frozen"):
            continue  # imports at start-up: not the commits'
        own[layer_of(filename)] += row[2]
    total = sum(own.values())
    return total, {layer: seconds / total for layer, seconds in sorted(own.items(), key=lambda kv: -kv[1])}


class CpuProfiledCluster(LocalCluster):
    """Servers under cProfile timed by CPU time (process_time), not the wall clock: a server waiting in epoll for
    the next request spends no CPU, and must not look like it does. Each writes <node dir>/server.prof at exit."""

    def start(self, node_id: int):  # LocalNode
        node = self.nodes[node_id]
        if node.is_running():
            return node
        command = [sys.executable, __file__, "--serve-profiled", str(node.directory / "server.prof"),
                   "server", "start", "--config", str(node.config_path)]
        with open(node.log_path, "ab") as log:
            node.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
        return node


class CpuProfiledQuorum(pk.PykraftQuorum):
    def __post_init__(self) -> None:
        self.cluster = CpuProfiledCluster(self.root, controllers=3,
                                          properties={"pykraft.produce.enable": "true", **self.properties})
        self.bootstrap = [n.address for n in self.cluster.nodes.values()]


def serve_profiled(out: str, argv: list[str]) -> None:
    """Run pykraft's CLI with `argv` under a CPU-time profiler; the profile is written when the server exits."""
    profiler = cProfile.Profile(time.process_time)
    sys.argv = ["pykraft", *argv]
    profiler.enable()
    try:
        runpy.run_module("pykraft.cli.main", run_name="__main__", alter_sys=True)
    except SystemExit:
        pass
    finally:
        profiler.disable()
        profiler.dump_stats(out)


def profile_commits(root: Path, count: int) -> dict[str, tuple[float, dict[str, float]]]:
    """Per process ("client", "leader", "follower N"): (own CPU s under the profiler, layer shares) over `count`
    sequential single-record linger-0 writes (plus latency()'s warm-up)."""
    quorum = CpuProfiledQuorum(root / "pykraft-layers", LINGER0)
    quorum.start()
    client = cProfile.Profile(time.process_time)
    try:
        leader = quorum.leader()
        client.enable()
        pk.latency(quorum, count)
        client.disable()
    finally:
        quorum.stop()  # each server writes its profile at SIGTERM
    out = {"client": layer_shares(pstats.Stats(client))}
    for node in sorted(quorum.cluster.nodes):
        role = "leader" if node == leader else f"follower {node}"
        out[role] = layer_shares(pstats.Stats(str(quorum.profile_path(node))))
    return out


def layer_lines(profiles: dict[str, tuple[float, dict[str, float]]], count: int, top: int = 8) -> list[str]:
    lines = [f"linger-0 commits under cProfile ({count} writes): own time per process by layer"]
    for role, (total, shares) in profiles.items():
        parts = ", ".join(f"{layer} {100 * share:.0f}%" for layer, share in list(shares.items())[:top])
        lines.append(f"  {role:<11} {total:6.2f} s: {parts}")
    return lines


def main() -> None:
    if sys.argv[1:2] == ["--serve-profiled"]:
        serve_profiled(sys.argv[2], sys.argv[3:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pykraft-bench-layers-") as tmp:
        for line in layer_lines(profile_commits(Path(tmp), args.count), args.count):
            print(line)


if __name__ == "__main__":
    main()
