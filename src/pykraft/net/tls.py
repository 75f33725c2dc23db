"""Mutual TLS between nodes, from PEM files.

Both sides verify the peer's certificate chain against one CA file. Hostname checking is OFF on the client:
nodes are addressed by IP (127.0.0.1 in tests, bootstrap addresses in the config) and certificates name
the node ("CN=node-2"), not an address; trust comes from the CA, and the server side can authorize by the
subject it reads from `ConnectionInfo.tls_peer_subject`. TLS 1.2 is the minimum version on both sides.
"""

from __future__ import annotations

import ssl

from pykraft.net.errors import TlsConfigError

__all__ = ["client_context", "peer_subject", "server_context"]

# Attribute names OpenSSL reports (long form) to the short RFC 4514 keys Kafka prints (Java's X500Principal).
_SHORT_NAMES = {
    "commonName": "CN",
    "organizationName": "O",
    "organizationalUnitName": "OU",
    "countryName": "C",
    "stateOrProvinceName": "ST",
    "localityName": "L",
    "streetAddress": "STREET",
    "domainComponent": "DC",
    "userId": "UID",
}


def server_context(cert_path: str, key_path: str, ca_path: str, *, require_client_cert: bool = True) -> ssl.SSLContext:
    """A server context presenting `cert_path` and verifying client certificates against `ca_path`.

    With `require_client_cert=False` a client without a certificate is accepted (its subject is then None),
    but a certificate that is presented must still verify.
    """
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.verify_mode = ssl.CERT_REQUIRED if require_client_cert else ssl.CERT_OPTIONAL
    _load_chain(context, cert_path, key_path)
    _load_ca(context, ca_path)
    return context


def client_context(cert_path: str | None, key_path: str | None, ca_path: str) -> ssl.SSLContext:
    """A client context verifying the server against `ca_path`, presenting `cert_path` when given."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.check_hostname = False  # nodes are addressed by IP; see the module docstring
    context.verify_mode = ssl.CERT_REQUIRED
    if cert_path is not None:
        _load_chain(context, cert_path, key_path)
    elif key_path is not None:
        raise TlsConfigError(f"TLS key {key_path} given without a certificate")
    _load_ca(context, ca_path)
    return context


def peer_subject(ssl_object: ssl.SSLObject | ssl.SSLSocket | None) -> str | None:
    """The verified peer certificate's subject in RFC 4514 order ("CN=node-2,O=pykraft"), or None.

    OpenSSL lists the RDNs in certificate order (C first, CN last); RFC 4514 and Java's
    `X500Principal.getName()` print them reversed, most specific first, which is what Kafka logs and
    matches ACL principals against.
    """
    if ssl_object is None:
        return None
    cert = ssl_object.getpeercert()
    if not cert:
        return None
    rdns = cert.get("subject", ())
    parts = ["+".join(f"{_SHORT_NAMES.get(key, key)}={_escape(str(value))}" for key, value in rdn)
             for rdn in reversed(rdns)]
    return ",".join(parts)


def _escape(value: str) -> str:
    """RFC 4514 escaping of an attribute value."""
    out = "".join("\\" + ch if ch in ',+"\\<>;' else ch for ch in value)
    if out.startswith((" ", "#")):
        out = "\\" + out
    if out.endswith(" ") and not out.endswith("\\ "):
        out = out[:-1] + "\\ "
    return out


def _load_chain(context: ssl.SSLContext, cert_path: str, key_path: str | None) -> None:
    _check_readable(cert_path, "certificate")
    if key_path is not None:
        _check_readable(key_path, "key")
    try:
        context.load_cert_chain(cert_path, key_path)
    except (ssl.SSLError, OSError) as exc:
        where = cert_path if key_path is None else f"{cert_path} and key {key_path}"
        raise TlsConfigError(f"cannot load TLS certificate {where}: {_one_line(exc)}") from None


def _load_ca(context: ssl.SSLContext, ca_path: str) -> None:
    _check_readable(ca_path, "CA file")
    try:
        context.load_verify_locations(cafile=ca_path)
    except (ssl.SSLError, OSError) as exc:
        raise TlsConfigError(f"cannot load TLS CA file {ca_path}: {_one_line(exc)}") from None


def _check_readable(path: str, what: str) -> None:
    """OpenSSL's errors do not say which file failed to open; this one does."""
    try:
        with open(path, "rb"):
            pass
    except OSError as exc:
        raise TlsConfigError(f"cannot read TLS {what} {path}: {exc.strerror or exc}") from None


def _one_line(exc: BaseException) -> str:
    text = getattr(exc, "strerror", None) or getattr(exc, "reason", None) or str(exc)
    return " ".join(str(text).split())
