"""`pykraft metadata-shell`: Kafka's kafka-metadata-shell: browse the metadata image (metadata_nodes.py) of a
snapshot (`--snapshot/-s FILE`, Kafka's flag) or of a metadata log directory (`--directory/-d DIR`, the latest
snapshot plus the log after it: metadata_image.py), rebuilt by the controller's own replay.

Commands, as Kafka's shell runs them: `ls [paths]`, `cat paths`, `cd [path]`, `pwd`, `find [paths]`,
`tree paths`, `help`, `history`, `exit`; paths are absolute or relative to the working directory, may use `.`
and `..`, and each component may be a glob (`*`, `?`, `[abc]`, `{a,b}`). Without a command the shell is
interactive (a `>> ` prompt, line editing and history where Python's readline is available); with one (the
positional words, or `--command "ls /image"`) it runs it, prints, and exits, as Kafka's non-interactive form.
A path that does not exist prints Kafka's line ("ls: /x: no such file or directory.") and makes the command exit 1.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
import shutil
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from .kafka_args import REQUIRED, Flag, Options, ToolError, UsageError, run_tool
from .metadata_image import ImageError, load_image
from .metadata_nodes import Node, root_node

PROG = "pykraft metadata-shell"
DESCRIPTION = "The Apache Kafka metadata shell (pykraft's), over a snapshot or a metadata log directory."
FLAGS = (
    Flag("snapshot", "The snapshot file to read.", REQUIRED, "SNAPSHOT", short="s"),
    Flag("directory", "A metadata log directory (__cluster_metadata-0, or a node's data directory) to read: its "
                      "latest snapshot and the log after it.", REQUIRED, "DIRECTORY", short="d"),
    Flag("command", "A command to run instead of the interactive shell, e.g. \"ls /image/topics/byName\".",
         REQUIRED, "COMMAND", short="c"),
)
COMMANDS = {"cat": "Show the contents of metadata files.", "cd": "Set the current working directory.",
            "exit": "Exit the metadata shell.", "find": "Search for nodes in the directory hierarchy.",
            "help": "Display this help message.", "history": "Print command history.",
            "ls": "List metadata nodes.", "pwd": "Print the current working directory.",
            "tree": "Show the contents of metadata nodes in a tree structure."}


def split_path(path: str) -> list[str]:
    return [part for part in path.split("/") if part]


def strip_dots(parts: Sequence[str]) -> list[str]:
    out: list[str] = []
    for part in parts:
        if part == "..":
            if out:
                out.pop()
        elif part != ".":
            out.append(part)
    return out


def _glob_regex(component: str) -> re.Pattern[str] | None:
    """A regex for a component with glob characters (`{a,b}` alternatives too); None for a literal."""
    if not any(ch in component for ch in "*?[{"):
        return None
    alternatives = [component]
    match = re.search(r"\{([^{}]*)\}", component)
    if match:
        alternatives = [component[:match.start()] + alt + component[match.end():]
                        for alt in match.group(1).split(",")]
    return re.compile("|".join(f"(?:{fnmatch.translate(a)})" for a in alternatives))


class Shell:
    def __init__(self, root: Node, out: Callable[[str], None] = print) -> None:
        self.root, self.cwd, self.out = root, "/", out
        self.history: list[str] = []
        self.failed = False
        self.width: int | None = None  # the terminal's width in interactive mode (ls prints columns)

    def resolve(self, target: str) -> list[tuple[str, Node]]:
        """Every (absolute path, node) `target` names (globs expanded, in name order)."""
        absolute = target if target.startswith("/") else f"{self.cwd.rstrip('/')}/{target}"
        found = [("", self.root)]
        for part in strip_dots(split_path(absolute)):
            matcher = _glob_regex(part)
            step = []
            for path, node in found:
                if not node.is_directory:
                    continue
                names = [n for n in node.names() if matcher.fullmatch(n)] if matcher else [part]
                for name in names:
                    child = node.child(name)
                    if child is not None:
                        step.append((f"{path}/{name}", child))
            found = step
        return [(path or "/", node) for path, node in found]

    def _missing(self, command: str, target: str, text: str = "no such file or directory.") -> None:
        self.out(f"{command}: {target}: {text}")
        self.failed = True

    def run_line(self, line: str) -> bool:
        """Run one command line; False when it was `exit`."""
        try:
            words = shlex.split(line)
        except ValueError as exc:
            self.out(f"Error: {exc}")
            return True
        if not words:
            return True
        self.history.append(line)
        return self.run(words[0], words[1:])

    def run(self, command: str, args: list[str]) -> bool:
        handler = getattr(self, f"do_{command}", None)
        if handler is None:
            self.out(f"Unknown command {command}: try 'help'.")
            self.failed = True
            return True
        return handler(args) is not False

    def do_exit(self, args: list[str]) -> bool:
        return False

    def do_help(self, args: list[str]) -> None:
        self.out("Welcome to the pykraft metadata shell (Kafka's kafka-metadata-shell).\n")
        for name, text in COMMANDS.items():
            self.out(f"{name:<10}{text}")

    def do_history(self, args: list[str]) -> None:
        for index, line in enumerate(self.history, 1):
            self.out(f"{index:5d}: {line}")

    def do_pwd(self, args: list[str]) -> None:
        self.out(self.cwd)

    def do_cd(self, args: list[str]) -> None:
        target = args[0] if args else "/"
        found = self.resolve(target)
        if len(found) != 1:
            self._missing("cd", target, "no such directory.")
        elif not found[0][1].is_directory:
            self._missing("cd", target, "not a directory.")
        else:
            self.cwd = found[0][0]

    def do_ls(self, args: list[str]) -> None:
        files, dirs = [], []
        for target in args or ["."]:
            found = self.resolve(target)
            if not found:
                self._missing("ls", target)
            for path, node in found:
                name = path.rsplit("/", 1)[-1] or "/"
                (dirs.append((name, node.names())) if node.is_directory else files.append(name))
        self._entries("", files)
        intro = bool(files) or len(dirs) > 1
        first = not files
        for name, children in dirs:
            self._entries(("" if first else "\n") + f"{name}:" if intro else "", children)
            first = False

    def _entries(self, intro: str, entries: list[str]) -> None:
        """Kafka's printEntries: one per line, or in columns when a terminal width is known."""
        if not entries:
            return
        if intro:
            self.out(intro)
        width = self.width
        if width is None or width // 4 <= 1:
            for entry in entries:
                self.out(entry)
            return
        columns = 1
        for count in range(width // 4, 1, -1):
            per = -(-len(entries) // count)
            widths = [max(len(e) + 2 for e in entries[i * per:(i + 1) * per] or [""]) for i in range(count)]
            if entries[(count - 1) * per:] and sum(widths) <= width:
                columns = count
                break
        per = -(-len(entries) // columns)
        widths = [max([len(e) + 2 for e in entries[i * per:(i + 1) * per]] or [0]) for i in range(columns)]
        for line in range(per):
            cells = [entries[line + c * per] for c in range(columns) if line + c * per < len(entries)]
            self.out("".join(cell.ljust(widths[i]) if i < len(cells) - 1 else cell for i, cell in enumerate(cells)))

    def do_cat(self, args: list[str]) -> None:
        if not args:
            self.out("cat: the following arguments are required: targets")
            self.failed = True
        for target in args:
            found = self.resolve(target)
            if not found:
                self._missing("cat", target, "No such file or directory.")
            for _, node in found:
                if node.is_directory:
                    self._missing("cat", target, "Is a directory")
                else:
                    self.out(node.text)

    def do_tree(self, args: list[str]) -> None:
        if not args:
            self.out("tree: the following arguments are required: targets")
            self.failed = True
        for target in args:
            found = self.resolve(target)
            if not found:
                self._missing("tree", target, "No such file or directory.")
            for _, node in found:
                for line in _print_node(node, 0):
                    self.out(line)

    def do_find(self, args: list[str]) -> None:
        for target in args or ["."]:
            found = self.resolve(target)
            if not found:
                self._missing("find", target)
            for _, node in found:
                self._find(target, node)

    def _find(self, path: str, node: Node) -> None:
        self.out(path)
        if node.is_directory:
            for name in node.names():
                child = node.child(name)
                if child is not None:
                    self._find(path + name if path == "/" else f"{path}/{name}", child)


def _print_node(node: Node, depth: int) -> Iterator[str]:
    """Kafka's MetadataNode.print with the shell's printer: a directory's children by name, each `name:` with its
    contents two spaces further in; a leaf its text."""
    indent = "  " * depth
    if not node.is_directory:
        yield f"{indent}{node.text}"
        return
    for name in node.names():
        child = node.child(name)
        if child is not None:
            yield f"{indent}{name}:"
            yield from _print_node(child, depth + 1)


def run(args: Sequence[str]) -> int:
    return run_tool(PROG, DESCRIPTION, FLAGS, args, lambda options: run_shell(options, options.extra),
                    empty_is_help=False, extra_words=True)


def _interactive(shell: Shell) -> int:
    try:
        import readline  # noqa: F401 - line editing and history for input()
    except ImportError:
        pass
    shell.width = shutil.get_terminal_size((80, 24)).columns
    print("Loading...")
    print("Starting...")
    while True:
        try:
            line = input(">> ")
        except EOFError:
            print()
            return 0
        except KeyboardInterrupt:
            print()
            continue
        if not shell.run_line(line):
            return 0


def run_shell(options: Options, words: list[str]) -> int:
    snapshot, directory = options.get("snapshot"), options.get("directory")
    if (snapshot is None) == (directory is None):
        raise UsageError("give one of --snapshot/-s FILE or --directory/-d DIR")
    try:
        image = load_image(Path(snapshot) if snapshot else None, Path(directory) if directory else None)
    except ImageError as exc:
        raise ToolError(f"Error: {exc}") from None
    shell = Shell(root_node(image))
    command = options.get("command")
    if command is not None and words:
        raise UsageError("give the command either with --command or as words, not both")
    if command is None and not words:
        if not sys.stdin.isatty():  # commands piped in: run each line, as the interactive shell would
            for line in sys.stdin:
                if not shell.run_line(line.strip()):
                    break
            return 1 if shell.failed else 0
        return _interactive(shell)
    if command is not None:
        shell.run_line(command)
    else:
        shell.run(words[0], words[1:])
    return 1 if shell.failed else 0
