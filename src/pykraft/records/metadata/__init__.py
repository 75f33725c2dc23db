"""Kafka's KRaft metadata records: typed dataclasses, the value frame they travel in, and their JSON form.

- `schema/` holds the generated classes, one module per record and one class per version
  (`schema.partition_change_record.PartitionChangeRecordV2`), declared like kio's own so that kio's codec
  serves them. The latest version of each record is re-exported here.
- `encode_metadata_record` / `decode_metadata_record` convert between record objects and record values
  (reference §3.3); decoding raises only `MetadataRecordError` subclasses.
- `metadata_record_to_dict` / `metadata_record_envelope` / `metadata_record_to_json` give the output of
  `kafka-dump-log --cluster-metadata-decoder`.

Two kio conventions to know: the zero uuid is read as None (and None is written as the zero uuid), and
integers are kio's phantom types (`i32(5)`, `BrokerId(1)`), which are plain ints at run time.
"""

from .errors import (
    MalformedMetadataRecordError,
    MetadataRecordEncodeError,
    MetadataRecordError,
    TrailingBytesError,
    TruncatedMetadataRecordError,
    UnknownFrameVersionError,
    UnknownMetadataRecordTypeError,
    UnsupportedMetadataRecordVersionError,
)
from .frame import decode_metadata_record, encode_metadata_record
from .json_view import metadata_record_envelope, metadata_record_to_dict, metadata_record_to_json
from .registry import (
    FRAME_VERSION,
    latest_version,
    record_class,
    record_type,
    record_type_name,
    supported_versions,
)
from .schema import RECORD_CLASSES, MetadataRecordType
from .schema.abort_transaction_record import AbortTransactionRecordV0
from .schema.access_control_entry_record import AccessControlEntryRecordV0
from .schema.begin_transaction_record import BeginTransactionRecordV0
from .schema.broker_registration_change_record import BrokerRegistrationChangeRecordV2
from .schema.client_quota_record import ClientQuotaRecordV0, EntityDataV0
from .schema.config_record import ConfigRecordV0
from .schema.delegation_token_record import DelegationTokenRecordV0
from .schema.end_transaction_record import EndTransactionRecordV0
from .schema.feature_level_record import FeatureLevelRecordV0
from .schema.fence_broker_record import FenceBrokerRecordV0
from .schema.no_op_record import NoOpRecordV0
from .schema.partition_change_record import PartitionChangeRecordV2
from .schema.partition_record import PartitionRecordV2
from .schema.producer_ids_record import ProducerIdsRecordV0
from .schema.register_broker_record import BrokerEndpointV3, BrokerFeatureV3, RegisterBrokerRecordV3
from .schema.register_controller_record import (
    ControllerEndpointV0,
    ControllerFeatureV0,
    RegisterControllerRecordV0,
)
from .schema.remove_access_control_entry_record import RemoveAccessControlEntryRecordV0
from .schema.remove_delegation_token_record import RemoveDelegationTokenRecordV0
from .schema.remove_topic_record import RemoveTopicRecordV0
from .schema.remove_user_scram_credential_record import RemoveUserScramCredentialRecordV0
from .schema.topic_record import TopicRecordV0
from .schema.unfence_broker_record import UnfenceBrokerRecordV0
from .schema.unregister_broker_record import UnregisterBrokerRecordV0
from .schema.user_scram_credential_record import UserScramCredentialRecordV0
from .schema.zk_migration_state_record import ZkMigrationStateRecordV0

__all__ = [
    "FRAME_VERSION",
    "RECORD_CLASSES",
    "AbortTransactionRecordV0",
    "AccessControlEntryRecordV0",
    "BeginTransactionRecordV0",
    "BrokerEndpointV3",
    "BrokerFeatureV3",
    "BrokerRegistrationChangeRecordV2",
    "ClientQuotaRecordV0",
    "ConfigRecordV0",
    "ControllerEndpointV0",
    "ControllerFeatureV0",
    "DelegationTokenRecordV0",
    "EndTransactionRecordV0",
    "EntityDataV0",
    "FeatureLevelRecordV0",
    "FenceBrokerRecordV0",
    "MalformedMetadataRecordError",
    "MetadataRecordEncodeError",
    "MetadataRecordError",
    "MetadataRecordType",
    "NoOpRecordV0",
    "PartitionChangeRecordV2",
    "PartitionRecordV2",
    "ProducerIdsRecordV0",
    "RegisterBrokerRecordV3",
    "RegisterControllerRecordV0",
    "RemoveAccessControlEntryRecordV0",
    "RemoveDelegationTokenRecordV0",
    "RemoveTopicRecordV0",
    "RemoveUserScramCredentialRecordV0",
    "TopicRecordV0",
    "TrailingBytesError",
    "TruncatedMetadataRecordError",
    "UnfenceBrokerRecordV0",
    "UnknownFrameVersionError",
    "UnknownMetadataRecordTypeError",
    "UnregisterBrokerRecordV0",
    "UnsupportedMetadataRecordVersionError",
    "UserScramCredentialRecordV0",
    "ZkMigrationStateRecordV0",
    "decode_metadata_record",
    "encode_metadata_record",
    "latest_version",
    "metadata_record_envelope",
    "metadata_record_to_dict",
    "metadata_record_to_json",
    "record_class",
    "record_type",
    "record_type_name",
    "supported_versions",
]
