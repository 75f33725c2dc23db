"""Issue 12 item 4: a `pykraft` command must not hang on a paused (SIGSTOPped) leader. Real server processes on
127.0.0.1; the command runs against a live follower with a request timeout far above the bound, so only the
admin client's liveness probe and leader rediscovery can make it answer in time."""

from __future__ import annotations

import signal
import subprocess
import time

import pytest

from pykraft.node.local_cluster import CLI, LocalCluster

from .helpers import FAST_TIMEOUTS, leader_status, wait_for

# A liveness bound, not a benchmark: the fixed client answers within a few seconds of the new election; the old
# one waited for its request timeout (set to 120 s below) before trying anyone else.
ANSWER_BOUND_S = 60


@pytest.fixture
def cluster(tmp_path):
    cluster = LocalCluster(tmp_path / "cluster", controllers=3, properties=FAST_TIMEOUTS)
    yield cluster
    for node_id in cluster.nodes:
        cluster.signal(node_id, signal.SIGCONT)
    cluster.stop_all(timeout=20)


def test_describe_status_against_a_follower_answers_soon_after_the_leader_is_paused(cluster, tmp_path):
    cluster.format_all()
    cluster.start_all()
    paused = wait_for(lambda: leader_status(cluster), "a leader")["LeaderId"]
    follower = next(n for i, n in cluster.nodes.items() if i != paused)
    command_config = tmp_path / "admin.properties"
    command_config.write_text("request.timeout.ms=120000\ndefault.api.timeout.ms=180000\n")

    cluster.signal(paused, signal.SIGSTOP)
    started = time.monotonic()
    try:
        result = subprocess.run(
            [*CLI, "metadata-quorum", "--bootstrap-controller", f"127.0.0.1:{follower.port}", "--command-config",
             str(command_config), "describe", "--status"],
            capture_output=True, text=True, timeout=ANSWER_BOUND_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"describe --status gave no answer within {ANSWER_BOUND_S} s of pausing leader {paused}")
    elapsed = time.monotonic() - started
    assert result.returncode == 0, result.stderr
    fields = dict(line.split(":", 1) for line in result.stdout.splitlines() if ":" in line)
    new_leader = int(fields["LeaderId"])
    print(f"describe --status answered in {elapsed:.1f} s after pausing leader {paused}: leader {new_leader}")
    assert new_leader not in (paused, -1), f"the answer must come from the new leader (took {elapsed:.1f} s)"
