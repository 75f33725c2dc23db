"""protocol/lazy_schema.py: kio modules named by the controller and the broker load on first use, every one named
exists, and every attribute the code reads from a stand-in is in its module."""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path

import pytest

import pykraft.controller.controller  # imports every controller module that names lazy schemas
import pykraft.node.roles.broker_host  # noqa: F401 - and the broker's (transactions, producer ids, directories)
from pykraft.protocol.lazy_schema import NAMED, LazySchemaModule, schema_module


def test_every_lazily_named_module_exists_and_the_stand_in_reads_through():
    assert len(NAMED) >= 20  # the controller's answers to brokers, admin clients and features
    for name in NAMED:
        module = importlib.import_module(name)
        stand_in = LazySchemaModule(name)
        classes = [attr for attr in vars(module) if attr.endswith(("Response", "Request"))]
        assert classes, name
        assert all(getattr(stand_in, attr) is getattr(module, attr) for attr in classes)


def test_a_stand_in_imports_at_the_first_attribute_read():
    missing = schema_module("kio.schema.no_such_api.v0.response")  # making it imports nothing
    NAMED.remove("kio.schema.no_such_api.v0.response")
    with pytest.raises(ModuleNotFoundError):
        missing.NoSuchResponse  # noqa: B018 - the read is the test


def _stand_ins(tree: ast.Module) -> dict[str, str]:
    """alias -> kio module of every `alias = schema_module("kio....")` at the top of a module."""
    found = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and \
                getattr(node.value.func, "id", None) == "schema_module" and len(node.targets) == 1:
            found[node.targets[0].id] = node.value.args[0].value
    return found


def test_every_attribute_read_from_a_stand_in_exists_in_its_module():
    checked = 0
    for name, module in sorted(sys.modules.items()):
        source = getattr(module, "__file__", None) if name.startswith("pykraft.") and module is not None else None
        if source is None or not source.endswith(".py"):  # (a compiled build's extension modules: no source)
            continue
        tree = ast.parse(Path(source).read_text())
        aliases = _stand_ins(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
                assert hasattr(importlib.import_module(aliases[node.value.id]), node.attr), (name, node.attr)
                checked += 1
    assert checked >= 20
