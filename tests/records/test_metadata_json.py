"""The JSON view follows Kafka's generated JsonConverter and kafka-dump-log: names, order, omitted tagged
defaults, uuid and bytes text, nested structs; and the text is written the way Jackson writes it."""

from __future__ import annotations

import dataclasses
import json
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.schema.types import BrokerId
from kio.static.primitive import f64, i8, i16, i32, i64, u16

from pykraft.records.metadata import (
    RECORD_CLASSES,
    BrokerEndpointV3,
    BrokerFeatureV3,
    ClientQuotaRecordV0,
    EntityDataV0,
    PartitionRecordV2,
    RegisterBrokerRecordV3,
    UserScramCredentialRecordV0,
    metadata_record_envelope,
    metadata_record_to_dict,
    metadata_record_to_json,
)
from pykraft.records.metadata.json_view import java_double_to_string, kafka_json_name, to_jackson_json
from pykraft.records.uuids import METADATA_TOPIC_ID

from .metadata_schemas import fields_in_version, load_schemas
from .metadata_strategies import ALL_RECORD_CLASSES, record_strategy


def _lower_first(name: str) -> str:
    return name[:1].lower() + name[1:]


def _json_names(cls: type, fields: list[dict], version: int) -> None:
    present = fields_in_version(fields, version)
    ours = dataclasses.fields(cls)
    assert [kafka_json_name(f.name) for f in ours] == [_lower_first(s["name"]) for s in present]
    for field, spec in zip(ours, present):
        if "fields" in spec:
            element = field.type.__args__[0]
            _json_names(element, spec["fields"], version)


@pytest.mark.parametrize("schema", load_schemas(), ids=lambda s: s["name"])
def test_json_names_are_kafka_camel_case_names(schema: dict) -> None:
    for (api_key, version), cls in RECORD_CLASSES.items():
        if api_key == schema["apiKey"]:
            _json_names(cls, schema["fields"], version)


def _broker() -> RegisterBrokerRecordV3:
    return RegisterBrokerRecordV3(
        broker_id=BrokerId(1),
        incarnation_id=METADATA_TOPIC_ID,
        broker_epoch=i64(12),
        end_points=(BrokerEndpointV3(name="PLAINTEXT", host="localhost", port=u16(9092), security_protocol=i16(0)),),
        features=(BrokerFeatureV3(name="metadata.version", min_supported_version=i16(7),
                                  max_supported_version=i16(27)),),
        rack=None,
        log_dirs=(uuid.UUID(int=2), None),
    )


def test_register_broker_record_as_kafka_prints_it() -> None:
    assert metadata_record_to_dict(_broker()) == {
        "brokerId": 1,
        "isMigratingZkBroker": False,
        "incarnationId": "AAAAAAAAAAAAAAAAAAAAAQ",
        "brokerEpoch": 12,
        "endPoints": [{"name": "PLAINTEXT", "host": "localhost", "port": 9092, "securityProtocol": 0}],
        "features": [{"name": "metadata.version", "minSupportedVersion": 7, "maxSupportedVersion": 27}],
        "rack": None,
        "fenced": True,
        "inControlledShutdown": False,
        "logDirs": ["AAAAAAAAAAAAAAAAAAAAAg", "AAAAAAAAAAAAAAAAAAAAAA"],
    }


def test_tagged_defaults_are_omitted_and_set_values_shown() -> None:
    base = PartitionRecordV2(partition_id=i32(0), topic_id=None, replicas=(BrokerId(1),), isr=(BrokerId(1),),
                             leader=BrokerId(1), leader_epoch=i32(0), partition_epoch=i32(0))
    data = metadata_record_to_dict(base)
    assert "leaderRecoveryState" not in data and "eligibleLeaderReplicas" not in data and "lastKnownElr" not in data
    assert data["topicId"] == "AAAAAAAAAAAAAAAAAAAAAA"  # the zero uuid, never null
    assert data["directories"] == [] and data["removingReplicas"] == []
    changed = dataclasses.replace(base, leader_recovery_state=i8(1), eligible_leader_replicas=())
    data = metadata_record_to_dict(changed)
    assert data["leaderRecoveryState"] == 1 and data["eligibleLeaderReplicas"] == []
    assert list(data).index("leaderRecoveryState") == list(data).index("leader") + 1  # schema order


def test_bytes_are_standard_base64_and_doubles_are_java_doubles() -> None:
    scram = UserScramCredentialRecordV0(name="alice", mechanism=i8(1), salt=b"\x00\xff", stored_key=b"\xfb\xff",
                                        server_key=b"", iterations=i32(4096))
    assert metadata_record_to_dict(scram)["salt"] == "AP8="
    assert metadata_record_to_dict(scram)["storedKey"] == "+/8="
    quota = ClientQuotaRecordV0(entity=(EntityDataV0(entity_type="user", entity_name=None),),
                                key="producer_byte_rate", value=f64(10485760.0), remove=False)
    assert metadata_record_to_json(quota) == (
        '{"type":"CLIENT_QUOTA_RECORD","version":0,"data":{"entity":[{"entityType":"user","entityName":null}],'
        '"key":"producer_byte_rate","value":1.048576E7,"remove":false}}'
    )


def test_envelope() -> None:
    envelope = metadata_record_envelope(_broker())
    assert envelope["type"] == "REGISTER_BROKER_RECORD" and envelope["version"] == 3
    assert envelope["data"] == metadata_record_to_dict(_broker())


def test_to_dict_rejects_other_objects() -> None:
    with pytest.raises(TypeError):
        metadata_record_to_dict({"brokerId": 1})


@pytest.mark.parametrize("cls", ALL_RECORD_CLASSES, ids=lambda c: c.__name__)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_json_text_is_valid_json_of_the_envelope(cls: type, data: st.DataObject) -> None:
    record = data.draw(record_strategy(cls))
    envelope = metadata_record_envelope(record)
    parsed = json.loads(metadata_record_to_json(record))
    assert parsed == json.loads(json.dumps(envelope))


@pytest.mark.parametrize(("number", "text"), [
    (0.0, "0.0"), (-0.0, "-0.0"), (1.0, "1.0"), (100.0, "100.0"), (-2.5, "-2.5"), (123.456, "123.456"),
    (1234567.0, "1234567.0"), (9999999.0, "9999999.0"), (1e7, "1.0E7"), (10485760.0, "1.048576E7"),
    (0.001, "0.001"), (0.0001, "1.0E-4"), (1.5e-5, "1.5E-5"), (1e23, "1.0E23"),
    (1.7976931348623157e308, "1.7976931348623157E308"), (5e-324, "4.9E-324"),
    (float("nan"), '"NaN"'), (float("-inf"), '"-Infinity"'),
])
def test_java_double_to_string(number: float, text: str) -> None:
    assert java_double_to_string(number) == text


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_java_double_text_reads_back_as_the_same_double(number: float) -> None:
    assert float(java_double_to_string(number)) == number


def test_jackson_string_escapes() -> None:
    assert to_jackson_json('a"b\\c/d') == '"a\\"b\\\\c/d"'
    assert to_jackson_json("\n\t\r\b\f") == '"\\n\\t\\r\\b\\f"'
    assert to_jackson_json("\x01\x1f\x7f") == '"\\u0001\\u001F\x7f"'
    assert to_jackson_json("é€𝄞") == '"é€𝄞"'
    assert to_jackson_json({"a": [1, None, True, 2.0]}) == '{"a":[1,null,true,2.0]}'


def test_message_to_dict_works_on_kio_control_records() -> None:
    """dump-log uses the same view for KRaft control records, whose kio classes are declared the same way."""
    from kio.schema.leader_change_message.v1.data import LeaderChangeMessage, Voter

    from pykraft.records.metadata.json_view import message_to_dict

    message = LeaderChangeMessage(
        version=i16(1),
        leader_id=BrokerId(2),
        voters=(Voter(voter_id=i32(2), voter_directory_id=METADATA_TOPIC_ID), Voter(voter_id=i32(3),
                                                                                   voter_directory_id=None)),
        granting_voters=(),
    )
    assert message_to_dict(message) == {
        "version": 1,
        "leaderId": 2,
        "voters": [{"voterId": 2, "voterDirectoryId": "AAAAAAAAAAAAAAAAAAAAAQ"},
                   {"voterId": 3, "voterDirectoryId": "AAAAAAAAAAAAAAAAAAAAAA"}],
        "grantingVoters": [],
    }
