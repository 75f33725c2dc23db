"""The layers of docs/ARCHITECTURE.md (section 2), enforced: every import in src/pykraft (module level, inside
functions, under `if TYPE_CHECKING:`) is walked with `ast`, and an import of a package its layer may not use
fails, naming the file and the line.

The layers are data: `MAY_IMPORT` says which packages each package may import (besides itself). It must stay a
DAG (checked below), so "imports only go downwards" holds by construction. The few narrow exceptions name the
one file that needs them and why; any other file of that package making the same import still fails."""

from __future__ import annotations

import ast
import functools
import pathlib
import subprocess
import sys

import pykraft

SRC = pathlib.Path(pykraft.__file__).parent
BOTTOM = frozenset({"protocol"})
# cli → admin, node, pipeline, sim → controller, broker → raft → records → protocol; node → net, storage.
MAY_IMPORT: dict[str, frozenset[str]] = {
    "protocol": frozenset(),
    "records": frozenset({"protocol"}),
    "raft": frozenset({"records", "protocol"}),
    "controller": frozenset({"raft", "records", "protocol"}),
    "broker": frozenset({"controller", "raft", "records", "protocol"}),  # the broker's image reuses the controller's
    "net": frozenset({"protocol"}),
    "storage": frozenset({"raft", "records", "protocol"}),  # the file log implements raft's log interface
    "node": frozenset({"broker", "controller", "raft", "records", "protocol", "net", "storage"}),
    # The simulator hosts the same pure parts as the node, never the node itself (no asyncio, no files).
    "sim": frozenset({"broker", "controller", "raft", "records", "protocol"}),
    "admin": frozenset({"net", "storage", "raft", "records", "protocol"}),  # storage: meta.properties parsing
    "pipeline": frozenset({"admin", "sim", "storage", "controller", "raft", "records", "protocol"}),
    "cli": frozenset({"admin", "node", "pipeline", "sim", "controller", "broker", "raft", "records", "protocol",
                      "net", "storage"}),
    "": frozenset(),  # pykraft/__init__.py
}
# (file relative to src/pykraft, package it may import beyond its layer): why.
EXCEPTIONS: dict[tuple[str, str], str] = {
    ("admin/connect.py", "node"): "add-controller reads the new controller's own properties file (in-function)",
    ("pipeline/layout.py", "node"): "the name of the trace file a node writes (TRACE_FILE)",
    ("sim/engine/export.py", "storage"): "an exported run is written as node directories with meta.properties",
}


def parsed(path: pathlib.Path) -> ast.Module:
    """The file's syntax tree; the five walks below share one parse of each of the ~500 files (a file planted by a
    self-test is a new path, or a new size and time, so it is parsed afresh)."""
    status = path.stat()
    return _parse(str(path), status.st_mtime_ns, status.st_size)


@functools.lru_cache(maxsize=None)
def _parse(path: str, mtime_ns: int, size: int) -> ast.Module:
    del mtime_ns, size  # part of the cache key only
    return ast.parse(pathlib.Path(path).read_text(), path)


def package_of(path: pathlib.Path) -> str:
    parts = path.relative_to(SRC).parts
    return parts[0] if len(parts) > 1 else ""


def imported_modules(path: pathlib.Path) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import statement in the file, wherever it stands."""
    relative = path.relative_to(SRC.parent).with_suffix("").parts  # ("pykraft", "sim", "node")
    package = relative[:-1] if relative[-1] != "__init__" else relative[:-1]
    found: list[tuple[int, str]] = []
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                found.append((node.lineno, node.module or ""))
                continue
            base = list(package[:len(package) - (node.level - 1)])
            module = ".".join(base + ([node.module] if node.module else []))
            # `from . import x` may import a sub-module x: count each name as a module of the package.
            names = [f"{module}.{alias.name}" for alias in node.names] if not node.module else [module]
            found += [(node.lineno, name) for name in names]
    return found


def offences(src: pathlib.Path = SRC) -> list[str]:
    offenders = []
    for path in sorted(src.rglob("*.py")):
        source = package_of(path)
        for line, module in imported_modules(path):
            parts = module.split(".")
            if parts[0] != "pykraft" or len(parts) < 2:
                continue
            target = parts[1] if (SRC / parts[1]).is_dir() else ""
            if target == source or target in MAY_IMPORT[source]:
                continue
            if (path.relative_to(SRC).as_posix(), target) in EXCEPTIONS:
                continue
            offenders.append(f"{path.relative_to(SRC.parent)}:{line}: {source or 'pykraft'} imports {module}")
    return offenders


def test_every_import_goes_down_the_layers() -> None:
    assert offences() == []


def test_every_package_has_a_layer() -> None:
    packages = {p.name for p in SRC.iterdir() if (p / "__init__.py").exists()}
    assert packages | {""} == set(MAY_IMPORT)


def test_the_layers_are_a_dag() -> None:
    order: list[str] = []
    remaining = dict(MAY_IMPORT)
    while remaining:
        ready = [name for name, uses in remaining.items() if uses <= set(order)]
        assert ready, f"a cycle among {sorted(remaining)}"
        order += ready
        for name in ready:
            del remaining[name]
    assert set(order[:1]) <= BOTTOM | {""}


# node/ is a strict stack (issue 28): each sub-folder may import only the ones below it. config (properties) <
# runtime (the core task, listeners, the requests a node answers itself, commit waiters, authorization) < hosts (the
# state owners: partitions, groups, transactions) < apis (request handlers over the hosts) < roles (a controller, a
# broker or a combined node assembled from hosts and apis) < node's own top-level modules ("node/": serve.py and its
# helpers). The sub-folders of sim/ are not a strict order yet (sim/engine and sim/checks or sim/scenarios,
# sim/hosts and sim/scenarios import each other): what is enforced there is the direct imports that no file makes
# today and that would tangle the roles further. (Each set lists what the key may NOT import.)
NODE_STACK = ("node/config", "node/runtime", "node/hosts", "node/apis", "node/roles", "node/")
SUBFOLDERS_MAY_NOT_IMPORT: dict[str, frozenset[str]] = {
    **{layer: frozenset(NODE_STACK[i + 1:]) for i, layer in enumerate(NODE_STACK)},
    "sim/engine": frozenset({"sim/hosts"}),  # the simulated raft node; the controller and broker hosts extend it
    "sim/scenarios": frozenset({"sim/checks"}),  # scenarios say what happens, checks judge it
}


def test_every_node_subfolder_is_on_the_stack() -> None:
    folders = {f"node/{p.name}" for p in (SRC / "node").iterdir() if (p / "__init__.py").exists()}
    assert folders | {"node/"} == set(NODE_STACK)


def subfolder_of(parts: tuple[str, ...]) -> str:
    """"node/hosts" for ("node", "hosts", ...), "node/" for a top-level module of node ("node", "serve")."""
    return f"{parts[0]}/{parts[1]}" if len(parts) > 1 and (SRC / parts[0] / parts[1]).is_dir() else f"{parts[0]}/"


def subfolder_offences(src: pathlib.Path = SRC) -> list[str]:
    offenders = []
    for path in sorted(src.rglob("*.py")):
        source = subfolder_of(path.relative_to(src).with_suffix("").parts)
        forbidden = SUBFOLDERS_MAY_NOT_IMPORT.get(source, frozenset())
        for line, module in imported_modules(path):
            parts = module.split(".")
            if parts[0] == "pykraft" and len(parts) > 2 and subfolder_of(tuple(parts[1:])) in forbidden:
                offenders.append(f"{path.relative_to(src.parent)}:{line}: {source} imports {module}")
    return offenders


def test_node_and_sim_subfolders_keep_their_roles() -> None:
    assert subfolder_offences() == []


def test_the_subfolder_check_names_file_and_line(tmp_path: pathlib.Path, monkeypatch) -> None:
    fake = tmp_path / "pykraft"
    for folder in ("node/config", "node/runtime", "node/hosts", "node/apis", "sim/engine", "sim/hosts"):
        (fake / folder).mkdir(parents=True)
    (fake / "node" / "config" / "props.py").write_text("import os\nfrom pykraft.node.hosts import fake_host\n")
    (fake / "node" / "runtime" / "loop.py").write_text("if True:\n    from pykraft.node.apis.fake_api import f\n")
    (fake / "node" / "apis" / "fake_api.py").write_text("from pykraft.node.hosts import fake_host\n")  # allowed
    (fake / "sim" / "engine" / "core.py").write_text("def f():\n    from ..hosts.fake_broker import B\n")
    (fake / "sim" / "hosts" / "fake_broker.py").write_text("from pykraft.sim.engine import core\n")  # allowed
    monkeypatch.setattr(sys.modules[__name__], "SRC", fake)
    assert subfolder_offences(fake) == [
        "pykraft/node/config/props.py:2: node/config imports pykraft.node.hosts",
        "pykraft/node/runtime/loop.py:2: node/runtime imports pykraft.node.apis.fake_api",
        "pykraft/sim/engine/core.py:2: sim/engine imports pykraft.sim.hosts.fake_broker",
    ]


# Module cycles through imports that run at import time (not in functions, not under TYPE_CHECKING) that are
# known and left for later. Any other cycle fails. (Issue 17 broke the last ones: raft/handlers/fetch.py <->
# follower_membership.py, and node runtime -> metrics -> combined_host -> controller_host -> runtime through an
# in-function import, which the second test below now catches too.)
KNOWN_CYCLES: list[set[str]] = []


def eager_imports(path: pathlib.Path, in_functions: bool = False) -> set[str]:
    """The pykraft modules `path` imports while it is being imported (`from package import module` counts as the
    module, since the package is only half-initialised then); with `in_functions`, also those imported inside
    functions (they run later, but still tie the two modules into one)."""
    relative = path.relative_to(SRC.parent).with_suffix("").parts
    package = list(relative[:-1])
    found: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.If) and "TYPE_CHECKING" not in ast.unparse(node.test):
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
            elif in_functions and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.With,
                                                    ast.For, ast.While)):
                visit(node.body)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or "" if node.level == 0 else ".".join(
                    package[:len(package) - (node.level - 1)] + ([node.module] if node.module else []))
                submodules = {f"{base}.{alias.name}" for alias in node.names}
                found.update(submodules & MODULES.keys() or {base})
    visit(parsed(path).body)
    return {name for name in found if name in MODULES}


def module_name(path: pathlib.Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in SRC.rglob("*.py")}


def import_cycles(in_functions: bool = False) -> list[set[str]]:
    """Strongly connected groups of more than one module in the eager import graph (Tarjan)."""
    graph = {name: eager_imports(path, in_functions) - {name} for name, path in MODULES.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[set[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph[node]:
            if target not in index:
                connect(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = set()
            while (member := stack.pop()) != node:
                group.add(member)
            if group:
                cycles.append(group | {node})

    for name in sorted(graph):
        if name not in index:
            connect(name)
    return cycles


def test_no_module_cycles_but_the_known_ones() -> None:
    assert [sorted(c) for c in import_cycles() if c not in KNOWN_CYCLES] == []


def test_no_module_cycles_through_imports_inside_functions_either() -> None:
    assert [sorted(c) for c in import_cycles(in_functions=True)] == []


def test_importing_the_simulator_loads_no_node_storage_or_net_module() -> None:
    # (asyncio itself is loaded anyway: kio's serializers import it.)
    code = ("import sys, pykraft.sim.engine.runner, pykraft.sim.hosts.metadata_cluster, pykraft.sim.engine.sweep;"
            "print(sorted(m for m in sys.modules if m.startswith(('pykraft.node', 'pykraft.storage', 'pykraft.net'))))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"


def test_the_check_names_file_and_line_of_an_upward_import(tmp_path: pathlib.Path, monkeypatch) -> None:
    fake = tmp_path / "pykraft"
    for package in ("raft", "sim", "node"):
        (fake / package).mkdir(parents=True)
        (fake / package / "__init__.py").write_text("")
    # (made-up module names, so that a script moving the real modules leaves this fake package alone)
    (fake / "raft" / "core.py").write_text("import os\n\ndef f():\n    from pykraft.node import fake_runtime\n")
    (fake / "sim" / "host.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..node.fake_host import X\n")
    monkeypatch.setattr(sys.modules[__name__], "SRC", fake)
    assert offences(fake) == [
        "pykraft/raft/core.py:4: raft imports pykraft.node",
        "pykraft/sim/host.py:3: sim imports pykraft.node.fake_host",
    ]
