"""An opt-in timeline probe of the commit path: `PYKRAFT_COMMIT_PROBE=<path prefix>` in a process's environment
makes it record `(time.monotonic_ns(), event, offset, peer)` at the steps of one commit, and write them to
`<prefix>.<pid>` (tab-separated lines) in batches and at exit. benchmarks/commit_timeline.py joins the files of a
client and three voters into one timeline per commit: CLOCK_MONOTONIC is shared by every process on one host, so
the stamps of different processes line up.

Off by default, and then free: `PROBE` is None and every call site is `if PROBE is not None: PROBE.stamp(...)`.
Diagnostics only: a probe that cannot write its file stops recording and never fails the node.
"""

from __future__ import annotations

import atexit
import os
import threading
import time

ENV = "PYKRAFT_COMMIT_PROBE"
_FLUSH_ROWS = 8192


class CommitProbe:
    def __init__(self, prefix: str) -> None:
        self.path = f"{prefix}.{os.getpid()}"
        self._rows: list[tuple[int, str, int, int]] = []
        self._lock = threading.Lock()  # stamps also come from the flusher's worker thread
        self._broken = False
        atexit.register(self.write)

    def stamp(self, event: str, offset: int = -1, peer: int = -1) -> None:
        self._rows.append((time.monotonic_ns(), event, offset, peer))  # list.append is atomic under the GIL
        if len(self._rows) >= _FLUSH_ROWS:
            self.write()

    def write(self) -> None:
        with self._lock:
            rows, self._rows = self._rows, []
            if self._broken or not rows:
                return
            try:
                with open(self.path, "a", encoding="ascii") as out:
                    out.writelines(f"{t}\t{event}\t{offset}\t{peer}\n" for t, event, offset, peer in rows)
            except OSError:
                self._broken = True


def _from_environment() -> CommitProbe | None:
    prefix = os.environ.get(ENV)
    return CommitProbe(prefix) if prefix else None


PROBE: CommitProbe | None = _from_environment()
