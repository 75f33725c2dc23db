"""Who a connection is, as Kafka's `DefaultKafkaPrincipalBuilder` decides it: `User:ANONYMOUS` on PLAINTEXT and on
SSL without a client certificate, `User:<mapped subject>` on SSL with one (`ssl.principal.mapping.rules`, Kafka's
`SslPrincipalMapper`), and `User:<authorization id>` after SASL (sasl_server.py).

`ssl.principal.mapping.rules` is a comma-separated list tried in order; the first rule that applies names the user:
- `DEFAULT`: the subject as it is ("CN=client,O=pykraft", RFC 2253);
- `RULE:pattern/replacement/[L|U]`: when the Java regular expression `pattern` matches the whole subject, the subject
  with the pattern replaced by `replacement` (`$1` back references), lower- or upper-cased with `L` / `U`.
A subject no rule applies to cannot be mapped: Kafka fails the connection, and so does the server here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pykraft.protocol.principal import ANONYMOUS, USER_TYPE, KafkaPrincipal

__all__ = ["DEFAULT_RULES", "NoMatchingRule", "SslPrincipalMapper", "ssl_principal"]

DEFAULT_RULES = "DEFAULT"
_RULE = r"(DEFAULT)|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_SPLITTER = re.compile(rf"\s*({_RULE})\s*(?:,\s*|$)")
_PARSER = re.compile(_RULE)


class NoMatchingRule(ValueError):
    """No mapping rule applies to a certificate subject (the connection fails)."""


@dataclass(frozen=True, slots=True)
class _Rule:
    pattern: re.Pattern[str] | None  # None: DEFAULT
    replacement: str = ""
    case: str = ""  # "L", "U" or ""

    def apply(self, subject: str) -> str | None:
        if self.pattern is None:
            return subject
        if self.pattern.fullmatch(subject) is None:
            return None
        result = self.pattern.sub(lambda m: _expand(self.replacement, m), subject)
        return result.lower() if self.case == "L" else result.upper() if self.case == "U" else result


def _expand(replacement: str, match: re.Match[str]) -> str:
    """Java's Matcher.appendReplacement: `$n` is a group (the longest number of groups there are; a group that does
    not exist stays literal, as Kafka's escapeLiteralBackReferences makes it), `\\x` is x."""
    out, i, groups = [], 0, match.re.groups
    while i < len(replacement):
        ch = replacement[i]
        if ch == "\\" and i + 1 < len(replacement):
            out.append(replacement[i + 1])
            i += 2
            continue
        if ch == "$" and i + 1 < len(replacement) and replacement[i + 1].isdigit():
            digits = re.match(r"\d+", replacement[i + 1:]).group()  # type: ignore[union-attr]
            number = digits
            while len(number) > 1 and int(number) > groups:
                number = number[:-1]
            if int(number) <= groups and not digits.startswith("0"):
                out.append(match.group(int(number)) or "")
                i += 1 + len(number)
                continue
            if digits.startswith("0"):
                out.append(match.group(0))
                i += 2
                continue
        out.append(ch)
        i += 1
    return "".join(out)


class SslPrincipalMapper:
    def __init__(self, rules: str | None = None) -> None:
        """ValueError (Kafka's message) for a rule that does not parse."""
        self.rules = tuple(self._parse(rules if rules is not None else DEFAULT_RULES))

    @staticmethod
    def _parse(text: str) -> list[_Rule]:
        parsed: list[_Rule] = []
        for found in _SPLITTER.finditer(text.strip()):
            rule = found.group(1)
            if not rule and found.end() >= len(text.strip()):
                break
            match = _PARSER.match(rule)
            if match is None or match.end() != len(rule):
                raise ValueError(f"Invalid rule: {rule}")
            if match.group(1):
                parsed.append(_Rule(None))
            elif match.group(2) is not None:
                try:
                    pattern = re.compile(match.group(2))
                except re.error as exc:
                    raise ValueError(f"Invalid rule: {rule}: {exc}") from None
                parsed.append(_Rule(pattern, match.group(3), match.group(4)))
            elif match.group(5):
                raise ValueError(f"Invalid rule: {rule}")
        return parsed

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SslPrincipalMapper) and other.rules == self.rules

    def __hash__(self) -> int:
        return hash(self.rules)

    def __repr__(self) -> str:
        return f"SslPrincipalMapper({len(self.rules)} rules)"

    def name(self, subject: str) -> str:
        for rule in self.rules:
            mapped = rule.apply(subject)
            if mapped is not None:
                return mapped
        raise NoMatchingRule(f"No rules apply to {subject}")


def ssl_principal(subject: str | None, mapper: SslPrincipalMapper) -> KafkaPrincipal:
    """The principal of an SSL connection: ANONYMOUS without a verified client certificate."""
    if subject is None:
        return ANONYMOUS
    return KafkaPrincipal(USER_TYPE, mapper.name(subject))
