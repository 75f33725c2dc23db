"""The build report (`pykraft --version`, the benchmarks' JSON lines) says which build is running, truthfully, in the
pure build (`make setup`) and in the compiled one (`make setup-compiled`, `make test-compiled`)."""

from __future__ import annotations

import importlib
import importlib.machinery
import tomllib
from pathlib import Path

from pykraft.cli.build_info import COMPILED_MODULES, build_fields, build_line, build_name, compiled_modules
from pykraft.cli.versions import version_line

ROOT = Path(__file__).resolve().parents[2]


def _is_extension(module_name: str) -> bool:
    filename = importlib.import_module(module_name).__file__ or ""
    return filename.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))


def test_the_report_names_exactly_the_modules_python_imported_compiled() -> None:
    imported_compiled = [name for name in COMPILED_MODULES if _is_extension(name)]
    assert compiled_modules() == imported_compiled
    assert build_name() == ("compiled" if imported_compiled else "pure")
    assert build_fields() == {"build": build_name(), "compiled_modules": len(imported_compiled)}


def test_version_line_says_which_build() -> None:
    line = version_line()
    assert line.startswith("pykraft ") and build_line() in line
    if compiled_modules():
        assert f"{len(compiled_modules())} of {len(COMPILED_MODULES)} hot modules compiled by mypyc" in line
    else:
        assert "pure Python build" in line


def test_every_compiled_module_is_strictly_typed_source_in_the_tree() -> None:
    """mypyc compiles what mypy strict checks, and the same source must run interpreted: each listed module is a .py
    file of the repository, inside a package pyproject.toml holds to mypy's strict flags."""
    overrides = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]["overrides"]
    strict = next(o["module"] for o in overrides if o.get("disallow_untyped_defs"))
    for name in COMPILED_MODULES:
        assert (ROOT / "src" / Path(*name.split("."))).with_suffix(".py").is_file(), name
        package = ".".join(name.split(".")[:2])
        assert package in strict and f"{package}.*" in strict, name


def test_no_module_off_the_list_is_compiled() -> None:
    """A module taken off COMPILED_MODULES (it did not pay, or mypyc cannot keep its behaviour) is imported as
    Python again: no stale extension of an earlier build is left beside its source."""
    package = Path(importlib.import_module("pykraft").__file__ or "").parent
    listed = set(COMPILED_MODULES)
    suffixes = sorted(importlib.machinery.EXTENSION_SUFFIXES, key=len, reverse=True)  # ".cpython-311-...so" first
    for path in package.rglob("*"):
        relative = path.relative_to(package.parent).as_posix()
        suffix = next((s for s in suffixes if relative.endswith(s)), None)
        if suffix is not None:
            assert relative[: -len(suffix)].replace("/", ".") in listed, relative
