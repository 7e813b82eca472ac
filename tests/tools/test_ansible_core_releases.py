"""Every ansible-core release meta/runtime.yml admits is one the collection's tests run on (make ansible-core).

requires_ansible is a promise: each minor release from its floor to the newest the package index serves (2.21) has
its units in make ansible-core (make test: the pinned one's, the oldest's and the newest's), its sanity in
make ansible-core (make test: the newest's), on a Python that release supports (tests/ansible-core.sh).
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
# The newest ansible-core minor the package index serves (2.21.5 on 2026-12-02). A newer one is a release to add to
# ANSIBLE_CORE_RELEASES and to tests/ansible-core.sh, or a reason in the changelog to cap requires_ansible.
NEWEST_MINOR = (2, 21)


def minor(version: str) -> tuple[int, int]:
    parts = version.split(".")
    return int(parts[0]), int(parts[1])


def admitted_minors() -> list[tuple[int, int]]:
    runtime = yaml.safe_load((ROOT / "meta" / "runtime.yml").read_text())
    floor = re.fullmatch(r">=\s*(\d+\.\d+)(\.\d+)?", runtime["requires_ansible"].strip())
    assert floor, f"meta/runtime.yml: requires_ansible {runtime['requires_ansible']!r} is not a floor"
    first = minor(floor.group(1))
    return [(2, m) for m in range(first[1], NEWEST_MINOR[1] + 1)]


def pinned() -> tuple[int, int]:
    text = (ROOT / "requirements.txt").read_text()
    return minor(re.search(r"^ansible-core==(\S+)", text, re.MULTILINE).group(1))


def releases() -> list[str]:
    return re.search(r"^ANSIBLE_CORE_RELEASES\s*\?=\s*(.*)$", (ROOT / "Makefile").read_text(),
                     re.MULTILINE).group(1).split()


def test_each_admitted_minor_has_its_tests():
    tested = {minor(v) for v in releases()} | {pinned()}
    missing = [f"{a}.{b}" for a, b in admitted_minors() if (a, b) not in tested]
    assert not missing, f"requires_ansible admits ansible-core {missing}, which make ansible-core does not test"
    assert len(releases()) == len({minor(v) for v in releases()}), "one release per minor in ANSIBLE_CORE_RELEASES"
    assert pinned() not in {minor(v) for v in releases()}, "the pinned release already runs as make sanity/units"


def test_make_test_runs_the_units_of_both_ends_and_the_sanity_of_the_newest():
    run_all = (ROOT / "tests" / "run-all.sh").read_text()
    line = re.search(r'^\s*"\$make" --no-print-directory ansible-core (.*)$', run_all, re.MULTILINE)
    assert line, "tests/run-all.sh runs make ansible-core in lane 1"
    units = re.search(r'ANSIBLE_CORE_RELEASES="([^"]*)"', line.group(1)).group(1).split()
    sanity = re.search(r'ANSIBLE_CORE_SANITY="([^"]*)"', line.group(1)).group(1).split()
    ordered = sorted(releases(), key=lambda v: tuple(map(int, v.split("."))))
    assert minor(ordered[0]) == admitted_minors()[0] and minor(ordered[-1]) == admitted_minors()[-1]
    assert units == [ordered[0], ordered[-1]], "make test runs the units of the oldest and the newest release"
    assert sanity == [ordered[-1]]


def test_the_script_knows_each_release_and_its_python():
    script = (ROOT / "tests" / "ansible-core.sh").read_text()
    cases = re.findall(r"^\s*((?:\d+\.\d+(?: \| )?)+)\)", script, re.MULTILINE)
    known = {minor(v + ".0") for case in cases for v in case.split(" | ")}
    assert set(admitted_minors()) <= known
    # Python 3.12 or newer for 2.20 and later: Debian 13's, from the trixie root file system.
    trixie = [case for case in cases if "2.20" in case][0]
    assert "2.21" in trixie and "2.19" not in trixie


def test_scenarios_of_make_test_run_from_the_oldest_and_the_newest_release():
    scenarios = re.search(r"^SCENARIOS\s*\?=\s*(.*)$", (ROOT / "Makefile").read_text(), re.MULTILINE).group(1).split()
    pinned_to = {version: name for name, _at, version in (s.partition("@") for s in scenarios) if version}
    for name in (s.partition("@")[0] for s in scenarios):
        assert (ROOT / "molecule" / name / "molecule.yml").is_file(), f"SCENARIOS names {name}, which is no scenario"
    ordered = sorted(releases(), key=lambda v: tuple(map(int, v.split("."))))
    oldest, newest = ordered[0], ordered[-1]
    assert oldest in pinned_to, f"no scenario of make test runs from ansible-core {oldest}"
    assert newest in pinned_to, f"no scenario of make test runs from ansible-core {newest}"
    # The newest's is a cluster: its converge is site.yml.
    converge = (ROOT / "molecule" / pinned_to[newest] / "converge.yml").read_text()
    assert "import_playbook: ../../playbooks/site.yml" in converge, f"{pinned_to[newest]} makes no cluster"
    script = (ROOT / "tests" / "ansible-core.sh").read_text()
    molecule = script[script.index('if [ "$command" = molecule ]'):script.index("\nfi\n")]
    cases = re.findall(r"^\s*((?:\d+\.\d+(?: \| )?)+)\)", molecule, re.MULTILINE)
    known = {minor(v + ".0") for case in cases for v in case.split(" | ")}
    assert {minor(oldest), minor(newest)} <= known, "tests/ansible-core.sh molecule knows both releases"
    # Each run fails on a deprecation warning of the collection's (tests/deprecations.py).
    assert '"$root/tests/deprecations.py" "$root" "$output" "${steps[@]}" || rc=1' in molecule
