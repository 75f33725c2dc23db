"""The figures and lines of the perf tools, as Kafka's ProducerPerformance.Stats and ConsumerPerformance print them.

Producer: every record's latency (send to acknowledgement, ms) is counted; every 5 s a window line is printed;
at the end the total line with the latency percentiles, taken over at most 500,000 sampled latencies (every
`count / min(count, 500000)`-th, as Kafka samples), index `int(p * n)` of the sorted sample.
Consumer: the header and the summary line (`start.time, end.time, data.consumed.in.MB, MB.sec, ...`) and, with
--show-detailed-stats, one line per reporting interval; times formatted with a java.text.SimpleDateFormat
pattern (the usual letters: yyyy MM dd HH mm ss SSS).
"""

from __future__ import annotations

import asyncio
import datetime
import re
import sys
import time
from collections.abc import Callable

REPORTING_MS = 5000
MB = 1024 * 1024


def java_fixed(value: float, digits: int) -> str:
    """Java's %.Nf (HALF_UP rounding of the decimal value), for the figures Kafka prints."""
    from decimal import ROUND_HALF_UP, Decimal

    if value != value or value in (float("inf"), float("-inf")):  # NaN and Infinity print as Java's words
        return "NaN" if value != value else ("Infinity" if value > 0 else "-Infinity")
    return str(Decimal(repr(value)).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))


class ProducerStats:
    def __init__(self, records: int, reporting_ms: int = REPORTING_MS, clock: Callable[[], float] = time.monotonic,
                 out: Callable[[str], None] = print) -> None:
        self.clock, self.out = clock, out
        self.start = self.window_start = clock()
        self.sampling = max(records // min(records, 500_000), 1)
        self.samples: list[int] = []
        self.iteration = self.count = self.bytes = self.total_latency = self.max_latency = 0
        self.window_count = self.window_bytes = self.window_latency = self.window_max = 0
        self.reporting_s = reporting_ms / 1000
        self.failures = 0

    def record(self, latency_ms: int, size: int) -> None:
        self.count += 1
        self.bytes += size
        self.total_latency += latency_ms
        self.max_latency = max(self.max_latency, latency_ms)
        self.window_count += 1
        self.window_bytes += size
        self.window_latency += latency_ms
        self.window_max = max(self.window_max, latency_ms)
        if self.iteration % self.sampling == 0:
            self.samples.append(latency_ms)
        self.iteration += 1
        if self.clock() - self.window_start >= self.reporting_s:
            self.out(self.window_line())
            self.window_start = self.clock()
            self.window_count = self.window_bytes = self.window_latency = self.window_max = 0

    def callback(self, sent: float, size: int) -> Callable[[asyncio.Future], None]:
        def done(future: asyncio.Future) -> None:
            if future.exception() is None:
                self.record(int((self.clock() - sent) * 1000), size)
            else:
                self.failures += 1
                print(f"{future.exception()}", file=sys.stderr)
        return done

    def window_line(self) -> str:
        elapsed_ms = max((self.clock() - self.window_start) * 1000, 1e-9)
        return (f"{self.window_count} records sent, {java_fixed(1000 * self.window_count / elapsed_ms, 1)} "
                f"records/sec ({java_fixed(1000 * self.window_bytes / elapsed_ms / MB, 2)} MB/sec), "
                f"{java_fixed(self.window_latency / max(self.window_count, 1), 1)} ms avg latency, "
                f"{java_fixed(float(self.window_max), 1)} ms max latency.")

    def percentiles(self, *points: float) -> list[int]:
        ordered = sorted(self.samples)
        return [ordered[int(p * len(ordered))] if ordered else 0 for p in points]

    def total_line(self) -> str:
        elapsed_ms = max((self.clock() - self.start) * 1000, 1e-9)
        p50, p95, p99, p999 = self.percentiles(0.5, 0.95, 0.99, 0.999)
        average = self.total_latency / self.count if self.count else float("nan")
        return (f"{self.count} records sent, {java_fixed(1000 * self.count / elapsed_ms, 1)} records/sec "
                f"({java_fixed(1000 * self.bytes / elapsed_ms / MB, 2)} MB/sec), {java_fixed(average, 2)} ms avg "
                f"latency, {java_fixed(float(self.max_latency), 2)} ms max latency, {p50} ms 50th, {p95} ms 95th, "
                f"{p99} ms 99th, {p999} ms 99.9th.")

    def metrics_text(self, client_id: str) -> str:
        """--print-metrics: the figures this producer measures."""
        return metrics_lines("producer-metrics", client_id, {
            "record-send-total": float(self.count), "record-error-total": float(self.failures),
            "byte-total": float(self.bytes),
            "request-latency-avg": self.total_latency / self.count if self.count else 0.0,
            "request-latency-max": float(self.max_latency)})


_PADDED = {"y": "%Y", "M": "%m", "d": "%d", "H": "%H", "h": "%I", "m": "%M", "s": "%S"}
_FIELD = re.compile(r"'([^']*)'|(y+|M+|d+|H+|h+|m+|s+|S+|a|E+|Z)|(.)")


def java_date(pattern: str, epoch_ms: float) -> str:
    """`epoch_ms` in local time through a SimpleDateFormat pattern: y M d H h m s S (milliseconds, zero-padded to
    the letters' count) a E Z, text in single quotes literal."""
    moment = datetime.datetime.fromtimestamp(epoch_ms / 1000)
    out = []
    for quoted, field, literal in _FIELD.findall(pattern):
        if not field:
            out.append(quoted or literal)
        elif field[0] == "S":
            out.append(f"{int(epoch_ms) % 1000:0{max(len(field), 3)}d}"[:max(len(field), 3)])
        elif field[0] == "y":
            out.append(moment.strftime("%y" if len(field) == 2 else "%Y"))
        elif field[0] in _PADDED:
            text = moment.strftime(_PADDED[field[0]])
            out.append(text if len(field) >= 2 else text.lstrip("0") or "0")
        else:
            out.append(moment.strftime({"a": "%p", "Z": "%z"}.get(field, "%a")))
    return "".join(out)


CONSUMER_HEADER = ("start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
                   "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec")
DETAILED_HEADER = ("time, threadId, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
                   "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec")


def consumer_summary(pattern: str, start_ms: float, end_ms: float, total_bytes: int, messages: int,
                     join_ms: int) -> str:
    elapsed_s = max((end_ms - start_ms) / 1000, 1e-9)
    fetch_ms = int(end_ms - start_ms) - join_ms
    mb = total_bytes / MB
    fetch_s = fetch_ms / 1000
    return ", ".join([java_date(pattern, start_ms), java_date(pattern, end_ms), java_fixed(mb, 4),
                      java_fixed(mb / elapsed_s, 4), str(messages), java_fixed(messages / elapsed_s, 4), str(join_ms),
                      str(fetch_ms), java_fixed(mb / fetch_s if fetch_s else float("inf"), 4),
                      java_fixed(messages / fetch_s if fetch_s else float("inf"), 4)])


def consumer_progress(pattern: str, bytes_read: int, last_bytes: int, messages: int, last_messages: int,
                      start_ms: float, end_ms: float, join_ms: int) -> str:
    elapsed = max(end_ms - start_ms, 1e-9)
    interval_mb = (bytes_read - last_bytes) / MB
    fetch_ms = int(end_ms - start_ms) - join_ms
    basic = [java_date(pattern, end_ms), "0", java_fixed(bytes_read / MB, 4),
             java_fixed(1000 * interval_mb / elapsed, 4), str(messages),
             java_fixed((messages - last_messages) / elapsed * 1000, 4)]
    extended = [str(join_ms), str(fetch_ms), java_fixed(1000 * interval_mb / fetch_ms if fetch_ms > 0 else 0.0, 4),
                java_fixed(1000 * (messages - last_messages) / fetch_ms if fetch_ms > 0 else 0.0, 4)]
    return ", ".join(basic + extended)


def metrics_lines(group: str, client_id: str, rows: dict[str, float]) -> str:
    """--print-metrics: Kafka's ToolsUtils.printMetrics layout, `group:name:{client-id=...}  : value`, for the
    figures pykraft's clients measure."""
    names = [f"{group}:{name}:{{client-id={client_id}}}" for name in rows]
    width = max(len(n) for n in names)
    return "\n".join(f"{n.ljust(width)} : {java_fixed(v, 3)}" for n, v in zip(names, rows.values()))


def consumer_metrics(client_id: str, records: int, size: int, join_ms: int) -> str:
    return metrics_lines("consumer-fetch-manager-metrics", client_id, {
        "records-consumed-total": float(records), "bytes-consumed-total": float(size)}) + "\n" + metrics_lines(
        "consumer-coordinator-metrics", client_id, {"rebalance-latency-total": float(join_ms)})
