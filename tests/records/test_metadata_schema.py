"""The generated classes say what Kafka's schemas say: same records, versions, fields, order, tags, nullability,
types and defaults; and the generated package is up to date with the generator and the schemas."""

from __future__ import annotations

import dataclasses
import uuid
from pathlib import Path
from typing import get_args, get_origin

import pytest

from pykraft.records.metadata import RECORD_CLASSES, MetadataRecordType, record_type_name, supported_versions

from .metadata_schemas import fields_in_version, load_generator, load_schemas
from .metadata_strategies import split_optional

SCHEMAS = load_schemas()
PACKAGE_DIR = Path(__file__).resolve().parents[2] / "src" / "pykraft" / "records" / "metadata"
_KIO_TYPES = {"int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64", "uint16": "uint16",
              "float64": "float64", "bool": "bool", "string": "string", "bytes": "bytes", "uuid": "uuid"}


def _versions(schema: dict) -> range:
    parsed = load_generator().Versions.parse(schema["validVersions"])
    return range(parsed.low, parsed.high + 1)


def test_generated_package_is_up_to_date() -> None:
    generator = load_generator()
    files = generator.generate(generator.DEFAULT_SCHEMAS)
    assert generator.stale_files(PACKAGE_DIR / "schema", files) == []


def test_generator_check_mode_reports_a_stale_file(tmp_path: Path) -> None:
    generator = load_generator()
    out = tmp_path / "schema"
    assert generator.main(["--out", str(out)]) == 0
    assert generator.main(["--out", str(out), "--check"]) == 0
    (out / "topic_record.py").write_text("# edited by hand\n")
    assert generator.main(["--out", str(out), "--check"]) == 1


def test_every_schema_version_has_a_class_and_nothing_else() -> None:
    expected = {(s["apiKey"], v) for s in SCHEMAS for v in _versions(s)}
    assert set(RECORD_CLASSES) == expected


def test_names_and_enum_follow_kafka() -> None:
    for schema in SCHEMAS:
        api_key = schema["apiKey"]
        assert record_type_name(api_key) == schema["name"]
        assert supported_versions(api_key) == _versions(schema)
        # Kafka's MetadataRecordType constant, as its generator's toSnakeCase(...).toUpperCase() spells it
        assert MetadataRecordType(api_key).name == load_generator().enum_name(schema["name"])
    assert MetadataRecordType.ZK_MIGRATION_STATE_RECORD == 21
    assert MetadataRecordType.REGISTER_CONTROLLER_RECORD == 27


def _check_struct(cls: type, fields: list[dict], version: int, api_key: int) -> None:
    assert cls.__version__ == version and cls.__api_key__ == api_key and cls.__flexible__ is True
    present = fields_in_version(fields, version)
    ours = dataclasses.fields(cls)
    assert [f.name for f in ours] == [load_generator().snake_case(s["name"]) for s in present]
    for field, spec in zip(ours, present):
        _check_field(field, spec, version, api_key)


def _check_field(field: dataclasses.Field, spec: dict, version: int, api_key: int) -> None:
    generator = load_generator()
    tagged = version in (generator.Versions.parse(spec.get("taggedVersions")) or range(0))
    assert ("tag" in field.metadata) == tagged
    if tagged:
        assert field.metadata["tag"] == int(spec["tag"])
    nullable = version in (generator.Versions.parse(spec.get("nullableVersions")) or range(0))
    annotation, optional = split_optional(field.type)
    assert optional == (nullable or spec["type"] == "uuid")
    if "default" in spec:
        expected = None if spec["default"] == "null" else spec["default"]
        if spec["type"] == "bool":
            expected = spec["default"] == "true"
        elif spec["type"] in ("int8", "int16", "int32", "int64"):
            expected = int(spec["default"])
        assert field.default == expected
    elif not tagged and not (spec["type"].startswith("[]") and "fields" not in spec):
        assert field.default is dataclasses.MISSING  # required, as in kio
    if "fields" in spec:
        element = get_args(annotation)[0] if get_origin(annotation) is tuple else annotation
        _check_struct(element, spec["fields"], version, api_key)
    else:
        assert field.metadata["kafka_type"] == _KIO_TYPES[spec["type"].removeprefix("[]")]


@pytest.mark.parametrize("schema", SCHEMAS, ids=lambda s: s["name"])
def test_classes_match_schema_fields(schema: dict) -> None:
    for version in _versions(schema):
        _check_struct(RECORD_CLASSES[(schema["apiKey"], version)], schema["fields"], version, schema["apiKey"])


def test_classes_are_frozen_slotted_keyword_only() -> None:
    for cls in RECORD_CLASSES.values():
        params = cls.__dataclass_params__
        assert params.frozen and "__slots__" in cls.__dict__
        assert all(f.kw_only for f in dataclasses.fields(cls))


def test_tagged_uuid_array_defaults_are_empty_not_null() -> None:
    register = RECORD_CLASSES[(0, 3)]
    log_dirs = {f.name: f for f in dataclasses.fields(register)}["log_dirs"]
    assert log_dirs.default == () and log_dirs.metadata == {"kafka_type": "uuid", "tag": 0}
    assert get_args(log_dirs.type)[0] == uuid.UUID | None


def test_package_does_not_read_the_schemas_at_run_time() -> None:
    for path in PACKAGE_DIR.rglob("*.py"):
        text = path.read_text()
        assert "kafka-schemas" not in text and "open(" not in text and "read_text" not in text, path
