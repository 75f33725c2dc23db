"""`pykraft server start --config FILE` (or `server start FILE`) without the CLI framework.

A server runs for weeks; whatever its command line imported stays in memory. typer builds every option through
pydantic, and the two cost a node ~9 MiB of its idle RSS (benchmarks/quorum.py: 53 -> 44 MiB with the other cuts of
node/lean_imports.py). So `pykraft.cli.main` hands exactly this command line to `serve_if_asked` before it imports
typer; anything else (`--help`, a misspelt flag, another command) goes through typer as before, which prints the
usual help and errors. Same exit codes as the typer command (`run_server`'s).
"""

from __future__ import annotations

import os
import sys

_ENTRY_NAMES = ("pykraft", "main.py")  # the console script, or `python -m pykraft.cli.main`


def config_of(argv: list[str]) -> str | None:
    """The FILE of `<entry> server start --config FILE` (or `-c FILE`, `--config=FILE`, or Kafka's positional
    `server start FILE`); None for anything else."""
    if len(argv) < 4 or os.path.basename(argv[0]) not in _ENTRY_NAMES or argv[1:3] != ["server", "start"]:
        return None
    rest = argv[3:]
    if len(rest) == 2 and rest[0] in ("--config", "-c") and rest[1] and not rest[1].startswith("-"):
        return rest[1]
    if len(rest) == 1 and rest[0] and not rest[0].startswith("-"):
        return rest[0]  # Kafka's form: kafka-server-start.sh config/server.properties
    if len(rest) == 1 and rest[0].startswith("--config=") and len(rest[0]) > len("--config="):
        return rest[0][len("--config="):]
    return None


def serve_if_asked(argv: list[str]) -> None:
    """Run the server and exit if `argv` is a plain `server start --config FILE`; else return at once."""
    config = config_of(argv)
    if config is None:
        return
    from pykraft.node.lean_imports import hide_optional_imports

    hide_optional_imports()
    from pykraft.node.serve import run_server

    sys.exit(run_server(config))
