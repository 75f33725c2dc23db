"""`analyze`'s progress bar on stderr: one line per step, and inside a step a line whenever Spark's tasks move
(the active stages' finished tasks against their total, read from Spark's status tracker by a thread once a
second, a line when they moved), so that a long step shows life."""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, TextIO

POLL_S = 1.0
QUIET_S = 5.0  # a line at least this often while tasks are unchanged but a stage is still running


class Progress:
    def __init__(self, steps: int, stream: TextIO | None = None, spark: Any = None) -> None:
        self.steps, self.done, self.stream = steps, 0, stream or sys.stderr
        self.what = ""
        self._stages: dict[int, list[int]] = {}  # stage id -> [finished, total] of the step's stages
        self._tracker = None if spark is None else spark.sparkContext.statusTracker()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def _bar(self, fraction: float) -> str:
        filled = min(20, round(20 * fraction))
        return f"[{'#' * filled}{'.' * (20 - filled)}]"

    def _print(self, line: str) -> None:
        with self._lock:
            print(line, file=self.stream, flush=True)

    def step(self, what: str) -> None:
        """Step `what` finished; the next one starts."""
        self.done += 1
        self._print(f"analyze {self._bar(self.done / self.steps)} {self.done}/{self.steps} {what}")

    def start(self, what: str) -> None:
        """Step `what` starts: from now on, its Spark tasks are reported as they finish."""
        with self._lock:
            self.what = what
            self._stages = {}
        if self._tracker is not None and self._thread is None:
            self._thread = threading.Thread(target=self._watch, name="analyze-progress", daemon=True)
            self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2)

    def _tasks(self) -> tuple[int, int]:
        """(finished, total) tasks of every stage seen since the step started: a stage no longer active counts
        as finished, so the figure only grows (stages start while others end)."""
        tracker = self._tracker
        assert tracker is not None  # the watcher runs only with a tracker
        active = set(tracker.getActiveStageIds())
        with self._lock:
            for stage_id, counts in self._stages.items():
                if stage_id not in active:
                    counts[0] = counts[1]
            for stage_id in active:
                info = tracker.getStageInfo(stage_id)
                if info is not None:
                    self._stages[stage_id] = [info.numCompletedTasks, info.numTasks]
            return (sum(c[0] for c in self._stages.values()), sum(c[1] for c in self._stages.values()))

    def _watch(self) -> None:
        last: tuple[int, int] | None = None
        last_line = time.monotonic()
        while not self._stop.wait(POLL_S):
            try:
                done, total = self._tasks()
            except Exception:  # the session stopped under us: nothing left to show
                return
            now = time.monotonic()
            if total and done < total and ((done, total) != last or now - last_line >= QUIET_S):
                step = self.done + done / total
                self._print(f"analyze {self._bar(step / self.steps)} {self.done + 1}/{self.steps} {self.what}: "
                            f"{done}/{total} tasks")
                last, last_line = (done, total), now
