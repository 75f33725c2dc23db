"""`pykraft server start`: run one node in the foreground until SIGTERM/SIGINT.

Exit codes: 0 after a clean stop (graceful resignation, flush, close); 1 when the configuration or the storage
cannot be used (one line on stderr, Kafka's wording where Kafka has it), or when the node fails while running.
A second signal during the graceful stop skips the wait for the hand-over (the data is flushed either way).
"""

from __future__ import annotations

import asyncio
import logging
import signal
import sys
from pathlib import Path

from pykraft.net.errors import NetError
from pykraft.storage import StorageError

from .config import ConfigError, load_config
from .logs import configure_logging
from .controller_host import controller_runtime

PREFIX = "pykraft server: "
_log = logging.getLogger("pykraft.node")


def _fail(message: str) -> int:
    print(PREFIX + " ".join(message.split()), file=sys.stderr)
    return 1


def run_server(config_path: str | Path) -> int:
    try:
        config = load_config(config_path)
    except ConfigError as exc:
        return _fail("; ".join(exc.problems))
    if not config.is_controller:
        return _fail("process.roles must contain 'controller': this runtime serves controllers only for now")
    configure_logging(config.log_format, config.node_id)
    for warning in config.warnings:
        _log.warning(warning)
    return asyncio.run(_serve(config))


async def _serve(config) -> int:  # noqa: ANN001 - NodeConfig
    try:
        runtime = controller_runtime(config)  # the QuorumController is the state machine of every controller
    except ValueError as exc:  # BootstrapFileError, or a controller setting that is not a number
        return _fail(str(exc))
    try:
        await runtime.start()
    except (StorageError, NetError, OSError) as exc:
        return _fail(str(exc))
    loop = asyncio.get_running_loop()
    signals = 0

    def on_signal() -> None:
        nonlocal signals
        signals += 1
        graceful = signals == 1
        _log.info("signal received: stopping (%s)", "graceful" if graceful else "without hand-over")
        loop.create_task(runtime.stop(graceful=graceful))

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_signal)
    try:
        await runtime.run_until_stopped()
    except BaseException as exc:  # the core or a durable write failed: the node must not go on
        _log.critical("node failed: %r", exc)
        return 1
    return 0
