"""Generate pykraft's metadata record dataclasses from Kafka's metadata record JSON schemas.

    .venv/bin/python tools/gen_metadata_records.py            # rewrite src/pykraft/records/metadata/schema/
    .venv/bin/python tools/gen_metadata_records.py --check    # exit 1 if the generated files are stale

The schemas are read from kafka-schemas/metadata/ (Kafka's Apache-2.0 data with its NOTICE, in this repository) at
generation time only; the generated package does not need them. One module per record holds one class per
version (`RegisterBrokerRecordV3`) plus its nested structs (`BrokerEndpointV3`), declared the way kio declares
its own generated classes so that `kio.serial.entity_writer/entity_reader` encode them.

Rules that carry Kafka's semantics over (kept in one place, `_default_literal`):
- a field with a "default" in the schema gets that default;
- a tagged field without one gets Kafka's implicit default (0, false, "", empty array, zero uuid = None);
- an untagged array of primitives defaults to () (kio's convention); every other field is required.
Schema "about" texts are not copied: field docstrings only restate the Kafka name and wire type.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SCHEMAS = REPO_ROOT / "kafka-schemas" / "metadata"
DEFAULT_OUT = REPO_ROOT / "src" / "pykraft" / "records" / "metadata" / "schema"
MAX_VERSION = 0x7FFF

# Our own one-line summaries, used as class docstrings.
RECORD_SUMMARIES = {
    "RegisterBrokerRecord": "A broker registered (or re-registered) with the controller.",
    "UnregisterBrokerRecord": "A broker registration was removed.",
    "TopicRecord": "A topic was created.",
    "PartitionRecord": "The full state of one partition of a topic.",
    "ConfigRecord": "A configuration key of a resource was set or deleted.",
    "PartitionChangeRecord": "A change to one partition; fields left at their default did not change.",
    "FenceBrokerRecord": "A broker was fenced (legacy form of BrokerRegistrationChangeRecord).",
    "UnfenceBrokerRecord": "A broker was unfenced (legacy form of BrokerRegistrationChangeRecord).",
    "RemoveTopicRecord": "A topic was deleted.",
    "DelegationTokenRecord": "A delegation token was created or renewed.",
    "UserScramCredentialRecord": "A SCRAM credential of a user was set.",
    "FeatureLevelRecord": "The finalized level of a feature (for example metadata.version) changed.",
    "ClientQuotaRecord": "A client quota was set or removed.",
    "ProducerIdsRecord": "The controller handed out a block of producer ids.",
    "BrokerRegistrationChangeRecord": "A broker's fencing, controlled shutdown or log directories changed.",
    "AccessControlEntryRecord": "An ACL entry was added.",
    "RemoveAccessControlEntryRecord": "An ACL entry was removed.",
    "NoOpRecord": "Carries no data; the active controller appends it so the high-watermark keeps moving.",
    "ZkMigrationStateRecord": "The state of a ZooKeeper to KRaft migration.",
    "RemoveUserScramCredentialRecord": "A SCRAM credential of a user was removed.",
    "BeginTransactionRecord": "Start of a metadata transaction (KIP-868).",
    "EndTransactionRecord": "End of a metadata transaction (KIP-868).",
    "AbortTransactionRecord": "A metadata transaction was aborted (KIP-868).",
    "RemoveDelegationTokenRecord": "A delegation token was removed.",
    "RegisterControllerRecord": "A controller registered its endpoints and supported features.",
}

# Kafka type -> (Python annotation, kio kafka_type). kio spells every uuid `uuid.UUID | None`: it reads the zero
# uuid as None and writes None as the zero uuid.
PRIMITIVES = {
    "int8": ("i8", "int8"),
    "int16": ("i16", "int16"),
    "int32": ("i32", "int32"),
    "int64": ("i64", "int64"),
    "uint16": ("u16", "uint16"),
    "float64": ("f64", "float64"),
    "bool": ("bool", "bool"),
    "string": ("str", "string"),
    "bytes": ("bytes", "bytes"),
    "uuid": ("uuid.UUID | None", "uuid"),
}
ENTITY_TYPES = {("int32", "brokerId"): "BrokerId", ("string", "topicName"): "TopicName"}
KIO_TYPE_IMPORTS = {"BrokerId": "kio.schema.types", "TopicName": "kio.schema.types"}
PHANTOMS = {"i8", "i16", "i32", "i64", "u16", "f64"}
FIELD_KEYS = {"name", "type", "versions", "about", "default", "entityType", "taggedVersions", "tag",
              "nullableVersions", "fields", "mapKey"}
SCHEMA_KEYS = {"apiKey", "type", "name", "validVersions", "flexibleVersions", "fields"}


class SchemaError(Exception):
    """The schema uses something this generator does not translate; fix the generator, not the output."""


@dataclass(frozen=True)
class Versions:
    low: int
    high: int

    @classmethod
    def parse(cls, text: str | None) -> Versions | None:
        if text is None or text.strip() in ("", "none"):
            return None
        text = text.strip()
        if text.endswith("+"):
            return cls(int(text[:-1]), MAX_VERSION)
        low, _, high = text.partition("-")
        return cls(int(low), int(high or low))

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.low <= version <= self.high


def in_versions(versions: Versions | None, version: int) -> bool:
    return versions is not None and version in versions


def load_schema(path: Path) -> dict:
    """Kafka's schema files are JSON with whole-line `//` comments (the licence header)."""
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if not line.lstrip().startswith("//")]
    schema = json.loads("\n".join(lines))
    unknown = set(schema) - SCHEMA_KEYS
    if unknown or schema.get("type") != "metadata":
        raise SchemaError(f"{path.name}: not a metadata record schema we understand ({sorted(unknown)})")
    return schema


def snake_case(name: str) -> str:
    """Kafka field name -> Python attribute, as kafka-python and kio do: "IncarnationId" -> "incarnation_id"."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def module_name(record_name: str) -> str:
    return snake_case(record_name)


def enum_name(record_name: str) -> str:
    """Kafka's MetadataRecordType constant: "ZkMigrationStateRecord" -> "ZK_MIGRATION_STATE_RECORD".

    Same rule as Kafka's `MessageGenerator.toSnakeCase`: an underscore before a capital that follows a
    lower-case letter only, so a run of capitals stays together.
    """
    out = []
    previous_upper = True
    for char in record_name:
        if char.isupper() and not previous_upper:
            out.append("_")
        out.append(char.upper())
        previous_upper = char.isupper()
    return "".join(out)


@dataclass
class Emitter:
    """Collects the lines of one module and the names it must import."""

    lines: list[str]
    imports: set[tuple[str, str]]
    uses_uuid: bool = False

    def need(self, annotation: str) -> None:
        for name in PHANTOMS | set(KIO_TYPE_IMPORTS):
            if re.search(rf"\b{name}\b", annotation):
                module = KIO_TYPE_IMPORTS.get(name, "kio.static.primitive")
                self.imports.add((module, name))
        if "uuid.UUID" in annotation:
            self.uses_uuid = True


def field_tag(spec: dict, version: int) -> int | None:
    if not in_versions(Versions.parse(spec.get("taggedVersions")), version):
        return None
    if "tag" not in spec:
        raise SchemaError(f"{spec['name']}: tagged versions without a tag")
    return int(spec["tag"])  # some schemas write the tag as a string ("0")


def element_annotation(kafka_type: str, entity_type: str | None) -> tuple[str, str]:
    """(annotation, kio kafka_type) of a primitive Kafka type, honouring entityType."""
    if kafka_type not in PRIMITIVES:
        raise SchemaError(f"unsupported Kafka type {kafka_type!r}")
    annotation, kio_type = PRIMITIVES[kafka_type]
    return ENTITY_TYPES.get((kafka_type, entity_type), annotation), kio_type


def _default_literal(spec: dict, annotation: str, *, nullable: bool, tagged: bool) -> str | None:
    """The Python default of a field, or None when the field is required (rules in the module docstring)."""
    default = spec.get("default")
    is_array = spec["type"].startswith("[]")
    if default is None:
        if is_array:
            primitive_elements = "fields" not in spec
            return "()" if (tagged or primitive_elements) else None
        if not tagged:
            return None
        if nullable:
            raise SchemaError(f"{spec['name']}: nullable tagged field without a default")
        default = ""
    if default == "null":
        if not nullable:
            raise SchemaError(f"{spec['name']}: default null on a non-nullable field")
        return "None"
    if is_array:
        if default != "":
            raise SchemaError(f"{spec['name']}: arrays can only default to empty or null")
        return "()"
    return _scalar_literal(spec, annotation, default)


def _scalar_literal(spec: dict, annotation: str, default: str) -> str:
    kafka_type = spec["type"]
    if kafka_type == "bool":
        if default not in ("", "true", "false"):
            raise SchemaError(f"{spec['name']}: bad bool default {default!r}")
        return "True" if default == "true" else "False"
    if kafka_type == "string":
        return repr(default)
    if kafka_type == "bytes":
        if default:
            raise SchemaError(f"{spec['name']}: bytes can only default to empty or null")
        return "b''"
    if kafka_type == "uuid":
        if default not in ("", "AAAAAAAAAAAAAAAAAAAAAA"):
            raise SchemaError(f"{spec['name']}: only the zero uuid is supported as a default")
        return "None"
    if "fields" in spec:
        raise SchemaError(f"{spec['name']}: struct defaults are not supported")
    number = float(default or 0) if kafka_type == "float64" else int(default or "0", 0)
    return f"{annotation}({number!r})"


# ---------------------------------------------------------------------------------------------------------
# Emitting one record module


def field_declaration(em: Emitter, spec: dict, version: int) -> list[str]:
    """The lines declaring one field (declaration and docstring) in a class of `version`."""
    unknown = set(spec) - FIELD_KEYS
    if unknown:
        raise SchemaError(f"{spec['name']}: unsupported schema keys {sorted(unknown)}")
    tag = field_tag(spec, version)
    nullable = in_versions(Versions.parse(spec.get("nullableVersions")), version)
    kafka_type = spec["type"]
    is_array = kafka_type.startswith("[]")
    element = kafka_type[2:] if is_array else kafka_type
    if "fields" in spec:
        element_ann, kio_type = f"{element}V{version}", None
    else:
        element_ann, kio_type = element_annotation(element, spec.get("entityType"))
    annotation = f"tuple[{element_ann}, ...]" if is_array else element_ann
    if nullable and not annotation.endswith("| None"):
        annotation += " | None"
    em.need(annotation)
    metadata = {}
    if kio_type is not None:
        metadata["kafka_type"] = kio_type
    if tag is not None:
        metadata["tag"] = tag
    default = _default_literal(spec, element_ann, nullable=nullable, tagged=tag is not None)
    args = []
    if metadata:
        args.append("metadata={" + ", ".join(f'"{k}": {v!r}'.replace("'", '"') for k, v in metadata.items()) + "}")
    if default is not None:
        args.append(f"default={default}")
    name = snake_case(spec["name"])
    lines = _wrap(f"    {name}: {annotation}", args)
    notes = [kafka_type] + (["nullable"] if nullable else []) + ([f"tag {tag}"] if tag is not None else [])
    lines.append(f'    """Kafka field {spec["name"]} ({", ".join(notes)})."""')
    return lines


def _wrap(head: str, args: list[str]) -> list[str]:
    if not args:
        return [head]
    one_line = f"{head} = field({', '.join(args)})"
    if len(one_line) <= 100:
        return [one_line]
    return [f"{head} = field(", f"        {', '.join(args)}", "    )"]


def emit_struct(em: Emitter, class_name: str, fields: list[dict], version: int, api_key: int,
                *, flexible: bool, doc: str, nested: bool) -> None:
    """Emit nested structs first (kio needs them defined before use), then the class itself."""
    present = [spec for spec in fields if in_versions(Versions.parse(spec["versions"]), version)]
    for spec in present:
        if "fields" in spec:
            struct = spec["type"].removeprefix("[]")
            owner = f"{class_name}.{snake_case(spec['name'])}"
            emit_struct(em, f"{struct}V{version}", spec["fields"], version, api_key,
                        flexible=flexible, doc=f"An element of {owner}.", nested=True)
    em.lines += [
        "",
        "",
        "@dataclass(frozen=True, slots=True, kw_only=True)",
        f"class {class_name}:",
        *_docstring(doc),
        f"    __type__: ClassVar = EntityType.{'nested' if nested else 'data'}",
        f"    __version__: ClassVar[i16] = i16({version})",
        f"    __flexible__: ClassVar[bool] = {flexible}",
        f"    __api_key__: ClassVar[i16] = i16({api_key})",
    ]
    for spec in present:
        em.lines += field_declaration(em, spec, version)


def _docstring(doc: str) -> list[str]:
    """A class docstring: the first sentence on the opening line, the rest below it."""
    first, _, rest = doc.partition(". ")
    if not rest:
        return [f'    """{doc}"""', ""]
    return [f'    """{first}.', "", f"    {rest}", '    """', ""]


def render_module(schema: dict, schema_file: str) -> str:
    name, api_key = schema["name"], schema["apiKey"]
    valid = Versions.parse(schema["validVersions"])
    flexible = Versions.parse(schema["flexibleVersions"])
    em = Emitter(lines=[], imports={("kio.static.constants", "EntityType"), ("kio.static.primitive", "i16")})
    for version in range(valid.low, valid.high + 1):
        summary = RECORD_SUMMARIES.get(name, "")
        doc = f"{name} version {version} (metadata record api key {api_key}). {summary}".strip()
        emit_struct(em, f"{name}V{version}", schema["fields"], version, api_key,
                    flexible=in_versions(flexible, version), doc=doc, nested=False)
    versions_text = f"version {valid.low}" if valid.low == valid.high else f"versions {valid.low}-{valid.high}"
    header = [
        '"""',
        f"Kafka metadata record {name} (api key {api_key}), {versions_text}.",
        "",
        f"Generated by tools/gen_metadata_records.py from Kafka's {schema_file} schema. Do not edit.",
        '"""',
        "",
    ]
    if em.uses_uuid:
        header += ["import uuid", ""]
    header += ["from dataclasses import dataclass"]
    if any(" = field(" in line for line in em.lines):
        header += ["from dataclasses import field"]
    header += ["from typing import ClassVar", ""]
    header += [f"from {module} import {item}" for module, item in sorted(em.imports)]
    return "\n".join(header + em.lines) + "\n"


def render_index(schemas: list[dict]) -> str:
    schemas = sorted(schemas, key=lambda s: s["apiKey"])
    modules = sorted(module_name(s["name"]) for s in schemas)
    lines = [
        '"""',
        "Index of the generated metadata record classes: api keys, record names and (api key, version) -> class.",
        "",
        "Generated by tools/gen_metadata_records.py from Kafka's metadata record schemas. Do not edit.",
        '"""',
        "",
        "import enum",
        "",
        "from collections.abc import Mapping",
        "from types import MappingProxyType",
        "from typing import Final",
        "",
        *[f"from . import {module}" for module in modules],
        "",
        "",
        "class MetadataRecordType(enum.IntEnum):",
        '    """Kafka\'s MetadataRecordType: member names are the ones kafka-dump-log prints as "type"."""',
        "",
        *[f"    {enum_name(s['name'])} = {s['apiKey']}" for s in schemas],
        "",
        "",
        "RECORD_NAMES: Final[Mapping[int, str]] = MappingProxyType({",
        *[f'    {s["apiKey"]}: "{s["name"]}",' for s in schemas],
        "})",
        "",
        "RECORD_CLASSES: Final[Mapping[tuple[int, int], type]] = MappingProxyType({",
    ]
    for s in schemas:
        valid = Versions.parse(s["validVersions"])
        for version in range(valid.low, valid.high + 1):
            lines.append(f"    ({s['apiKey']}, {version}): {module_name(s['name'])}.{s['name']}V{version},")
    lines.append("})")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------------------
# Command line


GENERATED_MARKER = "Generated by tools/gen_metadata_records.py"


def generate(schema_dir: Path) -> dict[str, str]:
    """File name -> contents of every generated file."""
    paths = sorted(schema_dir.glob("*.json"))
    if not paths:
        raise SchemaError(f"no schemas found in {schema_dir}")
    files: dict[str, str] = {}
    schemas = []
    for path in paths:
        schema = load_schema(path)
        schemas.append(schema)
        files[f"{module_name(schema['name'])}.py"] = render_module(schema, path.name)
    keys = [s["apiKey"] for s in schemas]
    if len(set(keys)) != len(keys):
        raise SchemaError("two schemas share an api key")
    files["__init__.py"] = render_index(schemas)
    return files


def stale_files(out_dir: Path, files: dict[str, str]) -> list[str]:
    """Generated files that differ from `files`, are missing, or are left over from removed schemas."""
    stale = [name for name, text in files.items()
             if not (out_dir / name).exists() or (out_dir / name).read_text(encoding="utf-8") != text]
    for path in sorted(out_dir.glob("*.py")) if out_dir.exists() else []:
        if path.name not in files and GENERATED_MARKER in path.read_text(encoding="utf-8"):
            stale.append(path.name)
    return stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schemas", type=Path, default=DEFAULT_SCHEMAS, help="folder of Kafka metadata schemas")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="package folder to write")
    parser.add_argument("--check", action="store_true", help="only report stale files; exit 1 if any")
    args = parser.parse_args(argv)
    files = generate(args.schemas)
    stale = stale_files(args.out, files)
    if args.check:
        for name in stale:
            print(f"stale: {args.out / name}")
        return 1 if stale else 0
    args.out.mkdir(parents=True, exist_ok=True)
    for name in stale:
        target = args.out / name
        if name in files:
            target.write_text(files[name], encoding="utf-8")
        else:
            target.unlink()
        print(f"{'wrote' if name in files else 'removed'} {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
