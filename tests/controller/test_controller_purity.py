"""The controller is pure like the raft core (DESIGN §2, §6): no I/O, clock, threads or global randomness."""

import ast
import pathlib

import pykraft.controller

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
        # `random` only for the type of the generator handed in; datetime only for durations, never "now".
        if not isinstance(node, ast.Attribute):
            continue
        if isinstance(node.value, ast.Name) and node.value.id == "random" and node.attr != "Random":
            offenders.append(f"{path.name}: random.{node.attr}")
        if node.attr in {"now", "utcnow", "today"}:
            offenders.append(f"{path.name}: {ast.unparse(node)}")
    return offenders


def test_controller_package_imports_nothing_impure() -> None:
    root = pathlib.Path(pykraft.controller.__file__).parent
    assert [o for path in sorted(root.rglob("*.py")) for o in _offences(path)] == []


def test_the_check_catches_an_impure_module(tmp_path: pathlib.Path) -> None:
    module = tmp_path / "bad.py"
    module.write_text("import time\nimport random\nx = random.random()\ny = datetime.datetime.now()\n")
    assert _offences(module) == ["bad.py: import time", "bad.py: random.random", "bad.py: datetime.datetime.now"]
