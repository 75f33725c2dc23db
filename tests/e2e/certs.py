"""Certificates for the TLS end-to-end tests, made with the openssl command line (EC P-256, two days).

One cluster CA issues a certificate per node and one for the admin client; a second, unrelated CA issues the
"intruder" certificate, whose subject looks like a real node's so that only the issuer tells it apart.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

OPENSSL = "/usr/bin/openssl"
_EC = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]


@dataclass(frozen=True, slots=True)
class KeyPair:
    cert: str
    key: str


@dataclass(frozen=True, slots=True)
class ClusterCerts:
    ca: str  # the cluster CA every genuine node and client trusts
    nodes: dict[int, KeyPair]  # issued by `ca`, CN=node-<id>
    client: KeyPair  # issued by `ca`, CN=admin
    rogue_ca: str  # an unrelated CA
    intruder: KeyPair  # issued by `rogue_ca`


def _openssl(*args: str) -> None:
    subprocess.run([OPENSSL, *args], check=True, capture_output=True)


def _make_ca(directory: Path, name: str) -> str:
    _openssl("req", "-x509", *_EC, "-keyout", str(directory / f"{name}.key"), "-out", str(directory / f"{name}.pem"),
             "-days", "2", "-subj", f"/CN=pykraft-{name}")
    return str(directory / f"{name}.pem")


def _issue(directory: Path, ca_name: str, name: str, subject: str) -> KeyPair:
    key, csr, cert = directory / f"{name}.key", directory / f"{name}.csr", directory / f"{name}.pem"
    _openssl("req", "-new", *_EC, "-keyout", str(key), "-out", str(csr), "-subj", subject)
    _openssl("x509", "-req", "-in", str(csr), "-CA", str(directory / f"{ca_name}.pem"),
             "-CAkey", str(directory / f"{ca_name}.key"), "-CAcreateserial", "-days", "2", "-out", str(cert))
    return KeyPair(str(cert), str(key))


def make_cluster_certs(directory: Path, node_ids: list[int], intruder_id: int) -> ClusterCerts:
    directory.mkdir(parents=True, exist_ok=True)
    ca = _make_ca(directory, "cluster-ca")
    nodes = {i: _issue(directory, "cluster-ca", f"node-{i}", f"/O=pykraft/CN=node-{i}") for i in node_ids}
    client = _issue(directory, "cluster-ca", "admin", "/O=pykraft/CN=admin")
    rogue_ca = _make_ca(directory, "rogue-ca")
    intruder = _issue(directory, "rogue-ca", "intruder", f"/O=pykraft/CN=node-{intruder_id}")
    return ClusterCerts(ca, nodes, client, rogue_ca, intruder)


def issue_client(directory: Path, name: str) -> KeyPair:
    """A client certificate "CN=<name>,O=pykraft" from the cluster CA of `make_cluster_certs(directory, ...)`."""
    return _issue(directory, "cluster-ca", name, f"/O=pykraft/CN={name}")


def node_tls_properties(pair: KeyPair, ca: str) -> dict[str, str]:
    """The keys a node needs for mutual TLS on its CONTROLLER listener."""
    return {
        "listener.security.protocol.map": "CONTROLLER:SSL",
        "ssl.certificate.location": pair.cert,
        "ssl.key.location": pair.key,
        "ssl.ca.location": ca,
        "ssl.client.auth": "required",
    }


def client_tls_properties(pair: KeyPair | None, ca: str) -> str:
    """A `--command-config` file's text for the CLI (no key pair: server authentication only)."""
    lines = ["security.protocol=SSL", f"ssl.ca.location={ca}"]
    if pair is not None:
        lines += [f"ssl.certificate.location={pair.cert}", f"ssl.key.location={pair.key}"]
    return "\n".join(lines) + "\n"
