"""The raft core is pure: no I/O, clock, threads or global randomness anywhere in pykraft/raft/."""

import ast
import pathlib

import pykraft.raft

FORBIDDEN = {"socket", "asyncio", "threading", "time", "os", "pathlib", "selectors", "subprocess"}


def test_raft_package_imports_nothing_impure() -> None:
    root = pathlib.Path(pykraft.raft.__file__).parent
    offenders = []
    for path in root.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                if name.split(".")[0] in FORBIDDEN:
                    offenders.append(f"{path.name}: {name}")
            # `random` may be imported only for the type of the injected generator, never called at module level
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "random" \
                    and node.attr != "Random":
                offenders.append(f"{path.name}: random.{node.attr}")
    assert offenders == []
