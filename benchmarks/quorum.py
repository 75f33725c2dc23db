"""A 3-voter pykraft quorum against PySyncObj 0.3.17 (3 nodes, journal on disk), same host, same run.

Run: .venv/bin/python benchmarks/quorum.py [--quick] [--profile]

Measured for both, one system after the other, 100-byte commands:
- throughput: committed records/s from concurrent writers. pykraft: `--client-procs` processes x `--tasks`
  MetadataLogWriter tasks, each sending Produce (acks=-1) of `--batch` records; PySyncObj: its leader process
  keeps `--inflight` asynchronous commands outstanding (appendEntriesUseBatch=True, its best throughput setting);
- commit latency at low load: one writer, one record per request, sequential; p50/p99. pykraft with Kafka's
  defaults (append.linger.ms=25, which every low-load write waits out) and, as a second row, with
  append.linger.ms=0, the counterpart of PySyncObj's appendEntriesUseBatch=False used for its latency run; and
  the same linger-0 writes also timed as PySyncObj's are, inside the leader (Produce frame read -> answer write;
  PySyncObj's leader times its own commands), from the commit probe, on for that quorum. The end-to-end rows stay
  the headline (a client process's view); the in-leader rows compare like with like;
- failover: a sequential writer runs, the leader gets SIGKILL, time to the first write acknowledged by a new
  leader; the killed node is restarted and caught up; median of 5 runs (3 with --quick). pykraft keeps Kafka's
  default raft timeouts (election 1 s, fetch 2 s); PySyncObj keeps its defaults. pykraft again with tuned
  timeouts (election 200 ms, fetch 400 ms), 20 runs (5 with --quick), and with SIGSTOP instead of SIGKILL
  (the paused leader keeps its sockets open, so only the fetch timeout can reveal it), 3 runs (2 with --quick);
  runs with no new leader's ack within 30 s count as never recovered ("stuck");
- RSS (VmRSS) of each node after start (idle) and in the middle of the throughput run (loaded), plus each
  process's CPU seconds during the throughput run, to show which side saturates.
- the floor (`quorum_floor.py`): the same linger-0 commits through four bare processes with no protocol (client,
  leader, two followers; the same two loopback round trips and two fdatasyncs), end to end and inside the leader:
  what the machine of the run allows, against which pykraft's latency rows are also printed (machines here vary from
  day to day: stop 24's PySyncObj p50 was 0.28-0.42 ms, stop 25's 0.67); and the same processes on pykraft's event
  loop (uvloop, asyncio protocols), printed beside it: the gap between the two floors is what the event loop costs,
  the rest of pykraft's figure is its own layers.
pykraft fsyncs its log (the default); PySyncObj's journal is memory-mapped and NEVER fsynced, so it is not durable.
`--profile` adds a throughput run whose servers run under cProfile and prints the leader's top costs, then the
linger-0 latency writes with all four processes under cProfile and each one's own time by layer (commit_layers.py).
Prints a table, the ratios pykraft / PySyncObj, and one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import quorum_pykraft as pk  # after the path insert
from quorum_floor import commit_floor, event_loop_floor
import quorum_pysyncobj as ps
from commit_layers import layer_lines, profile_commits
from pykraft.cli.build_info import build_fields

LINGER = "controller.quorum.append.linger.ms"
TUNED = {"controller.quorum.election.timeout.ms": "200", "controller.quorum.fetch.timeout.ms": "400"}


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def median(samples: list[float]) -> float:
    return statistics.median(samples) if samples else float("nan")


def settle_rss(pids: dict[int, int]) -> dict[int, int]:
    time.sleep(2.0)
    return {i: pk.rss_kib(pid) for i, pid in pids.items()}


def run_pykraft(args: argparse.Namespace, root: Path) -> dict:
    out: dict = {}
    quorum = pk.PykraftQuorum(root / "pykraft", {})
    log(f"pykraft: formatting and starting 3 voters in {root / 'pykraft'}")
    quorum.start()
    try:
        out["idle_rss_kib"] = settle_rss(quorum.pids())
        leader = quorum.leader()
        log(f"pykraft: throughput ({args.client_procs} client processes x {args.tasks} writers x {args.batch} "
            f"records per Produce, {args.seconds} s)")
        result = pk.throughput(quorum, args.client_procs, args.tasks, args.batch, args.seconds)
        out.update(rate=result.rate, committed=result.committed, failed=result.failed, seconds=result.seconds,
                   loaded_rss_kib=result.loaded_rss_kib, server_cpu_s=result.server_cpu_s,
                   client_cpu_s=result.client_cpu_s, leader=leader)
        log(f"pykraft: latency ({args.latency_count} sequential single-record writes, linger 25 ms)")
        out["latency_ms"] = pk.latency(quorum, args.latency_count)
        log(f"pykraft: failover x{args.failovers} (SIGKILL the leader, default timeouts)")
        out["failover_s"] = pk.failover(quorum, args.failovers)
    finally:
        quorum.stop()
    log("pykraft: latency again with append.linger.ms=0, timed end to end and inside the leader (as PySyncObj's "
        "is), on a quorum with the commit probe on")
    linger0 = pk.latency_with_probe(root / "pykraft-linger0", {LINGER: "0"}, args.latency_count)
    out["latency_linger0_ms"], out["latency_linger0_in_leader_ms"], out["linger0_cpu_us_per_commit"] = linger0
    quorum = pk.PykraftQuorum(root / "pykraft-tuned", TUNED)
    log(f"pykraft: failover x{args.tuned_failovers} with tuned timeouts (election 200 ms, fetch 400 ms), then "
        f"x{args.stop_failovers} with SIGSTOP")
    quorum.start()
    try:
        out["failover_tuned_s"] = pk.failover(quorum, args.tuned_failovers)
        out["failover_sigstop_tuned_s"] = pk.failover(quorum, args.stop_failovers, how=signal.SIGSTOP)
    finally:
        quorum.stop()
    return out


def run_pysyncobj(args: argparse.Namespace, root: Path) -> dict:
    out: dict = {}
    cluster = ps.PeerCluster(root / "pysyncobj-batch", batch=True)
    log("PySyncObj: starting 3 nodes (appendEntriesUseBatch=True)")
    cluster.start_all()
    try:
        out["idle_rss_kib"] = settle_rss(cluster.pids())
        log(f"PySyncObj: throughput ({args.pso_count} commands, {args.inflight} in flight)")
        result = ps.throughput(cluster, args.pso_count, args.inflight)
        out.update(rate=result["committed"] / result["seconds"], committed=result["committed"],
                   seconds=result["seconds"], loaded_rss_kib=result["loaded_rss_kib"],
                   server_cpu_s=result["server_cpu_s"], leader=result["leader"])
        log(f"PySyncObj: failover x{args.failovers}")
        out["failover_s"] = ps.failover(cluster, args.failovers)
    finally:
        cluster.stop_all()
    cluster = ps.PeerCluster(root / "pysyncobj-nobatch", batch=False)
    log("PySyncObj: latency (appendEntriesUseBatch=False)")
    cluster.start_all()
    try:
        out["latency_ms"] = ps.latency(cluster, args.latency_count)
    finally:
        cluster.stop_all()
    return out


def run_profile(args: argparse.Namespace, root: Path) -> list[str]:
    quorum = pk.PykraftQuorum(root / "pykraft-profile", {}, profile=True)
    log("profile: pykraft servers under cProfile, one throughput run")
    quorum.start()
    try:
        leader = quorum.leader()
        result = pk.throughput(quorum, args.client_procs, args.tasks, args.batch, args.seconds)
    finally:
        quorum.stop()
    head = (f"leader node {leader} under cProfile: {result.rate:,.0f} records/s (profiling slows it); "
            f"server CPU s {fmt_map(result.server_cpu_s, '{:.1f}')}, clients {result.client_cpu_s:.1f} s "
            f"over {result.seconds:.1f} s")
    log(f"profile: linger-0 commits, all four processes under cProfile ({args.latency_count} writes)")
    layers = layer_lines(profile_commits(root, args.latency_count), args.latency_count)
    return [head, *pk.top_costs(quorum.profile_path(leader), 25), *layers]


def fmt_map(values: dict, pattern: str) -> str:
    return " ".join(pattern.format(v) for _, v in sorted(values.items()))


def fmt_s(value: float) -> str:
    return "stuck" if value == float("inf") else f"{value:.2f}"


def stuck(samples: list[float]) -> int:
    return sum(1 for v in samples if v == float("inf"))


def latency_rows(label: str, mine: list[float], theirs: list[float]) -> list[tuple[str, str, str, float]]:
    """The p50 and p99 rows of one latency comparison; `label` has a {} for the percentile's name."""
    return [(label.format(name), f"{percentile(mine, q):.2f}", f"{percentile(theirs, q):.2f}",
             percentile(mine, q) / percentile(theirs, q)) for name, q in (("p50", .5), ("p99", .99))]


def report(pk_out: dict, ps_out: dict) -> dict:
    rows = [
        ("committed records/s", f"{pk_out['rate']:,.0f}", f"{ps_out['rate']:,.0f}", pk_out["rate"] / ps_out["rate"]),
        *latency_rows("commit {} ms (pykraft linger 25)", pk_out["latency_ms"], ps_out["latency_ms"]),
        *latency_rows("commit {} ms (pykraft linger 0)", pk_out["latency_linger0_ms"], ps_out["latency_ms"]),
        *latency_rows("  same, inside the leader: {} ms", pk_out["latency_linger0_in_leader_ms"],
                      ps_out["latency_ms"]),
        ("failover median s", fmt_s(median(pk_out["failover_s"])), fmt_s(median(ps_out["failover_s"])),
         median(pk_out["failover_s"]) / median(ps_out["failover_s"])),
        ("failover runs s", " ".join(fmt_s(v) for v in pk_out["failover_s"]),
         " ".join(fmt_s(v) for v in ps_out["failover_s"]), None),
        ("failover tuned median / max s", f"{fmt_s(median(pk_out['failover_tuned_s']))} / "
         f"{fmt_s(max(pk_out['failover_tuned_s']))}", "-", None),
        ("SIGSTOP failover tuned runs s", " ".join(fmt_s(v) for v in pk_out["failover_sigstop_tuned_s"]), "-", None),
        ("failovers never recovered", f"{stuck(pk_out['failover_s'] + pk_out['failover_tuned_s'])} of "
         f"{len(pk_out['failover_s']) + len(pk_out['failover_tuned_s'])} (SIGSTOP "
         f"{stuck(pk_out['failover_sigstop_tuned_s'])})", f"{stuck(ps_out['failover_s'])}", None),
        ("idle RSS MiB per node", "/".join(f"{v / 1024:.0f}" for _, v in sorted(pk_out["idle_rss_kib"].items())),
         "/".join(f"{v / 1024:.0f}" for _, v in sorted(ps_out["idle_rss_kib"].items())),
         max(pk_out["idle_rss_kib"].values()) / max(ps_out["idle_rss_kib"].values())),
        ("loaded RSS MiB per node", "/".join(f"{v / 1024:.0f}" for _, v in sorted(pk_out["loaded_rss_kib"].items())),
         "/".join(f"{v / 1024:.0f}" for _, v in sorted(ps_out["loaded_rss_kib"].items())),
         max(pk_out["loaded_rss_kib"].values()) / max(ps_out["loaded_rss_kib"].values())),
        ("server CPU s in throughput run", fmt_map(pk_out["server_cpu_s"], "{:.1f}"),
         fmt_map(ps_out["server_cpu_s"], "{:.1f}"), None),
    ]
    print()
    print(f"{'':36} {'pykraft':>24} {'PySyncObj 0.3.17':>24} {'ratio':>7}")
    for label, mine, theirs, ratio in rows:
        print(f"{label:36} {mine:>24} {theirs:>24} {'' if ratio is None else f'{ratio:.2f}':>7}")
    print(f"pykraft throughput run: {pk_out['committed']:,} records in {pk_out['seconds']:.1f} s, "
          f"{pk_out['failed']} failed; leader node {pk_out['leader']}; client processes used "
          f"{pk_out['client_cpu_s']:.1f} CPU s; PySyncObj: {ps_out['committed']:,} commands in "
          f"{ps_out['seconds']:.1f} s, leader node {ps_out['leader']}")
    print("commit latency: pykraft's rows time a client process's write end to end (what a client sees); the "
          "'inside the leader' rows time, like PySyncObj's figure, Produce frame read -> answer write in the leader "
          "(the same writes, from the commit probe).")
    print("ratio = pykraft / PySyncObj. RSS ratios compare the largest node. pykraft fsyncs every commit (group "
          "commit); PySyncObj's journal is memory-mapped and never fsynced: it is NOT durable in this comparison.")
    tuned = pk_out["failover_tuned_s"]
    goals = {"throughput_ratio": rows[0][3], "p99_ratio_linger25": rows[2][3], "p99_ratio_linger0": rows[4][3],
             "p50_linger0_ms": percentile(pk_out["latency_linger0_ms"], .5),
             "p99_linger0_ms": percentile(pk_out["latency_linger0_ms"], .99),
             "p50_linger0_in_leader_ms": percentile(pk_out["latency_linger0_in_leader_ms"], .5),
             "p99_ratio_linger0_in_leader": rows[6][3],
             "failover_median_s": median(pk_out["failover_s"]), "failover_tuned_median_s": median(tuned),
             "failover_tuned_max_s": max(tuned), "failover_stuck": stuck(pk_out["failover_s"] + tuned),
             "idle_rss_mib": max(pk_out["idle_rss_kib"].values()) / 1024}
    return goals


def goal_checks(goals: dict, floor_rows: dict) -> dict:
    """Issue 34's goals, each a ratio to a peer or floor of the same run (or an absolute for failover and RSS);
    prints them and returns the floor ratios for the JSON line."""
    bare = floor_rows["end_to_end"]
    ratios = {"p50_floor_ratio_linger0": goals["p50_linger0_ms"] / bare["p50"],
              "p99_floor_ratio_linger0": goals["p99_linger0_ms"] / bare["p99"]}
    checks = [
        (f"throughput >= 12x PySyncObj ({goals['throughput_ratio']:.2f}x)", goals["throughput_ratio"] >= 12),
        (f"linger-0 p50 <= 1.5x the floor's ({ratios['p50_floor_ratio_linger0']:.2f}x)",
         ratios["p50_floor_ratio_linger0"] <= 1.5),
        (f"linger-0 p99 <= 2x the floor's ({ratios['p99_floor_ratio_linger0']:.2f}x)",
         ratios["p99_floor_ratio_linger0"] <= 2),
        (f"failover median <= 1 s at defaults ({fmt_s(goals['failover_median_s'])})", goals["failover_median_s"] <= 1),
        (f"0 stuck ({goals['failover_stuck']})", goals["failover_stuck"] == 0),
        (f"idle RSS <= 32 MiB ({goals['idle_rss_mib']:.1f})", goals["idle_rss_mib"] <= 32),
    ]
    print("goals (issue 34): " + "; ".join(f"{label}: {'met' if ok else 'MISSED'}" for label, ok in checks))
    return ratios


FLOORS = {"bare processes, no protocol": "", "the same processes on uvloop": "event_loop_"}


def floor_report(pk_out: dict, floors: dict[str, tuple[list[float], list[float]]]) -> dict:
    """Prints each floor's p50/p99 beside pykraft's linger-0 rows; returns them for the JSON line (the bare floor's
    as `end_to_end` and `in_leader`, the event loop's with the prefix `event_loop_`)."""
    out = {}
    for label, (end_to_end, inside) in floors.items():
        rows = {"end_to_end": (end_to_end, pk_out["latency_linger0_ms"]),
                "in_leader": (inside, pk_out["latency_linger0_in_leader_ms"])}
        for name, (floor, mine) in rows.items():
            p50, p99 = percentile(floor, .5), percentile(floor, .99)
            out[FLOORS[label] + name] = {"p50": p50, "p99": p99}
            ratios = f"p50 {percentile(mine, .5) / p50:.2f}x, p99 {percentile(mine, .99) / p99:.2f}x"
            print(f"floor ({label}), {name.replace('_', ' ')}: p50 {p50:.2f} ms, p99 {p99:.2f} ms; "
                  f"pykraft linger 0 / floor: {ratios}")
    cpu = pk_out["linger0_cpu_us_per_commit"]
    shares = ", ".join(f"{role} {us:.0f}" for role, us in cpu.items())
    print(f"pykraft linger-0 CPU per commit, user+system (us): {shares}; all {sum(cpu.values()):.0f}, "
          f"on {os.cpu_count()} cores")
    return out


def finite(value: object) -> object:
    """JSON has no infinity: a stuck failover becomes null."""
    if isinstance(value, float) and value == float("inf"):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite(v) for v in value]
    return value


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="shorter runs, 3 failovers (about 3 minutes)")
    parser.add_argument("--profile", action="store_true", help="also profile the pykraft leader under load")
    parser.add_argument("--client-procs", type=int, default=2)
    parser.add_argument("--tasks", type=int, default=32)
    parser.add_argument("--batch", type=int, default=250)
    parser.add_argument("--inflight", type=int, default=20_000)
    args = parser.parse_args()
    args.seconds = 5.0 if args.quick else 10.0
    args.pso_count = 80_000 if args.quick else 250_000
    args.latency_count = 300 if args.quick else 1000
    args.failovers = 3 if args.quick else 5
    args.tuned_failovers = 5 if args.quick else 20
    args.stop_failovers = 2 if args.quick else 3
    return args


def main() -> None:
    args = parse_args()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="pykraft-bench-quorum-") as tmp:
        root = Path(tmp)
        pk_out = run_pykraft(args, root)
        ps_out = run_pysyncobj(args, root)
        log(f"floors: {args.latency_count} durable commits through bare processes (no protocol), blocking and on an "
            "event loop")
        floors = {"bare processes, no protocol": commit_floor(tmp, args.latency_count),
                  "the same processes on uvloop": event_loop_floor(tmp, args.latency_count)}
        profile = run_profile(args, root) if args.profile else []
    goals = report(pk_out, ps_out)
    floor_rows = floor_report(pk_out, floors)
    goals.update(goal_checks(goals, floor_rows))
    for line in profile:
        print(line)
    summary = {"bench": "quorum", "quick": args.quick, **build_fields(), **goals,
               "pykraft": {k: v for k, v in pk_out.items() if not k.startswith("latency")},
               "pysyncobj": {k: v for k, v in ps_out.items() if not k.startswith("latency")},
               "latency_ms": {name: {"p50": percentile(s, .5), "p99": percentile(s, .99)} for name, s in (
                   ("pykraft_linger25", pk_out["latency_ms"]), ("pykraft_linger0", pk_out["latency_linger0_ms"]),
                   ("pykraft_linger0_in_leader", pk_out["latency_linger0_in_leader_ms"]),
                   ("pysyncobj", ps_out["latency_ms"]))},
               "floor_ms": floor_rows, "wall_s": time.monotonic() - started}
    print(json.dumps(finite(summary)))


if __name__ == "__main__":
    main()
