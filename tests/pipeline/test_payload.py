"""The compiled metadata columns (payload.py) give exactly the text of the generic JSON view (json_view), for
random records of every metadata record class and version, decoded from their bytes as the pipeline decodes them.
No Spark."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pykraft.controller.describe_configs import config_value_sensitive
from pykraft.pipeline.decode import metadata_payload
from pykraft.pipeline.payload import _Unsupported, _struct_builder, metadata_columns
from pykraft.records.metadata import decode_metadata_record, encode_metadata_record, metadata_record_envelope
from pykraft.records.metadata.redaction import redact_view
from pykraft.records.metadata.schema.config_record import ConfigRecordV0
from pykraft.records.metadata.schema.user_scram_credential_record import UserScramCredentialRecordV0
from tests.records.metadata_strategies import ALL_RECORD_CLASSES, record_strategy


def _reference(value: bytes) -> tuple[str, int, str]:
    """The payload columns as the pipeline computed them before payload.py: json_view's dict (its secrets redacted),
    json.dumps."""
    envelope = metadata_record_envelope(decode_metadata_record(value))
    data = redact_view(envelope["type"], envelope["data"], config_value_sensitive)
    return envelope["type"], envelope["version"], json.dumps(data, default=str)


@pytest.mark.parametrize("cls", ALL_RECORD_CLASSES, ids=lambda cls: cls.__name__)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_compiled_payload_equals_the_generic_json_view(cls: type, data: st.DataObject) -> None:
    value = encode_metadata_record(data.draw(record_strategy(cls)))
    kind, version, payload, problem = metadata_payload(value)
    assert problem is None
    assert (kind, version, payload) == _reference(value)
    json.loads(payload)  # valid JSON


@pytest.mark.parametrize("cls", ALL_RECORD_CLASSES, ids=lambda cls: cls.__name__)
def test_every_record_class_takes_the_compiled_plan(cls: type) -> None:
    """No class silently falls back to the generic (slow) view."""
    try:
        _struct_builder(cls)
    except _Unsupported as exc:  # pragma: no cover - the failure message names the field type
        pytest.fail(f"{cls.__name__}: {exc}")


def test_damaged_value_reports_the_decoder_error() -> None:
    kind, version, payload, problem = metadata_payload(b"\x01\x05\x02\x00")
    assert (kind, version, payload) == (None, None, None)
    assert problem


def test_metadata_columns_of_a_decoded_record() -> None:
    record = decode_metadata_record(bytes.fromhex("010502000000000000000000000000000000000000000702000d04000000010000"
                                                  "000200000003010400000001"))
    assert metadata_columns(record) == (
        "PARTITION_CHANGE_RECORD", 2,
        '{"partitionId": 0, "topicId": "AAAAAAAAAAAAAAAAAAAABw", "isr": [1, 2, 3], "leader": 1}')


@pytest.mark.parametrize("c_encoder", [True, False], ids=["c-encoder", "no-c-encoder"])
def test_shared_encoder_writes_what_json_dumps_writes(monkeypatch, c_encoder: bool) -> None:
    import json.encoder

    from pykraft.pipeline.payload import _json_encoder

    if not c_encoder:
        monkeypatch.setattr(json.encoder, "c_make_encoder", None)
    encode = _json_encoder()
    value = {"a": [1, 2.5, None, True], "b": {"c": "é\n\"x\""}, "d": float("nan"), "e": -1e300}
    for _ in range(2):  # reused: no state left from the call before
        assert encode(value) == json.dumps(value, default=str)


def test_secrets_never_reach_the_payload_column() -> None:
    """SCRAM salts and keys, a JAAS config and a password-typed config are redacted; other values stay."""
    scram = UserScramCredentialRecordV0(name="alice", mechanism=1, salt=b"s@lt", stored_key=b"stored",
                                        server_key=b"server", iterations=8192)
    jaas = ConfigRecordV0(resource_type=4, resource_name="", name="listener.name.x.plain.sasl.jaas.config",
                          value='... user_alice="alice-secret";')
    password = ConfigRecordV0(resource_type=4, resource_name="1", name="ssl.keystore.password", value="store-secret")
    plain = ConfigRecordV0(resource_type=2, resource_name="t", name="retention.ms", value="1000")
    columns = [metadata_columns(decode_metadata_record(encode_metadata_record(r)))[2]
               for r in (scram, jaas, password, plain)]
    assert json.loads(columns[0]) == {"name": "alice", "mechanism": 1, "salt": "(redacted)", "storedKey": "(redacted)",
                                      "serverKey": "(redacted)", "iterations": 8192}
    assert all("secret" not in text and "s@lt" not in text for text in columns[:3])
    assert json.loads(columns[3])["value"] == "1000"
