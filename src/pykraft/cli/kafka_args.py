"""Command lines as Kafka's tools read them (joptsimple), for the tools that take a kafka-*.sh line unchanged.

A tool declares its flags (`Flag`: no argument, a required or an optional one, repeatable or not, typed) and
`run_tool` parses the line, prints `--help` and `--version`, runs the tool and turns every failure into one line
and an exit status, in one place for every tool:
- a usage problem (`UsageError`: an unknown or ambiguous flag, a missing or unparsable value, a flag the tool
  refuses in this combination) is `<prog>: <problem>` on stderr, exit 1, as Kafka's printUsageAndExit exits
  (without the usage table after it: `--help` prints that);
- a failure while running (`ToolError`) is its own text on stdout or stderr, as the Kafka tool prints it, with
  the tool's exit status.
Like joptsimple, a long flag may be abbreviated to any unique prefix (`--bootstrap` for `--bootstrap-server`),
`--flag=value` is accepted, a required value is the next word even if it starts with `-` (`--shift-by -2`), and
an optional value is taken only when the next word is not a flag.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

__all__ = ["Flag", "Options", "ToolError", "UsageError", "parse", "run_tool"]

NONE, REQUIRED, OPTIONAL, MULTI = "none", "required", "optional", "multi"  # MULTI: argparse4j's nargs("+")
EXIT_USAGE = 1


class UsageError(Exception):
    """A bad command line; `str()` is the one line naming the problem."""


class ToolError(Exception):
    """A failure while running: `text` printed as it is on `stream`, exit `code`."""

    def __init__(self, text: str, code: int = 1, stream: str = "stderr") -> None:
        super().__init__(text)
        self.text, self.code, self.stream = text, code, stream


@dataclass(frozen=True, slots=True)
class Flag:
    name: str
    help: str
    arg: str = NONE
    metavar: str = ""
    default: str | None = None
    many: bool = False
    kind: type = str  # int: the value must parse as an integer (Kafka's Long/Integer options)
    short: str = ""  # a one-letter alias (argparse4j tools: -b for --bootstrap-server)


@dataclass
class Options:
    values: dict[str, list[str | None]] = field(default_factory=dict)
    defaults: dict[str, str | None] = field(default_factory=dict)
    extra: list[str] = field(default_factory=list)

    def has(self, name: str) -> bool:
        return name in self.values

    def get(self, name: str) -> str | None:
        found = self.values.get(name)
        return found[-1] if found else self.defaults.get(name)

    def all(self, name: str) -> list[str]:
        return [v for v in self.values.get(name, []) if v is not None]

    def integer(self, name: str) -> int | None:
        value = self.get(name)
        return None if value is None else int(value)


def _lookup(flags: dict[str, Flag], word: str) -> Flag:
    if word in flags:
        return flags[word]
    matches = [name for name in flags if name.startswith(word)]
    if len(matches) == 1:
        return flags[matches[0]]
    if len(matches) > 1:
        raise UsageError(f"Option '{word}' is ambiguous: " + ", ".join(sorted(matches)))
    raise UsageError(f"{word} is not a recognized option")


def _typed(flag: Flag, value: str) -> str:
    if flag.kind is int:
        try:
            int(value.strip())
        except ValueError:
            raise UsageError(f"Cannot parse argument '{value}' of option {flag.name}") from None
        return value.strip()
    return value


def parse(flags: Sequence[Flag], args: Sequence[str]) -> Options:
    table = {f.name: f for f in flags}
    options = Options(defaults={f.name: f.default for f in flags if f.default is not None})
    words = list(args)
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if not word.startswith("-") or word in ("-", "--"):
            options.extra.append(word)
            continue
        name, eq, inline = word.lstrip("-").partition("=")
        shorts = {f.short: f for f in flags if f.short}
        flag = shorts[name] if not word.startswith("--") and name in shorts else _lookup(table, name)
        value: str | None = None
        if flag.arg == NONE:
            if eq:
                raise UsageError(f"Option {flag.name} does not take an argument")
        elif eq:
            value = _typed(flag, inline)
        elif flag.arg == REQUIRED:
            if i >= len(words):
                raise UsageError(f"Option {flag.name} requires an argument")
            value = _typed(flag, words[i])
            i += 1
        elif flag.arg == MULTI:
            taken = []
            while i < len(words) and not words[i].startswith("-"):
                taken.append(_typed(flag, words[i]))
                i += 1
            if not taken:
                raise UsageError(f"argument --{flag.name}: expected at least one argument")
            options.values.setdefault(flag.name, []).extend(taken)
            continue
        elif i < len(words) and not words[i].startswith("--"):
            value = _typed(flag, words[i])
            i += 1
        if flag.name in options.values and not flag.many and flag.arg != NONE:
            options.values[flag.name].append(value)  # the last one counts, as joptsimple's valueOf
        else:
            options.values.setdefault(flag.name, []).append(value)
    return options


def help_text(description: str, flags: Sequence[Flag]) -> str:
    rows = []
    for f in flags:
        label = f"--{f.name}" + ("" if f.arg == NONE else f" <{f.metavar or f.name}>" if f.arg == REQUIRED
                                 else f" [{f.metavar or f.name}]")
        default = f" (default: {f.default})" if f.default is not None else ""
        rows.append((label, f.help + default))
    width = max(len(label) for label, _ in rows)
    lines = [description, "", "Option".ljust(width) + "  Description", "-" * 6 + " " * (width - 4) + "-" * 11]
    lines += [f"{label.ljust(width)}  {text}" for label, text in rows]
    return "\n".join(lines)


HELP = Flag("help", "Print usage information.")
VERSION = Flag("version", "Display pykraft's version.")


def run_tool(prog: str, description: str, flags: Sequence[Flag], args: Sequence[str],
             body: Callable[[Options], int | None], *, empty_is_help: bool = True, extra_words: bool = False) -> int:
    """Parse `args`, run `body(options)` and return the exit status; every failure is one line (see above). An
    empty line prints the help and exits 1, as Kafka's tools do, unless `empty_is_help` is False. Words that are
    not flags are refused unless `extra_words` (they are then `options.extra`)."""
    every = [*flags, HELP, VERSION]
    try:
        options = parse(every, args)
        if options.has("help") or (not args and empty_is_help):
            print(help_text(description, every))
            return 0 if args else EXIT_USAGE
        if options.has("version"):
            from .versions import version_line

            print(version_line())
            return 0
        if options.extra and not extra_words:
            raise UsageError(f"Found non-option arguments: {' '.join(options.extra)}")
        return body(options) or 0
    except UsageError as exc:
        print(f"{prog}: {' '.join(str(exc).split())}", file=sys.stderr)
        return EXIT_USAGE
    except ToolError as exc:
        print(exc.text, file=sys.stdout if exc.stream == "stdout" else sys.stderr)
        return exc.code


def require(options: Options, *names: str) -> None:
    """Kafka's CommandLineUtils.checkRequiredArgs."""
    for name in names:
        if not options.has(name):
            raise UsageError(f'Missing required argument "[{name}]"')


def refuse_with(options: Options, used: str, *others: str) -> None:
    """Kafka's CommandLineUtils.checkInvalidArgs: `used` cannot be combined with any of `others`."""
    if options.has(used):
        for other in others:
            if options.has(other):
                raise UsageError(f'Option "[{used}]" can\'t be used with option "[{other}]"')
