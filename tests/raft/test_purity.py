"""The pure packages (docs/ARCHITECTURE.md, section 1) import no I/O, clock, threads or global randomness: the
raft core, the controller and the broker's pure parts. Time comes in as `now_ms` and randomness as an injected
`random.Random`."""

import ast
import pathlib

import pytest

import pykraft.broker
import pykraft.controller
import pykraft.raft

PURE_PACKAGES = [pykraft.raft, pykraft.controller, pykraft.broker]
FORBIDDEN = {"socket", "asyncio", "threading", "time", "os", "pathlib", "selectors", "subprocess", "io"}
CLOCK_READS = {"now", "utcnow", "today", "monotonic", "perf_counter"}


def offences(path: pathlib.Path) -> list[str]:
    offenders = []
    for node in ast.walk(ast.parse(path.read_text())):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        offenders += [f"{path.name}: import {name}" for name in names if name.split(".")[0] in FORBIDDEN]
        if not isinstance(node, ast.Attribute):
            continue
        # `random` only for the type of the injected generator, never the module's global one.
        if isinstance(node.value, ast.Name) and node.value.id == "random" and node.attr != "Random":
            offenders.append(f"{path.name}: random.{node.attr}")
        if node.attr in CLOCK_READS:
            offenders.append(f"{path.name}: {ast.unparse(node)}")
    return offenders


@pytest.mark.parametrize("package", PURE_PACKAGES, ids=lambda p: p.__name__)
def test_pure_package_imports_nothing_impure(package) -> None:
    root = pathlib.Path(package.__file__).parent
    assert [o for path in sorted(root.rglob("*.py")) for o in offences(path)] == []


def test_the_check_catches_an_impure_module(tmp_path: pathlib.Path) -> None:
    module = tmp_path / "bad.py"
    module.write_text("import time\nimport random\nx = random.random()\ny = datetime.datetime.now()\n")
    assert offences(module) == ["bad.py: import time", "bad.py: random.random", "bad.py: datetime.datetime.now"]
