"""One PySyncObj 0.3.17 node for benchmarks/quorum.py: a replicated append-only log of 100-byte commands.

Run as a subprocess; it reads one JSON command per line on stdin and answers one JSON object per line on stdout:
  {"op": "status"}                                  -> {"leader": "host:port" | null, "ready": bool}
  {"op": "throughput", "count": N, "inflight": K}   -> {"committed": n, "seconds": s}   (async commands, K in flight)
  {"op": "latency", "count": N}                     -> {"latencies_ms": [...]}          (one command at a time)
  {"op": "ticker_start"} / {"op": "ticker_stop"}    -> commit completion times (time.time()) of a sequential writer

Configuration follows performance-anchors.md so that PySyncObj runs at its best for each measurement: log
compaction off (it snapshots inside its event loop otherwise), a journal file on disk, and `--batch` chooses
appendEntriesUseBatch (True: best throughput; False: best latency). Note: its journal is memory-mapped and never
fsynced, so PySyncObj is NOT durable here, unlike the pykraft side of the benchmark.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time

from pysyncobj import SyncObj, SyncObjConf, replicated

PAYLOAD = b"x" * 100


class ReplicatedLog(SyncObj):
    def __init__(self, self_addr: str, partners: list[str], conf: SyncObjConf) -> None:
        super().__init__(self_addr, partners, conf)
        self.length = 0

    @replicated
    def append(self, payload: bytes) -> int:
        self.length += 1
        return self.length


def _throughput(node: ReplicatedLog, count: int, inflight: int) -> dict:
    slots = threading.Semaphore(inflight)
    done = threading.Event()
    committed = [0]
    lock = threading.Lock()

    def on_done(result: object, error: object) -> None:
        with lock:
            committed[0] += 1
            if committed[0] == count:
                done.set()
        slots.release()

    start = time.perf_counter()
    for _ in range(count):
        slots.acquire()
        node.append(PAYLOAD, callback=on_done)
    done.wait(timeout=120)
    return {"committed": committed[0], "seconds": time.perf_counter() - start}


def _latency(node: ReplicatedLog, count: int) -> dict:
    latencies = []
    for _ in range(count):
        start = time.perf_counter()
        node.append(PAYLOAD, sync=True, timeout=5)
        latencies.append((time.perf_counter() - start) * 1000)
    return {"latencies_ms": latencies}


class Ticker:
    """A sequential writer that keeps committing through failures (for failover time)."""

    def __init__(self, node: ReplicatedLog) -> None:
        self.node = node
        self.times: list[float] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                self.node.append(PAYLOAD, sync=True, timeout=0.5)
                self.times.append(time.time())
            except Exception:  # SyncObjException while there is no leader: keep trying
                time.sleep(0.005)

    def finish(self) -> dict:
        self.stop.set()
        self.thread.join(timeout=5)
        return {"commit_times": self.times}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--self", dest="self_addr", required=True)
    parser.add_argument("--partners", required=True)
    parser.add_argument("--journal", required=True)
    parser.add_argument("--batch", action="store_true")
    args = parser.parse_args()
    conf = SyncObjConf(journalFile=args.journal, appendEntriesUseBatch=args.batch, dynamicMembershipChange=False,
                       logCompactionMinEntries=10**12, logCompactionMinTime=10**9, commandsQueueSize=200_000)
    node = ReplicatedLog(args.self_addr, [p for p in args.partners.split(",") if p], conf)
    ticker: Ticker | None = None
    for line in sys.stdin:
        command = json.loads(line)
        op = command["op"]
        if op == "status":
            leader = node._getLeader()
            answer = {"leader": None if leader is None else str(leader), "ready": node.isReady()}
        elif op == "throughput":
            answer = _throughput(node, command["count"], command["inflight"])
        elif op == "latency":
            answer = _latency(node, command["count"])
        elif op == "ticker_start":
            ticker, answer = Ticker(node), {"ok": True}
        elif op == "ticker_stop":
            answer = ticker.finish() if ticker else {"commit_times": []}
        else:
            answer = {"error": f"unknown op {op}"}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
