"""docs/performance.md, the reference, against docs/measurements/, the record: every number the reference quotes is
in the record entry it names.

The reference is cut into units: a paragraph, a list item, a table row (a row without a record link of its own
takes the links of the paragraph just above its table, its caption). A unit that holds a number names at least one
entry, as a Markdown link to `measurements/YYYY-MM.md#ANCHOR`; the entry is the record's text from
`<a id="ANCHOR"></a>` to the next anchor. Every number of the unit with its unit if it has one (158 s, 60 %; outside code spans and link
targets), every date (YYYY-MM-DD), time of day (HH:MM) and commit id must occur in one of the entries the unit names. So a figure changed
in the reference without an entry of the record that holds it fails here. The table of kubespray's settings is the
compare harness's own (tests/tools/test_compare.py checks it against the code) and holds settings, not figures.
Only files are read.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
REFERENCE = DOCS / "performance.md"
RECORD = DOCS / "measurements"

ANCHOR = re.compile(r'<a id="([a-z0-9-]+)"></a>')
LINK = re.compile(r"\[([^\]]*)\]\(([^)\s]*)\)")
RECORD_LINK = re.compile(r"^(?:\.\./docs/|docs/|\.\./)?measurements/(\d{4}-\d{2})\.md#([a-z0-9-]+)$")
CODE_SPAN = re.compile(r"`[^`]*`")
DATE = re.compile(r"(?<![\w-])\d{4}-\d{2}-\d{2}(?![\w-])")
TIME = re.compile(r"(?<![\w:.,])\d{1,2}:\d{2}(?![\w:])")
COMMIT = re.compile(r"(?<![\w-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}(?![\w-])")
DURATION = re.compile(r"(?<![\w.,:-])\d+m\d+s(?![\w])")
# A number with its unit, if it has one: 158 s is not 158 task results.
NUMBER = re.compile(r"(?<![\w.,:-])\d+(?:[.,]\d+)*(?: ?(?:ms|min|s|h|%|GiB|GB|MB|Gi)(?![\w]))?(?![\w])")
SETTINGS_HEADER = "| setting | value | why |"


def record_entries():
    """{(month, anchor): the entry's text}, over every file of the record."""
    entries = {}
    for path in sorted(RECORD.glob("*.md")):
        text = path.read_text(encoding="utf-8")
        marks = list(ANCHOR.finditer(text))
        for index, mark in enumerate(marks):
            end = marks[index + 1].start() if index + 1 < len(marks) else len(text)
            key = (path.stem, mark.group(1))
            assert key not in entries, f"{path.name}: anchor {mark.group(1)} twice"
            entries[key] = text[mark.end():end]
    return entries


def units(text):
    """The reference's units, outside fenced code: (first line number, text)."""
    found, block, start, fenced = [], [], 0, False
    lines = text.splitlines()

    def close():
        if not block:
            return
        if block[0].startswith("|"):
            caption = found[-1][1] if found and not found[-1][1].startswith("|") else ""
            if block[0].strip() != SETTINGS_HEADER:
                for offset, row in enumerate(block):
                    own = [target for _text, target in LINK.findall(row)]
                    found.append((start + offset, row if own else row + "\n" + caption_links(caption)))
            return
        item, item_start = [], start
        for offset, line in enumerate(block):
            if line.startswith(("- ", "* ")) and item:
                found.append((item_start, "\n".join(item)))
                item, item_start = [], start + offset
            item.append(line)
        found.append((item_start, "\n".join(item)))

    for number, line in enumerate(lines, 1):
        if line.startswith("```"):
            close()
            block, fenced = [], not fenced
            continue
        if fenced:
            continue
        if not line.strip():
            close()
            block = []
            continue
        if not block:
            start = number
        block.append(line)
    close()
    return found


def caption_links(caption):
    """Only the links of a table's caption, for its rows."""
    return " ".join(f"[{label}]({target})" for label, target in LINK.findall(caption))


def quoted(unit):
    """What a unit quotes that its entries must hold: numbers, dates, times of day, commit ids."""
    text = CODE_SPAN.sub(" ", unit)
    text = LINK.sub(lambda link: f" {link.group(1)} ", text).replace("**", "")
    dates = DATE.findall(text)
    text = DATE.sub(" ", text)
    times = TIME.findall(text)
    text = TIME.sub(" ", text)
    commits = COMMIT.findall(text)
    text = COMMIT.sub(" ", text)
    durations = DURATION.findall(text)
    return dates + times + commits + durations + NUMBER.findall(DURATION.sub(" ", text))


def holds(entry, token):
    """Whether the entry holds the token as a whole number, date or id (18 is not in 118 s or 1.18)."""
    return re.search(rf"(?<![\w.,:-]){re.escape(token)}(?![\w]|[.,:]\d)", entry.replace("**", "")) is not None


def unit_problems(text, entries):
    problems = []
    for line, unit in units(text):
        links = [target for _label, target in LINK.findall(unit)]
        named = []
        for target in links:
            match = RECORD_LINK.match(target)
            if match:
                key = (match.group(1), match.group(2))
                if key not in entries:
                    problems.append(f"line {line}: {target} names no entry of the record")
                else:
                    named.append(entries[key])
        tokens = quoted(unit)
        if tokens and not named:
            problems.append(f"line {line}: quotes {', '.join(tokens)} and names no record entry")
            continue
        missing = [token for token in tokens if not any(holds(entry, token) for entry in named)]
        if missing:
            problems.append(f"line {line}: {', '.join(missing)} not in the record entry it names")
    return problems


def test_every_number_of_the_reference_is_in_the_record_entry_it_names():
    entries = record_entries()
    assert entries
    assert unit_problems(REFERENCE.read_text(encoding="utf-8"), entries) == []


@pytest.mark.parametrize("changed, expected", [
    ("| no-op rerun | 18 s | [2026-11-28, 186ac2a](measurements/2026-11.md#bench-2026-11-28-add7109) |", []),
    ("| no-op rerun | 17 s | [2026-11-28, 186ac2a](measurements/2026-11.md#bench-2026-11-28-add7109) |",
     ["line 1: 17 s not in the record entry it names"]),
    ("| no-op rerun | 158 s | [2026-11-28, 186ac2a](measurements/2026-11.md#bench-2026-11-28-add7109) |",
     ["line 1: 158 s not in the record entry it names"]),
    ("| no-op rerun | 18 s | [2026-11-29, 186ac2a](measurements/2026-11.md#bench-2026-11-28-add7109) |",
     ["line 1: 2026-11-29 not in the record entry it names"]),
    ("| no-op rerun | 18 s | [2026-11-28, 186ac2b](measurements/2026-11.md#bench-2026-11-28-add7109) |",
     ["line 1: 186ac2b not in the record entry it names"]),
    ("| no-op rerun | 18 s | 2026-11-28 |", ["line 1: quotes 2026-11-28, 18 s and names no record entry"]),
    ("| no-op rerun | 18 s | [x](measurements/2026-11.md#no-such-entry) |",
     ["line 1: measurements/2026-11.md#no-such-entry names no entry of the record",
      "line 1: quotes 18 s and names no record entry"]),
    ("The rerun takes 118 s ([record](measurements/2026-11.md#bench-2026-11-28-add7109)).",
     ["line 1: 118 s not in the record entry it names"]),
])
def test_a_figure_changed_without_its_entry_is_found(changed, expected):
    assert unit_problems(changed + "\n", record_entries()) == expected


def test_a_table_row_takes_the_links_of_its_caption_and_the_settings_table_is_left_out():
    text = ("Quiet, [2026-11-28, c18bdb5](measurements/2026-11.md#compare-2026-11-28-c18bdb5):\n\n"
            "| step | slipway |\n| --- | ---: |\n| no-op rerun | 31 s |\n| reset | 977 s |\n\n"
            "| setting | value | why |\n| --- | --- | --- |\n| `x` | `300` | 300 tries |\n")
    assert unit_problems(text, record_entries()) == ["line 6: 977 s not in the record entry it names"]


def test_every_link_into_the_record_names_an_entry():
    entries = record_entries()
    pages = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
    missing = []
    for page in pages:
        for _label, target in LINK.findall(page.read_text(encoding="utf-8")):
            if "measurements/" not in target:
                continue
            match = RECORD_LINK.match(target)
            whole_file = re.fullmatch(r"measurements/(\d{4}-\d{2})\.md", target)
            if whole_file and (RECORD / f"{whole_file.group(1)}.md").is_file():
                continue
            if not match or (match.group(1), match.group(2)) not in entries:
                missing.append(f"{page.relative_to(ROOT)}: {target}")
    assert missing == []


def test_each_entry_is_in_the_file_of_its_month():
    misplaced = [f"{month}.md#{anchor}" for month, anchor in record_entries()
                 for date in re.findall(r"\d{4}-\d{2}-\d{2}", anchor) if not date.startswith(month + "-")]
    assert misplaced == []
