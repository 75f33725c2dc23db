"""Kafka's keystores and truststores (`ssl.keystore.*`, `ssl.truststore.*`) turned into the PEM files Python's ssl
module loads.

Types: PKCS12 (a keystore with the node's key and certificate chain; a truststore with the trusted certificates)
and PEM (a keystore file holding the private key, encrypted with `ssl.key.password` or not, and the certificate
chain; a truststore file of certificates). JKS, Kafka's default type, is Java's own format: refused with a message
asking for PKCS12 or PEM.

`resolve_tls` writes the key and chain into a private directory (mode 0700, files 0600, removed at exit): the ssl
module reads keys from files only. The key is written unencrypted there, as it would be readable by this process
anyway. A store that cannot be read or decrypted is a configuration problem, reported with the others at start.
"""

from __future__ import annotations

import atexit
import os
from dataclasses import dataclass

STORE_TYPES = ("PKCS12", "PEM")


@dataclass(frozen=True, slots=True)
class StoreSpec:
    location: str
    type: str  # one of STORE_TYPES
    password: str | None
    key_password: str | None = None  # keystores: ssl.key.password


class StoreError(ValueError):
    """A keystore or truststore that cannot be used; the message names the key and the reason."""


def resolve_tls(cert: str | None, key: str | None, ca: str | None, keystore: StoreSpec | None,
                truststore: StoreSpec | None) -> tuple[str, str, str]:
    """(cert path, key path, CA path) in PEM, from the PEM keys or the stores (the stores win when both are set)."""
    directory = None
    if keystore is not None:
        directory = _private_directory()
        cert, key = _keystore_pem(keystore, directory)
    if truststore is not None:
        ca = _truststore_pem(truststore, directory or _private_directory())
    assert cert is not None and key is not None and ca is not None, "config_build checked that all three are set"
    return cert, key, ca


def _private_directory() -> str:
    import shutil  # here: only a node with a PKCS12 store needs them (issue 34: idle RSS)
    import tempfile

    directory = tempfile.mkdtemp(prefix="pykraft-tls-")  # mode 0700
    atexit.register(shutil.rmtree, directory, True)
    return directory


def _read(spec: StoreSpec, what: str) -> bytes:
    try:
        with open(spec.location, "rb") as handle:
            return handle.read()
    except OSError as exc:
        raise StoreError(f"ssl.{what}.location: cannot read {spec.location}: {exc.strerror or exc}") from None


def _password(value: str | None) -> bytes | None:
    return None if value is None or value == "" else value.encode()


def _keystore_pem(spec: StoreSpec, directory: str) -> tuple[str, str]:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.serialization import pkcs12
    from cryptography.x509 import load_pem_x509_certificates

    data = _read(spec, "keystore")
    try:
        if spec.type == "PKCS12":
            key, cert, extra = pkcs12.load_key_and_certificates(data, _password(spec.password))
            chain = ([cert] if cert is not None else []) + list(extra)
        else:
            key = serialization.load_pem_private_key(data, _password(spec.key_password))
            chain = load_pem_x509_certificates(data)
    except (ValueError, TypeError) as exc:
        raise StoreError(f"ssl.keystore.location: cannot load the {spec.type} keystore {spec.location}: "
                         f"{' '.join(str(exc).split())}") from None
    if key is None or not chain:
        raise StoreError(f"ssl.keystore.location: {spec.location} holds no private key with its certificate")
    key_path, cert_path = os.path.join(directory, "key.pem"), os.path.join(directory, "chain.pem")
    _write(key_path, key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    _write(cert_path, b"".join(c.public_bytes(serialization.Encoding.PEM) for c in chain))
    return cert_path, key_path


def _truststore_pem(spec: StoreSpec, directory: str) -> str:
    if spec.type == "PEM":
        _read(spec, "truststore")
        return spec.location
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.serialization import pkcs12

    data = _read(spec, "truststore")
    try:
        store = pkcs12.load_pkcs12(data, _password(spec.password))
    except (ValueError, TypeError) as exc:
        raise StoreError(f"ssl.truststore.location: cannot load the PKCS12 truststore {spec.location}: "
                         f"{' '.join(str(exc).split())}") from None
    certs = ([store.cert.certificate] if store.cert is not None else []) + [c.certificate for c in store.additional_certs]
    if not certs:
        raise StoreError(f"ssl.truststore.location: {spec.location} holds no certificate")
    path = os.path.join(directory, "truststore.pem")
    _write(path, b"".join(c.public_bytes(serialization.Encoding.PEM) for c in certs))
    return path


def _write(path: str, data: bytes) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data)
