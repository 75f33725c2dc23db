"""How long a `pykraft` command takes to answer after the leader is paused (SIGSTOP): 3 controllers as real
processes with Kafka's default raft timeouts.

Run: .venv/bin/python benchmarks/paused_leader.py [--rounds N]

Each round pauses the current leader and times `pykraft metadata-quorum describe --status` run against a live
follower until it answers with the new leader (CLI start-up included), then resumes the paused node. The peer
figure measured in the same run is the CLI's own cost: the same command against the same follower with every node
running. Kafka's bound for electing the new leader is the fetch timeout plus the election timeout (2 s + up to
2 x 1 s); the issue's target is that the command answers within about the election timeout plus 2 s of that.
Prints one line per round, the medians, and one JSON line.
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from pykraft.node.local_cluster import CLI, LocalCluster


def describe(node_port: int) -> tuple[float, int]:
    started = time.monotonic()
    result = subprocess.run([*CLI, "metadata-quorum", "--bootstrap-controller", f"127.0.0.1:{node_port}",
                             "describe", "--status"], capture_output=True, text=True, timeout=300, check=True)
    leader = next(int(line.split(":", 1)[1]) for line in result.stdout.splitlines() if line.startswith("LeaderId"))
    return time.monotonic() - started, leader


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pykraft-paused-") as root:
        cluster = LocalCluster(Path(root), controllers=3)
        cluster.format_all()
        cluster.start_all()
        paused_s, baseline_s = [], []
        try:
            leader = _wait_for_leader(cluster)
            for round_ in range(args.rounds):
                follower = next(n for i, n in cluster.nodes.items() if i != leader)
                baseline_s.append(describe(follower.port)[0])
                cluster.signal(leader, signal.SIGSTOP)
                took, new_leader = describe(follower.port)
                cluster.signal(leader, signal.SIGCONT)
                paused_s.append(took)
                print(f"round {round_}: leader {leader} paused, answered in {took:.2f} s (new leader {new_leader}); "
                      f"unpaused cluster {baseline_s[-1]:.2f} s", flush=True)
                time.sleep(3)
                leader = _wait_for_leader(cluster)
        finally:
            cluster.stop_all(timeout=20)
    paused, baseline = statistics.median(paused_s), statistics.median(baseline_s)
    print(f"median: {paused:.2f} s after the pause, {baseline:.2f} s unpaused, ratio {paused / baseline:.1f}")
    print(json.dumps({"paused_leader_answer_s": paused, "unpaused_answer_s": baseline, "ratio": paused / baseline}))


def _wait_for_leader(cluster: LocalCluster) -> int:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            _, leader = describe(next(iter(cluster.nodes.values())).port)
        except subprocess.CalledProcessError:
            leader = -1
        if leader >= 0:
            return leader
        time.sleep(0.5)
    raise SystemExit("no leader within 60 s")


if __name__ == "__main__":
    main()
