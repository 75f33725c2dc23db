"""Every Admin method of Kafka's Java client (kafka-clients 3.9.1) against pykraft (AdminSurvey.java).

A method passes when pykraft answers it: success, or an error the server chose (e.g. NoReassignmentInProgress for
cancelling nothing). The methods pykraft cannot answer yet are strict xfails naming the issue that builds them, so
this list is also the README's list of what Kafka's Admin cannot do against pykraft; when one starts working, its
xfail fails and must go.
"""

from __future__ import annotations

import pytest

from .conftest import brokers_of
from .java_programs import failures

# method -> the issue whose work makes pykraft answer it
NOT_YET: dict[str, str] = {
    "describeDelegationToken": "no issue yet: delegation tokens",
    "describeClientQuotas": "no issue yet: client quotas",
    "alterClientQuotas": "no issue yet: client quotas",
    "listClientMetricsResources": "no issue yet: KIP-714 client metrics",
}

METHODS = [
    "listTopics", "describeTopics", "describeCluster", "describeConfigs_topic", "describeConfigs_broker",
    "incrementalAlterConfigs_topic", "incrementalAlterConfigs_broker_default", "createPartitions", "listOffsets",
    "listOffsets_maxTimestamp", "deleteRecords", "describeLogDirs", "describeReplicaLogDirs", "alterReplicaLogDirs",
    "electLeaders_preferred", "listPartitionReassignments", "alterPartitionReassignments_cancel",
    "listConsumerGroups", "describeConsumerGroups", "listConsumerGroupOffsets", "alterConsumerGroupOffsets",
    "deleteConsumerGroupOffsets", "removeMembersFromConsumerGroup_unknown", "deleteConsumerGroups", "describeAcls",
    "describeClientQuotas", "alterClientQuotas", "describeUserScramCredentials", "alterUserScramCredentials", "describeDelegationToken",
    "describeFeatures", "updateFeatures_validateOnly", "describeMetadataQuorum", "describeProducers",
    "listTransactions", "describeTransactions", "fenceProducers", "listClientMetricsResources",
    "unregisterBroker_unknown", "deleteTopics",
]


@pytest.fixture(scope="module")
def survey(java, java_cluster):
    return java.run("AdminSurvey", brokers_of(java_cluster), "java", timeout=900)


@pytest.mark.parametrize("method", [
    pytest.param(m, marks=pytest.mark.xfail(strict=True, reason=NOT_YET[m])) if m in NOT_YET else m
    for m in METHODS])
def test_admin_method_answered(survey, method):
    assert not failures(survey, [method])
