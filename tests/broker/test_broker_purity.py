"""The broker's pure parts are pure like the raft core and the controller (DESIGN §2, §6): no I/O, clock,
threads or global randomness. Same check as tests/controller/test_controller_purity.py, over pykraft/broker."""

import ast
import pathlib

import pykraft.broker

FORBIDDEN = {"socket", "asyncio", "threading", "time", "os", "pathlib", "selectors", "subprocess", "io"}


def _offences(path: pathlib.Path) -> list[str]:
    offenders = []
    for node in ast.walk(ast.parse(path.read_text())):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        offenders += [f"{path.name}: import {name}" for name in names if name.split(".")[0] in FORBIDDEN]
        # `random` only to build a seeded generator, never the module's global one; no "now" from datetime.
        if not isinstance(node, ast.Attribute):
            continue
        if isinstance(node.value, ast.Name) and node.value.id == "random" and node.attr != "Random":
            offenders.append(f"{path.name}: random.{node.attr}")
        if node.attr in {"now", "utcnow", "today", "monotonic", "perf_counter"}:
            offenders.append(f"{path.name}: {ast.unparse(node)}")
    return offenders


def test_broker_package_imports_nothing_impure() -> None:
    root = pathlib.Path(pykraft.broker.__file__).parent
    modules = sorted(root.rglob("*.py"))
    assert {p.name for p in modules} >= {"actions.py", "metadata_cache.py", "lifecycle.py", "isr_rules.py",
                                          "isr_manager.py"}
    assert [o for path in modules for o in _offences(path)] == []


def test_the_check_catches_an_impure_broker_module(tmp_path: pathlib.Path) -> None:
    module = tmp_path / "bad.py"
    module.write_text("import asyncio\nfrom time import monotonic\nimport random\nx = random.choice([1])\n"
                      "y = datetime.datetime.now()\n")
    assert _offences(module) == ["bad.py: import asyncio", "bad.py: import time", "bad.py: random.choice",
                                 "bad.py: datetime.datetime.now"]
