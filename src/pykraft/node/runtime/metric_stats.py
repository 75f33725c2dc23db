"""The statistics behind the metrics, kept without prometheus_client (it loads only when something reads them).

- `Histogram`: counts per bucket and a sum, observed in any unit and exposed in seconds (`scale` = observed units
  per second), as a prometheus_client Histogram exposes it (buckets `le="0.001"`, `_count`, `_sum`, `_created`).
  An observation is one bisect and two additions: cheap enough for every request.
- `WindowedStat`: Kafka's sampled statistics (`SampledStat`: `metrics.num.samples` = 2 samples of
  `metrics.sample.window.ms` = 30 s), for the raft-metrics attributes dashboards read as Kafka computes them:
  `-avg` and `-max` of the samples still in the window, and `-rate` = their sum over the elapsed window (at least
  one full sample less than the window, as Kafka's `Rate`). NaN when nothing was recorded in the window, as Kafka.
- `EventQueueStats`: Kafka's QuorumController event-queue metrics, kept by the controller host.
"""

from __future__ import annotations

import bisect
import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from prometheus_client.core import HistogramMetricFamily

# Seconds. Raft and controller events: 1 ms to 10 s; requests (a Fetch long poll waits up to its max wait): from
# 0.5 ms.
LATENCY_BUCKETS_S = (0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
REQUEST_BUCKETS_S = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
SAMPLES = 2  # Kafka's metrics.num.samples
SAMPLE_WINDOW_MS = 30_000  # Kafka's metrics.sample.window.ms


class Histogram:
    """Observations in units of 1/`scale` second (scale 1000: milliseconds), buckets given in seconds."""

    __slots__ = ("bounds", "bounds_s", "counts", "total", "created", "scale")

    def __init__(self, buckets_s: tuple[float, ...] = LATENCY_BUCKETS_S, *, scale: float = 1000.0,
                 created: float | None = None) -> None:
        self.scale = scale
        self.bounds_s = buckets_s
        self.bounds = tuple(b * scale for b in buckets_s)  # in the observed unit
        self.counts = [0] * (len(buckets_s) + 1)
        self.total = 0.0
        self.created = created

    @property
    def count(self) -> int:
        return sum(self.counts)

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.total += value

    def family(self, name: str, documentation: str) -> HistogramMetricFamily:
        from prometheus_client.core import HistogramMetricFamily

        family = HistogramMetricFamily(name, documentation, labels=())
        self.add_to(family, {})
        return family

    def add_to(self, family: HistogramMetricFamily, labels: dict[str, str]) -> None:
        """This histogram as the series of `labels` in `family` (one family, a series per label value)."""
        from prometheus_client.utils import floatToGoString

        cumulative, running = [], 0
        for bound, count in zip((*self.bounds_s, math.inf), self.counts):
            running += count
            cumulative.append((floatToGoString(bound), running))
        family.add_metric(list(labels.values()), cumulative, sum_value=self.total / self.scale)
        if self.created is not None:
            family.add_sample(f"{family.name}_created", labels, self.created)


class WindowedStat:
    """Kafka's Avg, Max and Rate of one sensor over `samples` windows of `window_ms` (times in ms)."""

    __slots__ = ("window_ms", "_samples", "_current")

    def __init__(self, samples: int = SAMPLES, window_ms: int = SAMPLE_WINDOW_MS) -> None:
        self.window_ms = window_ms
        # [start ms, count, total, max]; start -1: never used
        self._samples = [[-1, 0, 0.0, -math.inf] for _ in range(samples)]
        self._current = 0

    def record(self, value: float, now_ms: int) -> None:
        sample = self._samples[self._current]
        if sample[0] < 0 or now_ms - sample[0] >= self.window_ms:
            self._current = (self._current + 1) % len(self._samples)
            sample = self._samples[self._current]
            sample[0], sample[1], sample[2], sample[3] = now_ms, 0, 0.0, -math.inf
        sample[1] += 1
        sample[2] += value
        if value > sample[3]:
            sample[3] = value

    def _live(self, now_ms: int) -> list[list]:
        """The samples still in the window (Kafka's purgeObsoleteSamples: older than samples x window go)."""
        horizon = len(self._samples) * self.window_ms
        return [s for s in self._samples if s[0] >= 0 and now_ms - s[0] < horizon]

    def avg(self, now_ms: int) -> float:
        live = self._live(now_ms)
        count = sum(s[1] for s in live)
        return sum(s[2] for s in live) / count if count else math.nan

    def max(self, now_ms: int) -> float:
        live = [s for s in self._live(now_ms) if s[1]]
        return max(s[3] for s in live) if live else math.nan

    def rate(self, now_ms: int) -> float:
        """Per second: the sum of the live samples over the time they cover, at least (samples - 1) windows."""
        live = self._live(now_ms)
        if not live:
            return 0.0
        elapsed = now_ms - min(s[0] for s in live)
        elapsed = max(elapsed, (len(self._samples) - 1) * self.window_ms)
        return sum(s[2] for s in live) / (elapsed / 1000) if elapsed > 0 else 0.0


class EventQueueStats:
    """Kafka's QuorumController event-queue metrics, kept by the controller host (times in ms)."""

    def __init__(self) -> None:
        self.started = 0
        self.timed_out = 0
        self.queue_time_ms = Histogram()
        self.processing_time_ms = Histogram()
