"""The raft core's scenario tests, re-run with FileLog wherever they use MemoryLog.

The scenario module builds its logs with `MemoryLog()`; here that name is swapped for a factory of fresh FileLogs
(each in its own directory under tmp_path) and every scenario function is called again. A scenario that passes on
MemoryLog and fails here is a protocol-level difference between the two logs.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys

import pytest

from .helpers import open_log

_RAFT_TESTS = os.path.join(os.path.dirname(os.path.dirname(__file__)), "raft")
if _RAFT_TESTS not in sys.path:
    sys.path.insert(0, _RAFT_TESTS)  # the scenario module imports its helpers as `raft_context`

scenarios = importlib.import_module("test_core_scenarios")
raft_context = importlib.import_module("raft_context")

SCENARIOS = sorted(
    name for name, fn in vars(scenarios).items()
    if name.startswith("test_") and inspect.isfunction(fn) and not inspect.signature(fn).parameters
)


@pytest.mark.parametrize("name", SCENARIOS)
def test_scenario_on_file_log(name: str, tmp_path, monkeypatch) -> None:
    opened = []

    def file_log_factory():
        log = open_log(tmp_path / f"log{len(opened)}")
        opened.append(log)
        return log

    monkeypatch.setattr(scenarios, "MemoryLog", file_log_factory)
    monkeypatch.setattr(raft_context, "MemoryLog", file_log_factory)
    try:
        getattr(scenarios, name)()
    finally:
        for log in opened:
            log.close()
    assert opened, "the scenario must have run on a FileLog"
