"""`pykraft server start`: run one node in the foreground until SIGTERM/SIGINT.

Exit codes: 0 after a clean stop (graceful resignation, flush, close); 1 when the configuration or the storage
cannot be used (one line on stderr, Kafka's wording where Kafka has it), when the node fails while running, or
when the final flush or close fails (one line saying why: e.g. the data directory vanished).
A second signal during the graceful stop skips the wait for the hand-over (the data is flushed either way); if
the node has still not stopped `FORCED_STOP_S` after it, the process exits at once (exit 1, one line): a second
signal always ends the process.

A controller (`process.roles=controller`) runs the QuorumController as its state machine (controller_host.py); a
broker (`process.roles=broker`) is an observer of the metadata log that registers and heartbeats
(broker_host.py): its first signal starts a controlled shutdown, and the process exits once the controller let
it go (or gave up: exit 1). Combined mode (`broker,controller`) runs both in one process (combined_host.py).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pykraft.net.errors import NetError
from pykraft.storage import StorageError

from pykraft.node.config.node_config import ConfigError, load_config
from pykraft.node.logs import configure_logging, logs_dir
from pykraft.node.roles.controller_host import controller_runtime
from pykraft.node.runtime.runtime import NodeCloseError

if TYPE_CHECKING:
    from pykraft.node.roles.broker_host import BrokerHost

PREFIX = "pykraft server: "
FORCED_STOP_S = 10.0
_STOP_STUCK = -1  # _serve's answer when the stop after a second signal did not finish
_log = logging.getLogger("pykraft.node")


def _fail(message: str) -> int:
    print(PREFIX + " ".join(message.split()), file=sys.stderr)
    return 1


def run_server(config_path: str | Path) -> int:
    try:
        config = load_config(config_path)
    except ConfigError as exc:
        for problem in exc.problems:  # each on a line of its own, as `storage format` prints them
            _fail(problem)
        return 1
    directory = logs_dir(config.logs_dir)
    try:
        configure_logging(config.log_format, config.node_id, directory=directory)
    except OSError as exc:
        return _fail(f"cannot write the log file in {directory}: {exc.strerror or exc}")
    for warning in config.warnings:
        _log.warning(warning)
    code = _run_loop(_serve(config))
    if code == _STOP_STUCK:
        # Something (a hung disk, a wedged worker thread) keeps the stop from finishing; the operator asked twice.
        _fail(f"the node did not stop within {FORCED_STOP_S:.0f} s of the second signal; exiting without a clean "
              f"close")
        sys.stderr.flush()
        os._exit(1)  # asyncio.run's own shutdown would wait for the same stuck parts
    return code


def _run_loop(main: Coroutine[Any, Any, int]) -> int:
    """asyncio.run, on uvloop where it is installed: loopback round trips measured 72 vs 115 µs, and a commit is
    two of them. PYKRAFT_EVENT_LOOP=asyncio keeps the standard loop (to compare, or to rule uvloop out)."""
    if os.environ.get("PYKRAFT_EVENT_LOOP", "").strip().lower() != "asyncio":
        try:
            import uvloop
        except ImportError:
            pass
        else:
            with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
                return runner.run(main)
    return asyncio.run(main)


async def _serve(config) -> int:  # NodeConfig
    try:
        # The QuorumController is the state machine of every controller; a broker's is its metadata cache.
        runtime = _runtime_for_roles(config)
    except ValueError as exc:  # BootstrapFileError, or a setting that is not a number
        return _fail(str(exc))
    try:
        await runtime.start()
    except (StorageError, NetError, OSError) as exc:
        return _fail(str(exc))
    broker = _broker_of(config, runtime)
    if broker is not None:
        broker.start()
    loop = asyncio.get_running_loop()
    signals = 0
    forced = asyncio.Event()

    async def graceful_stop() -> None:
        if broker is not None:
            done = await broker.controlled_shutdown()
            _log.info("controlled shutdown %s: %s", "done" if done.clean else "failed", done.reason)
        await runtime.stop(graceful=True)

    def on_signal() -> None:
        nonlocal signals
        signals += 1
        graceful = signals == 1
        _log.info("signal received: stopping (%s)", "graceful" if graceful else "without hand-over")
        loop.create_task(graceful_stop() if graceful else runtime.stop(graceful=False))
        if not graceful:
            forced.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_signal)
    try:
        if not await _stopped_unless_stuck(runtime, forced):
            return _STOP_STUCK
    except NodeCloseError as exc:  # stopped, but the final flush or close failed: say so, exit 1
        return _fail(f"stopped, but {exc}")
    except BaseException as exc:  # the core or a durable write failed: the node must not go on
        _log.critical("node failed: %r", exc)
        return 1
    finally:
        if broker is not None:
            broker.close()
    return _broker_exit(broker) if broker is not None else 0


async def _stopped_unless_stuck(runtime, forced: asyncio.Event) -> bool:  # NodeRuntime
    """Wait until the runtime stopped (raising what `run_until_stopped` raises): True. False when the stop is
    still not done `FORCED_STOP_S` after a second signal."""
    stopped = asyncio.ensure_future(runtime.run_until_stopped())

    async def stuck() -> None:
        await forced.wait()
        await asyncio.sleep(FORCED_STOP_S)

    deadline = asyncio.ensure_future(stuck())
    try:
        await asyncio.wait((stopped, deadline), return_when=asyncio.FIRST_COMPLETED)
    finally:
        deadline.cancel()
    if not stopped.done():
        stopped.cancel()
        return False
    stopped.result()
    return True


def _runtime_for_roles(config):  # NodeConfig -> NodeRuntime
    # The broker's modules are imported only by a node that has the broker role: a controller-only process
    # never uses them, and whatever it imports stays in its memory (~2 MiB of idle RSS, benchmarks/quorum.py).
    if not config.is_broker:
        return controller_runtime(config)
    if config.is_controller:
        from pykraft.node.roles.combined_host import combined_runtime

        return combined_runtime(config)
    from pykraft.node.roles.broker_host import broker_runtime

    return broker_runtime(config)


def _broker_of(config, runtime) -> BrokerHost | None:  # NodeConfig, NodeRuntime
    if not config.is_broker:
        return None
    from pykraft.node.roles.combined_host import host_parts

    return host_parts(runtime.state_machine)[1]


def _broker_exit(broker: BrokerHost) -> int:
    """0 after a clean controlled shutdown (or a stop before registering); 1 when the lifecycle gave up."""
    finished = broker.finished
    done = finished.result() if finished is not None and finished.done() else None
    if done is not None and not done.clean:
        return _fail(done.reason)
    return 0
