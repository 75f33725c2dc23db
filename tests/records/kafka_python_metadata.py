"""kafka-python 3.0.12 as an independent codec of Kafka's metadata record schemas (test oracle only).

kafka-python builds message classes from Kafka's JSON schema files (`ApiData` subclasses with `load_json=<package>`),
but four things stop it from reading the metadata record schemas as they are:
1. `ApiData` asserts `"type" == "data"`; metadata record schemas say `"type": "metadata"` -> patched to "data".
2. Two schemas give a tag as a string (`"tag": "0"` in RegisterBrokerRecord.LogDirs, `"tag": "2"` in
   BrokerRegistrationChangeRecord.LogDirs). kafka-python keeps it a string: encoding then fails with
   `TypeError: unsupported operand type(s) for >>: 'str' and 'int'`, and decoding silently treats the tag as
   unknown (the value lands in `unknown_tags`). -> tags converted to ints.
3. A schema without fields (NoOpRecord, EndTransactionRecord) cannot be loaded at all: `parse_json_fields`
   turns the empty list into None and `StructField` then fails with `TypeError: 'NoneType' object is not
   iterable`. -> those two are left out (their body is the single byte 00, checked by the golden tests).
4. kafka-python writes tagged fields in declaration order, while KIP-482 and Kafka write them by ascending tag.
   PartitionChangeRecord declares Directories (tag 8) before EligibleLeaderReplicas (6) and LastKnownElr (7), so
   its bytes differ from Kafka's. -> tagged fields re-ordered by tag (optional, to show the difference).
`load_json` reads files through `importlib.resources`, so the schemas are copied into a throw-away package in a
temporary directory (outside the repository) for the duration of the loading.
"""

from __future__ import annotations

import copy
import importlib
import shutil
import sys
import types
from pathlib import Path
from typing import Any

from kafka.protocol.api_data import ApiData

REPO_ROOT = Path(__file__).resolve().parents[2]
FIELDLESS_SCHEMAS = frozenset({"NoOpRecord", "EndTransactionRecord"})
SCHEMA_DIR = (REPO_ROOT / "kafka-schemas" / "metadata").resolve()


def _fix_fields(fields: list[dict], sort_tags: bool) -> list[dict]:
    fixed = []
    for spec in fields:
        spec = dict(spec)
        if "tag" in spec:
            spec["tag"] = int(spec["tag"])
        if "fields" in spec:
            spec["fields"] = _fix_fields(spec["fields"], sort_tags)
        fixed.append(spec)
    if sort_tags:
        # Re-order the tagged fields among their own slots only, so untagged fields keep their wire order.
        # Safe because in these schemas a tagged field is tagged in every version it exists in.
        slots = [i for i, spec in enumerate(fixed) if "tag" in spec]
        assert all(fixed[i]["taggedVersions"] == fixed[i]["versions"] for i in slots)
        for i, spec in zip(slots, sorted((fixed[i] for i in slots), key=lambda s: s["tag"])):
            fixed[i] = spec
    return fixed


def _patcher(sort_tags: bool):
    def json_patch(metacls: type, schema: dict) -> dict:
        schema = copy.deepcopy(schema)
        schema["type"] = "data"
        schema["fields"] = _fix_fields(schema["fields"], sort_tags)
        return schema

    return classmethod(json_patch)


def load_kafka_python_classes(workdir: Path, *, sort_tags: bool = True) -> dict[str, type]:
    """Record name (e.g. "PartitionRecord") -> kafka-python ApiData class built from Kafka's schema file."""
    package = f"kp_metadata_schemas_{'sorted' if sort_tags else 'declared'}"
    package_dir = workdir / package
    package_dir.mkdir(parents=True, exist_ok=True)
    (package_dir / "__init__.py").write_text("")
    for path in SCHEMA_DIR.glob("*.json"):
        shutil.copy(path, package_dir / path.name)
    sys.path.insert(0, str(workdir))
    try:
        importlib.invalidate_caches()
        module = importlib.import_module(package)
        classes = {}
        for path in sorted(SCHEMA_DIR.glob("*.json")):
            if path.stem in FIELDLESS_SCHEMAS:
                continue
            # The class name picks the file; the record name can differ (ZkMigrationRecord.json).
            cls = types.new_class(path.stem, (ApiData,), {"load_json": module},
                                  lambda ns: ns.update(json_patch=_patcher(sort_tags)))
            classes[cls.json["name"]] = cls
        return classes
    finally:
        sys.path.remove(str(workdir))


def kp_to_plain(obj: Any) -> Any:
    """A decoded kafka-python object as plain dicts and lists, like `metadata_strategies.to_plain`."""
    if isinstance(obj, dict):
        return {key: kp_to_plain(value) for key, value in obj.items()}
    if isinstance(obj, list):
        return [kp_to_plain(item) for item in obj]
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return bytes(obj)
    if hasattr(obj, "to_dict"):
        return kp_to_plain(obj.to_dict(json=False))
    return obj
