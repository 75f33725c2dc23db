"""SCRAM (protocol/scram.py) against RFC 7677's SCRAM-SHA-256 example exchange, and Kafka's message grammar."""

from __future__ import annotations

import base64

import pytest

from pykraft.protocol import scram
from pykraft.protocol.principal import (
    ANONYMOUS,
    KafkaPrincipal,
    PrincipalError,
    deserialize_principal,
    parse_principal,
    serialize_principal,
)

# RFC 7677 section 3
CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
SERVER_FIRST = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
CLIENT_FINAL = (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="


def test_rfc7677_exchange_verifies_both_ways() -> None:
    mech = scram.MECHANISMS["SCRAM-SHA-256"]
    first = scram.ClientFirst.parse(CLIENT_FIRST)
    server_first = scram.ServerFirst.parse(SERVER_FIRST)
    final, without_proof = scram.ClientFinal.parse(CLIENT_FINAL)
    assert (first.name, first.nonce, server_first.iterations) == ("user", "rOprNGfwEbeRWgbNEkqO", 4096)
    salted = scram.salted_password(mech, "pencil", server_first.salt, server_first.iterations)
    stored, server_key = scram.credential_from_salted(mech, salted)
    message = scram.auth_message(first, server_first, without_proof)
    # the server's side: the client's proof checks out against the stored key only
    assert scram.verify_client_proof(mech, stored, message, final.proof)
    assert not scram.verify_client_proof(mech, stored, message, bytes(len(final.proof)))
    # the client's side: its own proof, and the server's signature
    assert scram.client_proof(mech, salted, message) == final.proof
    signature = scram.server_signature(mech, server_key, message)
    assert scram.ServerFinal(None, signature).message().encode() == SERVER_FINAL
    assert scram.ServerFinal.parse(SERVER_FINAL).signature == signature


def test_messages_round_trip() -> None:
    first = scram.ClientFirst.parse(b"n,a=alice,n=alice,r=abc,tokenauth=true")
    assert first.authzid == "alice" and first.token_authenticated
    assert scram.ClientFirst.parse(first.message().encode()) == first
    server_first = scram.ServerFirst("abcdef", b"salt", 8192)
    assert scram.ServerFirst.parse(server_first.message().encode()) == server_first
    final = scram.ClientFinal(b"n,,", "abcdef", b"\x01" * 32)
    assert scram.ClientFinal.parse(final.message().encode())[0] == final
    assert scram.ServerFinal.parse(b"e=invalid-proof").error == "invalid-proof"


@pytest.mark.parametrize("bad", [b"", b"y,,n=user,r=x", b"n,,n=us,er,r=x", b"n,,n=user", b"\xff\xfe", b"n,,n=a=b,r=x",
                                 b"n,,n=user,r=a b"])
def test_bad_client_first_messages_are_refused(bad: bytes) -> None:
    with pytest.raises(scram.ScramError):
        scram.ClientFirst.parse(bad)


def test_sasl_names_escape_equals_and_comma() -> None:
    assert scram.sasl_name("a=b,c") == "a=3Db=2Cc"
    assert scram.username_of("a=3Db=2Cc") == "a=b,c"
    with pytest.raises(scram.ScramError):
        scram.username_of("a=4Fb")


def test_mechanisms_are_kafkas() -> None:
    assert {(m.name, m.type, m.min_iterations, m.max_iterations) for m in scram.MECHANISMS.values()} == {
        ("SCRAM-SHA-256", 1, 4096, 16384), ("SCRAM-SHA-512", 2, 4096, 16384)}
    assert scram.mechanism_by_type(0) is None and scram.mechanism_by_type(2).name == "SCRAM-SHA-512"
    assert len(scram.salted_password(scram.mechanism_by_type(2), "pw", b"s", 4096)) == 64


def test_principals() -> None:
    assert parse_principal("User:CN=a,O=b") == KafkaPrincipal("User", "CN=a,O=b")
    assert str(ANONYMOUS) == "User:ANONYMOUS"
    for bad in ("alice", ":alice", "User:", ""):
        with pytest.raises(PrincipalError):
            parse_principal(bad)
    principal = KafkaPrincipal("User", "alice", token_authenticated=True)
    data = serialize_principal(principal)
    assert data[:2] == b"\x00\x00"
    back = deserialize_principal(data)
    assert back == principal and back.token_authenticated
    for bad in (b"", b"\x00\x01" + data[2:], data + b"x", data[:-3]):
        with pytest.raises(PrincipalError):
            deserialize_principal(bad)
    assert base64.b64encode(data)  # bytes, as an Envelope carries them
