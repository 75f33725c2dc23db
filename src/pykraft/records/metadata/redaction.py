"""What may be shown of a metadata record (Kafka's RecordRedactor): a UserScramCredentialRecord without its salt,
StoredKey and ServerKey, a ConfigRecord of a sensitive key (a password type, or a key the schema does not know)
without its value. Applied to the JSON view (json_view.py) by everything that shows records to people or writes
them to tables: `pykraft dump-log` and the pipeline's payload column. The sensitivity of a config is the config
table's (controller/config_schema.py), handed in: records/ sits below the controller."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["REDACTED", "redact_view"]

REDACTED = "(redacted)"
_SCRAM_SECRETS = ("salt", "storedKey", "serverKey")
SensitiveConfig = Callable[[int, str], bool]  # (ConfigRecord.ResourceType, Name) -> whether its value is a secret


def redact_view(type_name: str, data: dict[str, Any], sensitive_config: SensitiveConfig) -> dict[str, Any]:
    """`data` (the JSON view of a record of type `type_name`, e.g. "USER_SCRAM_CREDENTIAL_RECORD") without its
    secrets; the same dict when it has none."""
    if type_name == "USER_SCRAM_CREDENTIAL_RECORD":
        return {key: (REDACTED if key in _SCRAM_SECRETS else value) for key, value in data.items()}
    if type_name == "CONFIG_RECORD" and data.get("value") is not None and sensitive_config(
            int(data.get("resourceType", 0)), str(data.get("name", ""))):
        return {**data, "value": REDACTED}
    return data
