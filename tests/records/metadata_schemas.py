"""Kafka's metadata record schemas for tests, read through the generator (tools/gen_metadata_records.py) so
that its comment stripping and version parsing are the ones under test. Tests only: the package never reads
these files."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

REPO_ROOT = Path(__file__).resolve().parents[2]
GENERATOR_PATH = REPO_ROOT / "tools" / "gen_metadata_records.py"


def load_generator() -> ModuleType:
    name = "gen_metadata_records_under_test"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, GENERATOR_PATH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is being built
    spec.loader.exec_module(module)
    return module


def load_schemas() -> list[dict]:
    generator = load_generator()
    return [generator.load_schema(path) for path in sorted(generator.DEFAULT_SCHEMAS.glob("*.json"))]


def fields_in_version(fields: list[dict], version: int) -> list[dict]:
    generator = load_generator()
    return [spec for spec in fields if version in generator.Versions.parse(spec["versions"])]
