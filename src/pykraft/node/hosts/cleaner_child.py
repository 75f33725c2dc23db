"""A log cleaner pass in a child process, so that decoding a log never holds the broker's GIL (issue 27).

The broker keeps the planning and the swaps (log_cleaner.py, on its event loop); a child gets a `CleanTask`, builds
the offset map, writes each group's `.cleaned` files and asks the broker to swap each one in, the way a cleaner
thread asked before: Kafka's `.cleaned` -> `.swap` -> replace steps and their recovery are unchanged
(storage/segment_swap.py). One child per `log.cleaner.threads`, each with its own offset map of
`log.cleaner.dedupe.buffer.size / threads` bytes, started by its cleaner thread when first needed and kept from
pass to pass.

- Messages go over a socket pair, pickled (multiprocessing's `Connection`): broker -> child `("config", ...)`,
  `("clean", task)`, `("swapped", ok)`, `("exit",)`; child -> broker `("ready",)`, `("swap", files, bases)` (the
  segment written, fsynced and closed: segment_swap.CleanedFiles), `("done", end, stats)`, `("aborted",)`,
  `("failed", text)`.
- One page of memory is shared by the broker and its children (a memfd): Kafka's throttle state, so that
  `log.cleaner.io.max.bytes.per.second` bounds all children together as it bounds Kafka's threads together
  (a POSIX record lock guards it), and one abort flag per child. The broker raises a child's flag when its
  partition is truncated, deleted, paused or moved (`CleanerManager.on_abort`) or the cleaner stops; the child
  checks it between chunks and while it sleeps for the throttle, stops, and removes its half-written `.cleaned`
  files. A child that does not answer within a grace period is killed and the broker removes the files itself.
- A child dies with its cleaner thread (PR_SET_PDEATHSIG) and leaves when its broker is gone (its parent changes).
- A child runs at nice `CHILD_NICE`: compaction is background work (Kafka runs it on spare cores), so when the
  machine's cores are all busy the scheduler serves the broker's requests first and the cleaner with what is left
  (a tenth of a core's weight against each busy broker process, never nothing).
"""

from __future__ import annotations

import fcntl
import mmap
import os
import signal
import socket
import struct
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pykraft
from pykraft.storage.cleaner import Cleaner, CleanerStats, CleaningAborted, CleanTask
from pykraft.storage.cleaner_txns import transaction_seam
from pykraft.storage.compaction_rules import TransactionSeam
from pykraft.storage.offset_map import new_offset_map, throttle_step
from pykraft.storage.segment_swap import CleanedSegment, remove_cleaned

if TYPE_CHECKING:  # imported where a child starts: multiprocessing and its pickle cost an idle broker ~1.8 MiB
    from multiprocessing.connection import Connection

_THROTTLE = struct.Struct("=qd")  # the period's start (monotonic ns), the bytes observed in it
_FLAGS = 64  # where the abort flags begin in the page
_PR_SET_PDEATHSIG = 1
_SLEEP_SLICE_S = 0.05
CHILD_NICE = 10


class ChildFailed(Exception):
    """A pass failed in the child (its traceback is the message), or the child died."""


@dataclass(frozen=True, slots=True)
class ChildConfig:
    dedupe_bytes: int
    load_factor: float
    io_buffer_size: int
    max_io_bytes_per_second: float
    seam_factory: Callable[[Any], TransactionSeam] = transaction_seam  # (the pass's aborted transactions)


class SharedPage:
    """The page shared by the broker and its cleaner children (module docstring)."""

    def __init__(self, fd: int | None = None) -> None:
        if fd is None:
            fd = os.memfd_create("pykraft-log-cleaner", 0)
            os.ftruncate(fd, mmap.PAGESIZE)
            self.fd = fd
            self.map = mmap.mmap(fd, mmap.PAGESIZE)
            _THROTTLE.pack_into(self.map, 0, time.monotonic_ns(), 0.0)
        else:
            self.fd = fd
            self.map = mmap.mmap(fd, mmap.PAGESIZE)

    def aborted(self, index: int) -> bool:
        return self.map[_FLAGS + index] != 0

    def set_aborted(self, index: int, value: bool) -> None:
        self.map[_FLAGS + index] = 1 if value else 0

    def close(self) -> None:
        self.map.close()
        os.close(self.fd)


class SharedThrottler:
    """Kafka's Throttler (storage/offset_map.py) over the shared page: every process's I/O counts against one rate."""

    def __init__(self, page: SharedPage, rate_per_s: float) -> None:
        self.page, self.rate_per_s = page, rate_per_s

    def observe(self, amount: float, now_ns: int) -> float:
        fcntl.lockf(self.page.fd, fcntl.LOCK_EX, _THROTTLE.size, 0)
        try:
            start, observed = _THROTTLE.unpack_from(self.page.map, 0)
            start, observed, sleep_s = throttle_step(start, observed, amount, now_ns, self.rate_per_s)
            _THROTTLE.pack_into(self.page.map, 0, start, observed)
            return sleep_s
        finally:
            fcntl.lockf(self.page.fd, fcntl.LOCK_UN, _THROTTLE.size, 0)


# ---- the broker's side -----------------------------------------------------------------------------------------


class CleanerChild:
    """One cleaner process, driven by its cleaner thread (log_cleaner.py)."""

    def __init__(self, index: int, config: ChildConfig, page: SharedPage, *, grace_s: float = 5.0) -> None:
        self.index, self.config, self.page, self.grace_s = index, config, page, grace_s
        self.process: subprocess.Popen[bytes] | None = None
        self.conn: Connection | None = None

    @property
    def pid(self) -> int | None:
        return None if self.process is None else self.process.pid

    def start(self, stopped: Callable[[], bool]) -> None:
        """Start the process (from the thread that drives it: the child dies with that thread) and wait for it."""
        ours, theirs = socket.socketpair()
        source = str(Path(pykraft.__file__).resolve().parents[1])
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (source, os.environ.get("PYTHONPATH")) if p))
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "pykraft.node.hosts.cleaner_child", str(theirs.fileno()), str(self.page.fd),
                 str(self.index), str(os.getpid())], pass_fds=(theirs.fileno(), self.page.fd), env=env)
        finally:
            theirs.close()
        from multiprocessing.connection import Connection

        self.conn = Connection(ours.detach())
        self.conn.send(("config", self.config))
        deadline = time.monotonic() + 120
        while not self.conn.poll(0.1):
            if stopped() or self.process.poll() is not None or time.monotonic() > deadline:
                self.kill()
                raise ChildFailed(f"the log cleaner process {self.index} did not start")
        if self.conn.recv() != ("ready",):
            self.kill()
            raise ChildFailed(f"the log cleaner process {self.index} did not start")

    def clean(self, task: CleanTask, swap: Callable[[CleanTask, CleanedSegment, list[int]], bool],
              aborted: Callable[[], bool]) -> tuple[int, CleanerStats]:
        """Run `task` in the child. `swap` is called for each cleaned segment (the broker's swap on its loop);
        `aborted()` is polled. Raises CleaningAborted (the pass stopped, its files gone) or ChildFailed."""
        assert self.conn is not None
        self.page.set_aborted(self.index, False)
        self.conn.send(("clean", task))
        stopping_since: float | None = None
        while True:
            if stopping_since is None and aborted():
                self.page.set_aborted(self.index, True)
                stopping_since = time.monotonic()
            if stopping_since is not None and time.monotonic() - stopping_since > self.grace_s:
                self.kill(task)  # it did not stop in time: its files go with it
                raise CleaningAborted()
            try:
                if not self.conn.poll(_SLEEP_SLICE_S):
                    continue
                message = self.conn.recv()
            except (EOFError, OSError):
                self.kill(task)
                if stopping_since is not None:
                    raise CleaningAborted() from None
                raise ChildFailed(f"the log cleaner process {self.index} died") from None
            kind = message[0]
            if kind == "swap":  # refused while stopping: the files go (an accepted or refused swap saw to them)
                ok = self._swap(task, message, swap) if stopping_since is None else message[1].discard() or False
                self.conn.send(("swapped", ok))
            elif kind == "done":
                return message[1], message[2]
            elif kind == "aborted":
                raise CleaningAborted()
            elif kind == "failed":
                raise ChildFailed(message[1])

    def _swap(self, task: CleanTask, message: tuple, swap: Callable[[CleanTask, CleanedSegment, list[int]], bool]
              ) -> bool:
        files, bases = message[1], message[2]
        try:
            cleaned = files.attach()
        except OSError:
            files.discard()
            return False
        try:
            return swap(task, cleaned, bases)
        except CleaningAborted:
            cleaned.discard()
            return False

    def abort(self) -> None:
        self.page.set_aborted(self.index, True)

    def kill(self, task: CleanTask | None = None) -> None:
        """End the process now; a pass's half-written `.cleaned` files are removed."""
        if self.process is not None:
            self.process.kill()
            self.process.wait()
        if self.conn is not None:
            self.conn.close()
        self.process = self.conn = None
        if task is not None:
            remove_cleaned(task.directory, [s.facts.base_offset for s in task.segments])

    def close(self, grace_s: float) -> None:
        """Ask the process to leave (between passes), and kill it if it has not within `grace_s`."""
        if self.process is None:
            return
        try:
            assert self.conn is not None
            self.conn.send(("exit",))
            self.process.wait(grace_s)
        except (OSError, subprocess.TimeoutExpired):
            pass
        self.kill()


# ---- the child's side ------------------------------------------------------------------------------------------


class _ChildHost:
    """The pass's view of its broker, from the child (storage/cleaner.py's CleanerHost)."""

    def __init__(self, conn: Connection, page: SharedPage, index: int, parent: int) -> None:
        self.conn, self.page, self.index, self.parent = conn, page, index, parent

    def check_aborted(self, key: tuple[str, int] | None = None) -> None:
        if self.page.aborted(self.index) or os.getppid() != self.parent:
            raise CleaningAborted()

    def sleep(self, seconds: float) -> None:
        """The throttle's sleep, in slices: an abort does not wait for its end."""
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            self.check_aborted()
            time.sleep(min(left, _SLEEP_SLICE_S))

    def swap(self, task: CleanTask, cleaned: CleanedSegment, old_bases: list[int]) -> bool:
        self.conn.send(("swap", cleaned.detach(), old_bases))
        answer = self.conn.recv()
        return bool(answer[1])


def _die_with_parent(parent: int) -> None:
    try:
        import ctypes  # only in the child

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass  # not Linux: the parent check between chunks remains
    if os.getppid() != parent:
        sys.exit(0)


def main(argv: list[str]) -> int:
    sock_fd, page_fd, index, parent = (int(a) for a in argv[1:5])
    _die_with_parent(parent)
    os.nice(CHILD_NICE)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C of the broker's terminal is the broker's to handle
    from multiprocessing.connection import Connection

    conn = Connection(sock_fd)
    page = SharedPage(page_fd)
    kind, config = conn.recv()
    assert kind == "config"
    host = _ChildHost(conn, page, index, parent)
    cleaner = Cleaner(new_offset_map(config.dedupe_bytes, config.load_factor), config.io_buffer_size,
                      SharedThrottler(page, config.max_io_bytes_per_second), sleep=host.sleep,
                      seam_factory=config.seam_factory)
    conn.send(("ready",))
    while True:
        try:
            message: Any = conn.recv()
        except (EOFError, OSError):
            return 0
        if message[0] != "clean":
            return 0
        try:
            end, stats = cleaner.clean(message[1], host)
            conn.send(("done", end, stats))
        except CleaningAborted:
            conn.send(("aborted",))
        except Exception:  # the broker reports it and marks the partition uncleanable
            conn.send(("failed", traceback.format_exc()))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
