"""JAAS configuration text as Kafka reads `sasl.jaas.config` values (Kafka's `JaasConfig`): one or more login modules,
each `<class> <flag> [<option>=<value> ...];`, values bare words or double-quoted strings, `//` and `/* */` comments.

Kafka's server reads one login module per listener and mechanism (`listener.name.<l>.<mechanism>.sasl.jaas.config`):
- PlainLoginModule: `user_<name>="<password>"` options are the users the listener accepts with PLAIN, and
  `username`/`password` what the node itself sends when it connects to that listener (inter-broker, controller);
- ScramLoginModule: `username`/`password` the node's own SCRAM credentials (the users it accepts are in the metadata
  log).
A client (pykraft's tools: `sasl.jaas.config` of a --command-config file) reads `username`/`password` the same way
(`client_credentials`). A parsed entry never shows its option values (`repr`): they are passwords.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["JaasEntry", "JaasError", "PLAIN_MODULE", "SCRAM_MODULE", "client_credentials", "parse_jaas",
           "plain_users"]

PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
FLAGS = ("required", "requisite", "sufficient", "optional")
_TOKEN = re.compile(r'\s+|//[^\n]*|/\*.*?\*/|"(?P<quoted>(?:\\.|[^"\\])*)"|(?P<word>[A-Za-z0-9._$\-]+)|(?P<char>.)',
                    re.DOTALL)


class JaasError(ValueError):
    """A JAAS text that does not parse (one line, Kafka's words where Kafka has them)."""


@dataclass(frozen=True, slots=True)
class JaasEntry:
    module: str
    flag: str
    options: Mapping[str, str] = field(repr=False)

    def __repr__(self) -> str:
        return f"JaasEntry(module={self.module!r}, flag={self.flag!r}, options=[{', '.join(sorted(self.options))}])"


def _tokens(text: str) -> list[tuple[str, str]]:
    """(kind, value) with kind word, quoted or a single character."""
    found = []
    for match in _TOKEN.finditer(text):
        if match.group("quoted") is not None:
            found.append(("quoted", re.sub(r"\\(.)", r"\1", match.group("quoted"))))
        elif match.group("word") is not None:
            found.append(("word", match.group("word")))
        elif match.group("char") is not None:
            if match.group("char") == '"':
                raise JaasError("Unterminated quoted string in JAAS config")
            found.append(("char", match.group("char")))
    return found


def parse_jaas(text: str) -> list[JaasEntry]:
    """Every login module of a JAAS text. JaasError for anything Kafka's JaasConfig refuses."""
    tokens = _tokens(text)
    entries: list[JaasEntry] = []
    position = 0
    while position < len(tokens):
        kind, module = tokens[position]
        if kind != "word":
            raise JaasError("Login module not specified in JAAS config")
        if position + 1 >= len(tokens) or tokens[position + 1][0] != "word":
            raise JaasError("Login module control flag not specified in JAAS config")
        flag = tokens[position + 1][1]
        if flag.lower() not in FLAGS:
            raise JaasError(f"Invalid login module control flag '{flag}' in JAAS config")
        position += 2
        options: dict[str, str] = {}
        while position < len(tokens) and tokens[position] != ("char", ";"):
            key_kind, key = tokens[position]
            if key_kind != "word":
                raise JaasError(f"Unexpected token '{key}' in JAAS config")
            if (position + 2 >= len(tokens) or tokens[position + 1] != ("char", "=")
                    or tokens[position + 2][0] not in ("word", "quoted")):
                raise JaasError(f"Value not specified for key '{key}' in JAAS config")
            options[key] = tokens[position + 2][1]
            position += 3
        if position >= len(tokens):
            raise JaasError("Login module entry is not terminated by ';' in JAAS config")
        position += 1
        entries.append(JaasEntry(module, flag.lower(), options))
    return entries


def plain_users(entry: JaasEntry) -> dict[str, str]:
    """The `user_<name>` options of a PlainLoginModule entry: the users PLAIN accepts."""
    if entry.module != PLAIN_MODULE:
        return {}
    return {key[len("user_"):]: value for key, value in entry.options.items() if key.startswith("user_")}


def client_credentials(text: str, mechanism: str) -> tuple[str, str]:
    """(username, password) of a client's sasl.jaas.config for `mechanism`; JaasError when it has none."""
    entries = parse_jaas(text)
    if len(entries) != 1:
        raise JaasError(f"JAAS config property contains {len(entries)} login modules, should be 1 module")
    expected = PLAIN_MODULE if mechanism == "PLAIN" else SCRAM_MODULE
    entry = entries[0]
    if entry.module != expected:
        raise JaasError(f"SASL mechanism {mechanism} needs the login module {expected}, not {entry.module}")
    username, password = entry.options.get("username"), entry.options.get("password")
    if not username or password is None:
        raise JaasError("the JAAS config has no username and password options")
    return username, password
