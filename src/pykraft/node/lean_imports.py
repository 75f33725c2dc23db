"""Keep a server process from importing what it never uses (measured in benchmarks/quorum.py's idle RSS).

Three installed libraries pull big optional modules in at import time:
- kio (`kio.static._phantom`) imports hypothesis whenever it is installed, to register test strategies for its
  types: ~8 MiB and ~100 modules (unittest, zoneinfo, ...) in a process that never runs a test;
- structlog (`structlog.tracebacks`) imports rich and pygments to pretty-print exceptions: ~3 MiB; without them
  it formats tracebacks plainly, which is what a log file wants anyway;
- prometheus_client (`exposition`) imports python-snappy for a push-gateway option the node does not use: ~2 MiB.
  prometheus_client itself is imported only when a node's metrics are read, with snappy hidden only while it
  loads (node/runtime/metrics.py): pykraft's own record codec still imports snappy when a snappy batch arrives.
`hide_optional_imports()` must run before those libraries are imported. Only a process that exists to be a server
calls it (cli/server_fast.py, before it imports the node): hiding rich or hypothesis inside a process that goes on
to run other commands or tests would change them. It leaves alone anything already imported.
"""

from __future__ import annotations

import sys

HIDDEN_FOR_GOOD = ("hypothesis", "rich")


def hide_optional_imports() -> None:
    for name in HIDDEN_FOR_GOOD:
        sys.modules.setdefault(name, None)  # type: ignore[arg-type]  # None makes `import name` raise ImportError
