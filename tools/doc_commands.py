#!/usr/bin/env python
"""The `ansible-playbook` commands README.md and docs/ show, as a user would copy them, and how to run one.

    doc_commands.py list                   every documented command: where it is, its form, its text
    doc_commands.py forms                  the distinct forms (playbook and option names) and where each is shown

A command is read from a fenced code block (one line, with backslash continuations, comments dropped) or from an
inline code span. Optional parts written in brackets are both forms: `certs.yml -i INVENTORY [-e certs_action=renew]`
is shown with and without the option; a bracket inside a value (`NAME[,NAME]`) is dropped. A command's *form* is its
playbook and the names of its options (`-i`, `-e certs_action`, `--limit`, `--check`): two commands that differ only
in their values (`INVENTORY` or `inventories/mycluster/hosts.yml`) have the same form.

The Molecule scenarios run such a command exactly as written, from the repository's root, with the placeholders
filled with the lab's values (molecule/resources/files/stage.py --documented); tests/tools/test_doc_commands.py checks
that every documented form of a day-2 playbook is run by some scenario.
"""
from __future__ import annotations

import argparse
import dataclasses
import re
import shlex
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = ("ansible-playbook", ".venv/bin/ansible-playbook")
# Options with a value, as ansible-playbook takes them.
VALUED = {"-i", "--inventory", "-e", "--extra-vars", "-l", "--limit", "-t", "--tags", "--skip-tags", "-u", "--user"}
CANONICAL = {"--inventory": "-i", "--extra-vars": "-e", "-l": "--limit", "-t": "--tags"}
# Values that are written for the reader to replace.
PLACEHOLDER = re.compile(r"^[A-Z][A-Z_]*$|<[^>]+>|^inventory$|mycluster|^~/")


class CommandError(Exception):
    """A documented command that cannot be read or filled."""


@dataclasses.dataclass(frozen=True)
class Command:
    source: str  # file:line
    text: str  # as written, brackets resolved to one form

    @property
    def argv(self) -> list[str]:
        return shlex.split(self.text)

    @property
    def playbook(self) -> str:
        return playbook_of(self.argv)

    @property
    def form(self) -> str:
        return form_of(self.argv)


def playbook_of(argv: list[str]) -> str:
    skip = False
    for token in argv[1:]:
        if skip:
            skip = False
            continue
        if token in VALUED:
            skip = True
            continue
        if not token.startswith("-"):
            return token
    raise CommandError(f"no playbook in {shlex.join(argv)}")


def options_of(argv: list[str]) -> list[tuple[str, str | None]]:
    """(option, value) pairs; `-e key=value` gives ('-e key', 'value')."""
    found: list[tuple[str, str | None]] = []
    tokens = iter(argv[1:])
    for token in tokens:
        if not token.startswith("-"):
            continue
        name, _sep, inline = token.partition("=") if token.startswith("--") else (token, "", "")
        name = CANONICAL.get(name, name)
        value: str | None = inline or None
        if name in VALUED or CANONICAL.get(name, name) in {CANONICAL.get(v, v) for v in VALUED}:
            if value is None:
                value = next(tokens, None)
                if value is None:
                    raise CommandError(f"{token} has no value in {shlex.join(argv)}")
        if name == "-e" and value is not None and "=" in value:
            key, _sep, value = value.partition("=")
            name = f"-e {key}"
        found.append((name, value))
    return found


def form_of(argv: list[str]) -> str:
    return " ".join([playbook_of(argv), *sorted({name for name, _value in options_of(argv)})])


def _variants(text: str) -> list[str]:
    """Both forms of every optional option `[-x ...]`; a bracket inside a value (`NAME[,NAME]`) dropped."""
    text = re.sub(r"(?<=[^\s\[])\[[^\]\s]*\]", "", text)
    match = re.search(r"\s\[(-[^\]]*)\]", text)
    if not match:
        return [" ".join(text.split())]
    without = text[:match.start()] + text[match.end():]
    with_it = text[:match.start()] + " " + match.group(1) + text[match.end():]
    return _variants(without) + _variants(with_it)


def _is_command(text: str) -> bool:
    words = text.split()
    return bool(words) and words[0] in PROGRAMS and any(w.endswith(".yml") or w.startswith("slipway.cluster.") for w in words)


def commands_in(text: str, name: str) -> list[Command]:
    """Every ansible-playbook command in one Markdown text."""
    found: list[Command] = []
    lines = text.splitlines()
    in_block = False
    index = 0
    while index < len(lines):
        line = lines[index]
        number = index + 1
        index += 1
        if line.lstrip().startswith("```"):
            in_block = not in_block
            continue
        if in_block:
            joined = line
            while joined.rstrip().endswith("\\") and index < len(lines):
                joined = joined.rstrip()[:-1] + " " + lines[index].strip()
                index += 1
            joined = re.sub(r"\s#.*$", "", joined).strip()
            if _is_command(joined):
                found.extend(Command(f"{name}:{number}", variant) for variant in _variants(joined))
            continue
        for span in re.findall(r"`([^`]+)`", line):
            if _is_command(span.strip()):
                found.extend(Command(f"{name}:{number}", variant) for variant in _variants(span.strip()))
    return found


def documented_commands(root: Path = ROOT) -> list[Command]:
    files = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    found: list[Command] = []
    for path in files:
        found.extend(commands_in(path.read_text(encoding="utf-8"), str(path.relative_to(root))))
    return found


def fill(text: str, inventory: str, values: Mapping[str, str], program: str = "ansible-playbook") -> list[str]:
    """The argv of a documented command with its placeholders filled: the inventory, each `-e key=PLACEHOLDER` and
    `--limit PLACEHOLDER` from ``values`` (keyed by the extra var's name, or `--limit`); a literal value (renew, yes,
    1.37.1) is kept unless ``values`` names it. A placeholder left unfilled is an error."""
    argv = shlex.split(text)
    if argv[0] not in PROGRAMS:
        raise CommandError(f"not an ansible-playbook command: {text}")
    out = [program]
    tokens = iter(argv[1:])
    for token in tokens:
        if token in ("-i", "--inventory"):
            next(tokens, None)
            out += [token, inventory]
        elif token in ("-e", "--extra-vars"):
            pair = next(tokens, "")
            key, _sep, value = pair.partition("=")
            if key in values:
                value = values[key]
            elif PLACEHOLDER.search(value):
                raise CommandError(f"{text}: give a value for {key} (now {value})")
            out += [token, f"{key}={value}"]
        elif token in ("--limit", "-l"):
            value = next(tokens, "")
            if "--limit" in values:
                value = values["--limit"]
            elif PLACEHOLDER.search(value):
                raise CommandError(f"{text}: give a value for --limit (now {value})")
            out += [token, value]
        else:
            out.append(token)
    return out


def forms(commands: Iterable[Command]) -> dict[str, list[Command]]:
    by_form: dict[str, list[Command]] = {}
    for command in commands:
        by_form.setdefault(command.form, []).append(command)
    return by_form


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("what", choices=("list", "forms"))
    args = parser.parse_args(argv)
    commands = documented_commands()
    if args.what == "list":
        for command in commands:
            print(f"{command.source}\t{command.form}\t{command.text}")
    else:
        for form, shown in sorted(forms(commands).items()):
            print(f"{form}\t{', '.join(c.source for c in shown)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
