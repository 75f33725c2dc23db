"""The `.lock` file of a log directory: one process, one opener.

Two locks are taken on the same file:
- `flock` (per open file description): a second open in the *same* process fails too, which the POSIX lock
  alone would allow;
- `lockf`/`fcntl` (POSIX record lock, per process): what the JVM's `FileChannel.tryLock` takes, so a Kafka
  process and a pykraft process exclude each other as well.
"""

from __future__ import annotations

import fcntl
import os

from .errors import LogDirectoryLockedError

LOCK_FILE = ".lock"


class DirectoryLock:
    """An exclusive, non-blocking lock on `<directory>/.lock`, held until `release()` or process exit."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.path = os.path.join(directory, LOCK_FILE)
        os.makedirs(directory, exist_ok=True)
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.lockf(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(self._fd)
            self._fd = -1
            raise LogDirectoryLockedError(
                f"{directory} is in use: could not lock {self.path} ({exc.strerror}). Another pykraft or Kafka "
                f"process has it open; stop that process first, or use a different metadata.log.dir."
            ) from None

    @property
    def held(self) -> bool:
        return self._fd >= 0

    def release(self) -> None:
        if self._fd >= 0:
            # Closing the descriptor drops both locks.
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> DirectoryLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
