"""Optional mypyc build of the typed hot path (issue 34). The metadata lives in pyproject.toml.

Plain `pip install .` (what `make setup` does, editable) builds nothing: pykraft is pure Python. With
PYKRAFT_MYPYC=1 (`make setup-compiled`, a non-editable install with `--no-build-isolation`, mypy already in the
venv) the modules listed in src/pykraft/cli/build_info.py are compiled to C extensions by mypyc; the .py sources are
installed beside them, and Python imports the extension.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

from setuptools import setup

HERE = Path(__file__).parent


def compiled_module_paths() -> list[str]:
    """src/ paths of build_info.COMPILED_MODULES, read from the source (pykraft is not importable here)."""
    tree = ast.parse((HERE / "src/pykraft/cli/build_info.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "COMPILED_MODULES" for t in node.targets):
            names = ast.literal_eval(node.value)
            return [os.path.join("src", *name.split(".")) + ".py" for name in names]
    raise SystemExit("setup.py: COMPILED_MODULES not found in src/pykraft/cli/build_info.py")


def ext_modules() -> list:
    if os.environ.get("PYKRAFT_MYPYC") != "1":
        return []
    from mypyc.build import mypycify  # only the compiled build needs mypy in the build environment

    return mypycify(["--config-file", str(HERE / "pyproject.toml"), "--no-warn-unused-configs", *compiled_module_paths()], opt_level="3")


setup(ext_modules=ext_modules())
