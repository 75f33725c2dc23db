"""Kafka's own Java client (kafka-clients 3.9.1) against SASL_PLAINTEXT listeners and the StandardAuthorizer
(SecurityChecks.java over tests/e2e/security_cluster.py): logins with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512, a wrong
password refused with SaslAuthenticationException, Admin.createAcls / describeAcls / deleteAcls, alter and describe
UserScramCredentials (and a login with the new user), and the authorization exceptions the client raises (the
classic and the KIP-848 consumer protocols); then the same client over SASL_SSL listeners (a PEM trust store)."""

from __future__ import annotations

import pytest

from tests.e2e.security_cluster import sasl_ssl_cluster, secure_cluster

from .java_programs import failures

MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
CHECKS = ["admin_creates_topics", "create_acls", "describe_acls", "alter_user_scram_credentials",
          "describe_user_scram_credentials", *(f"alice_produces_and_consumes_{m}" for m in MECHANISMS),
          *(f"wrong_password_refused_{m}" for m in MECHANISMS), "new_scram_user_logs_in", "denied_topic",
          "denied_group", "consumer_protocol_reads", "consumer_protocol_denied_group",
          "consumer_protocol_denied_topic", "denied_cluster_operation", "delete_acls", "delete_user_scram_credentials"]


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory):
    with secure_cluster(tmp_path_factory.mktemp("java-security")) as setup:
        yield setup


def test_java_client_with_sasl_and_acls(java, secure):
    results = java.run("SecurityChecks", secure.bootstrap(), timeout=600)
    assert not failures(results, CHECKS)
    assert results["wrong_password_refused_SCRAM-SHA-512"].detail == "SaslAuthenticationException"


def test_java_client_over_sasl_ssl(java, tmp_path_factory: pytest.TempPathFactory):
    with sasl_ssl_cluster(tmp_path_factory.mktemp("java-sasl-ssl")) as secure:
        results = java.run("SecurityChecks", secure.bootstrap(), secure.ca, timeout=600)
    assert not failures(results, ["tls_admin_creates_topic_and_acls",
                                  *(f"tls_alice_produces_and_consumes_{m}" for m in MECHANISMS),
                                  "tls_wrong_password_refused"])

