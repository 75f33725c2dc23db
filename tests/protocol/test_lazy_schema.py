"""protocol/lazy_schema.py: kio modules named by the controller load on first use, and every one named exists."""

from __future__ import annotations

import importlib

import pytest

import pykraft.controller.controller  # noqa: F401 - imports every controller module that names lazy schemas
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
