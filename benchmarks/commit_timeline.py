"""The timeline of one linger-0 commit across the client and three voters, step by step, p50/p99 over N commits.

Run: .venv/bin/python benchmarks/commit_timeline.py [--commits 300] [--linger-ms 0] [--keep]

It starts a 3-voter quorum (real `pykraft server start` processes, fsync on, `append.linger.ms` 0) with
PYKRAFT_COMMIT_PROBE set (net/commit_probe.py), writes N single-record batches one after another through
`MetadataLogWriter` from this process, stops the quorum and joins every process's probe file by offset.
CLOCK_MONOTONIC is shared by the processes of one host, so a step that crosses processes (the leader answers a
Fetch -> the follower reads it) is a plain difference of two stamps.

The chain follows the commit's critical path through the follower whose Fetch acknowledged it first; the leader's
own fsync runs beside it and is printed apart (its end relative to that Fetch: negative = not on the path).
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import os
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

PAYLOAD = b"x" * 100


@dataclass
class Stamps:
    """One process's probe rows, by event: sorted lists of (t_ns, offset, peer)."""

    rows: dict[str, list[tuple[int, int, int]]] = field(default_factory=lambda: defaultdict(list))

    @classmethod
    def read(cls, path: Path) -> Stamps:
        stamps = cls()
        for line in path.read_text().splitlines():
            t, event, offset, peer = line.split("\t")
            stamps.rows[event].append((int(t), int(offset), int(peer)))
        for rows in stamps.rows.values():
            rows.sort()
        return stamps

    def first(self, event: str, after_ns: int, offset_at_least: int | None = None, offset_at_most: int | None = None,
              peer: int | None = None) -> int | None:
        """The first stamp of `event` at or after `after_ns` matching the filters; its time, or None."""
        rows = self.rows.get(event, [])
        for t, offset, p in rows[bisect.bisect_left(rows, (after_ns, -(2**62), -(2**62))):]:
            if offset_at_least is not None and offset < offset_at_least:
                continue
            if offset_at_most is not None and offset > offset_at_most:
                continue
            if peer is not None and p != peer:
                continue
            return t
        return None

    def last_before(self, event: str, before_ns: int, peer: int | None = None) -> int | None:
        rows = self.rows.get(event, [])
        for t, _, p in reversed(rows[:bisect.bisect_right(rows, (before_ns, 2**62, 2**62))]):
            if peer is None or p == peer:
                return t
        return None


CHAIN = [  # (label, process, event) in the order of the critical path; "F" is the acknowledging follower
    ("client: encode", "C", "c_start"),
    ("client -> leader: send, loopback, read", "C", "c_encoded"),
    ("leader: frame -> Produce handler", "L", "srv_in"),
    ("leader: handler -> appended on the core", "L", "produce_in"),
    ("leader: appended -> parked Fetch answered", "L", "appended"),
    ("leader -> follower: answer to the follower's read", "L", "fetch_answer"),
    ("follower: read -> core input runs (decode, queue)", "F", "fetch_resp"),
    ("follower: core handles the answer", "F", "resp_run"),
    ("follower: core's Ready -> fsync starts", "F", "resp_done"),
    ("follower: fsync", "F", "flush_start"),
    ("follower: fsync done -> next Fetch sent", "F", "flush_done"),
    ("follower -> leader: next Fetch read", "F", "fetch_sent"),
    ("leader: Fetch -> high watermark advanced", "L", "fetch_in"),
    ("leader: HWM -> Produce waiter resumed", "L", "hwm"),
    ("leader: waiter -> answer write starts", "L", "produce_done"),
    ("leader -> client: write, loopback, read", "L", "srv_out"),
    ("client: decode", "C", "c_recv"),
    ("", "C", "c_decoded"),
]


def timeline(client: Stamps, leader: Stamps, followers: dict[int, Stamps], leader_id: int
             ) -> list[dict[str, int | None]]:
    """Per commit: {event key: t_ns} along CHAIN, plus the leader's fsync stamps."""
    commits = []
    starts = client.rows["c_start"]
    for (start, _, _), (decoded, base, _) in zip(starts, client.rows["c_decoded"], strict=False):
        end = base + 1
        t: dict[str, int | None] = {"C.c_start": start, "C.c_decoded": decoded}
        t["C.c_encoded"] = client.first("c_encoded", start)
        t["C.c_recv"] = client.first("c_recv", start)
        t["L.produce_in"] = leader.first("produce_in", start)
        t["L.srv_in"] = leader.last_before("srv_in", t["L.produce_in"] or start, peer=0)
        appended = t["L.appended"] = leader.first("appended", start, offset_at_least=end)
        if appended is None:
            continue
        for key, event in (("L.flush_start", "flush_start"), ("L.flush_done", "flush_done")):
            t[key] = leader.first(event, appended, offset_at_least=end)
        t["L.fsync_begin"] = leader.first("fsync_begin", t["L.flush_start"] or appended)
        t["L.fsync_end"] = leader.first("fsync_end", t["L.flush_start"] or appended)
        best = None
        for node_id, stamps in followers.items():
            ack = leader.first("fetch_in", appended, offset_at_least=end, peer=node_id)
            if ack is not None and (best is None or ack < best[0]):
                best = (ack, node_id, stamps)
        if best is None:
            continue
        ack, node_id, follower = best
        t["F.id"] = node_id
        t["L.fetch_answer"] = leader.first("fetch_answer", appended, offset_at_most=base, peer=node_id)
        t["F.fetch_resp"] = follower.first("fetch_resp", t["L.fetch_answer"] or appended, offset_at_most=base)
        t["F.resp_run"] = follower.first("resp_run", t["F.fetch_resp"] or appended, peer=leader_id)
        t["F.resp_done"] = follower.first("resp_done", t["F.resp_run"] or appended, peer=leader_id)
        for key, event in (("F.flush_start", "flush_start"), ("F.flush_done", "flush_done"),
                           ("F.fetch_sent", "fetch_sent")):
            t[key] = follower.first(event, appended, offset_at_least=end)
        t["L.fetch_in"] = ack
        t["L.hwm"] = leader.first("hwm", appended, offset_at_least=end)
        t["L.produce_done"] = leader.first("produce_done", appended, offset_at_least=end)
        t["L.srv_out"] = leader.first("srv_out", t["L.produce_done"] or appended)
        commits.append(t)
    return commits


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def report(commits: list[dict[str, int | None]]) -> list[str]:
    lines = [f"{len(commits)} commits; milliseconds; each row: from this stamp to the next one on the chain",
             f"{'step':<52} {'p50':>7} {'p90':>7} {'p99':>7}"]

    def row(label: str, a: str, b: str) -> None:
        deltas = [(c[b] - c[a]) / 1e6 for c in commits if c.get(a) is not None and c.get(b) is not None]
        if deltas:
            lines.append(f"{label:<52} {percentile(deltas, .5):7.3f} {percentile(deltas, .9):7.3f} "
                         f"{percentile(deltas, .99):7.3f}  (n={len(deltas)})")
        else:
            lines.append(f"{label:<52} {'-':>7}")

    keys = [f"{proc}.{event}" for _, proc, event in CHAIN]
    for (label, _, _), a, b in zip(CHAIN, keys, keys[1:], strict=False):
        row(label, a, b)
    row("TOTAL (client start -> decoded)", "C.c_start", "C.c_decoded")
    # PySyncObj's latency in benchmarks/quorum.py is timed inside its leader (no client process, no client hops):
    # this row is pykraft's counterpart, the commit as the leader sees it.
    row("IN THE LEADER (Produce read -> answer write starts)", "L.srv_in", "L.srv_out")
    lines.append("beside the chain (the leader's own fsync):")
    row("leader: appended -> fsync issued", "L.appended", "L.flush_start")
    row("leader: issued -> fsync starts (after the answers)", "L.flush_start", "L.fsync_begin")
    row("leader: fsync", "L.fsync_begin", "L.fsync_end")
    row("leader: fsync done -> lane completes it", "L.fsync_end", "L.flush_done")
    row("leader: fsync done - follower's Fetch read (<0: off path)", "L.fetch_in", "L.flush_done")
    return lines


async def _write(bootstrap: list[tuple[str, int]], warmup: int, count: int) -> None:
    from pykraft.admin.writer import MetadataLogWriter

    async with MetadataLogWriter(bootstrap) as writer:
        for _ in range(warmup):
            await writer.write([PAYLOAD])
        from pykraft.net.commit_probe import PROBE

        assert PROBE is not None
        PROBE.write()
        Path(PROBE.path).unlink(missing_ok=True)  # the warm-up is not measured
        for _ in range(count):
            await writer.write([PAYLOAD])
        PROBE.write()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--commits", type=int, default=300)
    parser.add_argument("--linger-ms", type=int, default=0)
    parser.add_argument("--keep", action="store_true", help="keep the quorum's directory and the probe files")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="commit-timeline-"))
    prefix = root / "probe"
    os.environ["PYKRAFT_COMMIT_PROBE"] = str(prefix)  # before pykraft is imported: PROBE is read at import
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import quorum_pykraft as pk

    quorum = pk.PykraftQuorum(root / "quorum", {"controller.quorum.append.linger.ms": str(args.linger_ms)})
    quorum.start()
    try:
        leader_id = quorum.leader()
        pids = quorum.pids()
        time.sleep(0.5)
        asyncio.run(_write(quorum.bootstrap, 50, args.commits))
    finally:
        quorum.stop()
    files = {int(p.name.rsplit(".", 1)[1]): p for p in root.glob("probe.*")}
    by_node = {node_id: Stamps.read(files[pid]) for node_id, pid in pids.items() if pid in files}
    client = Stamps.read(files[os.getpid()])
    followers = {i: s for i, s in by_node.items() if i != leader_id}
    commits = timeline(client, by_node[leader_id], followers, leader_id)
    print(f"leader {leader_id}, followers {sorted(followers)}, linger {args.linger_ms} ms, probe files in {root}"
          if args.keep else f"leader {leader_id}, followers {sorted(followers)}, linger {args.linger_ms} ms")
    print("\n".join(report(commits)))
    if not args.keep:
        import shutil

        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
