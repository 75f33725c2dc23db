"""The bare processes behind the benchmarks' same-run floors and ceilings (quorum_floor.py, produce_ceiling.py): a
"leader" and two "followers" forked with a listening socket on 127.0.0.1 and a file of their own each, no protocol."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from multiprocessing import get_context

FOLLOWERS = (1, 2)


def own_cpu_seconds() -> float:
    """User + system CPU seconds of this process so far."""
    times = os.times()
    return times.user + times.system


def _listener() -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    return sock


@contextmanager
def leader_and_followers(directory: str, name: str, leader: Callable[..., None], follower: Callable[..., None],
                         leader_args: tuple = (), follower_args: Callable[[int], tuple] = lambda index: ()
                         ) -> Iterator[tuple[str, int]]:
    """Forks `leader(listener, follower_ports, path, *leader_args)` and, for each index in FOLLOWERS,
    `follower(listener, path, *follower_args(index))`; the paths are `<directory>/<name>-leader|follower-N`.
    Yields the leader's address; on exit joins the three, closes the listeners and removes the files."""
    context = get_context("fork")
    listeners = [_listener() for _ in range(1 + len(FOLLOWERS))]
    paths = [os.path.join(directory, f"{name}-{role}") for role in ("leader", *(f"follower-{i}" for i in FOLLOWERS))]
    ports = [listeners[i].getsockname()[1] for i in FOLLOWERS]
    processes = [context.Process(target=leader, args=(listeners[0], ports, paths[0], *leader_args))]
    processes += [context.Process(target=follower, args=(listeners[i], paths[i], *follower_args(i))) for i in FOLLOWERS]
    for process in processes:
        process.start()
    try:
        yield listeners[0].getsockname()
    finally:
        for process in processes:
            process.join(timeout=30)
        for listener in listeners:
            listener.close()
        for path in paths:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
