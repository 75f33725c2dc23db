"""Keep a server process from importing what it never uses (measured in benchmarks/quorum.py's idle RSS).

Three installed libraries pull big optional modules in at import time:
- kio (`kio.static._phantom`) imports hypothesis whenever it is installed, to register test strategies for its
  types: ~8 MiB and ~100 modules (unittest, zoneinfo, ...) in a process that never runs a test;
- structlog (`structlog.tracebacks`) imports rich and pygments to pretty-print exceptions: ~3 MiB; without them
  it formats tracebacks plainly, which is what a log file wants anyway;
- prometheus_client (`exposition`) imports python-snappy for a push-gateway option the node does not use: ~2 MiB.
  prometheus_client itself is imported only when a node's metrics are read (node/runtime/metrics.py, through
  `prometheus_client()` here), and snappy is hidden only while it loads: pykraft's own record codec still imports
  snappy when a snappy batch arrives.
`hide_optional_imports()` must run before those libraries are imported. Only a process that exists to be a server
calls it (cli/server_fast.py, before it imports the node): hiding rich or hypothesis inside a process that goes on
to run other commands or tests would change them. It leaves alone anything already imported.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType

HIDDEN_FOR_GOOD = ("hypothesis", "rich")
HIDDEN_WHILE_IMPORTING = {"prometheus_client": ("snappy",)}


def hide_optional_imports() -> None:
    for name in HIDDEN_FOR_GOOD:
        sys.modules.setdefault(name, None)  # type: ignore[arg-type]  # None makes `import name` raise ImportError


def import_lean(module: str) -> ModuleType:
    """`module`, imported (if it is not yet) with the modules HIDDEN_WHILE_IMPORTING names for it hidden."""
    if module in sys.modules:
        return sys.modules[module]
    added = [name for name in HIDDEN_WHILE_IMPORTING.get(module, ()) if name not in sys.modules]
    for name in added:
        sys.modules[name] = None  # type: ignore[assignment]
    try:
        return importlib.import_module(module)
    finally:
        for name in added:
            del sys.modules[name]


def prometheus_client() -> ModuleType:
    return import_lean("prometheus_client")
