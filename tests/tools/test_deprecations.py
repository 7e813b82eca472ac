"""tests/deprecations.py: a scenario run from one ansible-core release fails on a deprecation warning of ours.

The samples are ansible-core's own output: 2.21.5's (printed by its ansible-playbook on Debian 13's Python for a
playbook that reads an injected fact), as Molecule frames and colours it, and 2.16's one-line form.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SPEC = importlib.util.spec_from_file_location("deprecations", ROOT / "tests" / "deprecations.py")
deprecations = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(deprecations)

CHECKOUT = "/work/ci"
INJECTED = """TASK [ansible.builtin.debug] ***************************************************
[WARNING]: Deprecation warnings can be disabled by setting `deprecation_warnings=False` in ansible.cfg.
[DEPRECATION WARNING]: INJECT_FACTS_AS_VARS default to `True` is deprecated, top-level facts will not be auto \
injected after the change. This feature will be removed from ansible-core version 2.24.
Origin: {origin}:5:14

3   tasks:
4     - ansible.builtin.debug:
5         msg: "{{{{ ansible_hostname }}}}"
               ^ column 14

Use `ansible_facts["fact_name"]` (no `ansible_` prefix) instead.

ok: [localhost] => {{
    "msg": "node"
}}
"""


def framed(text: str) -> str:
    """As Molecule shows a playbook's output: each line in its frame, in colour."""
    return "".join(f"  \x1b[2m\u2502\x1b[0m \x1b[33m{line}\x1b[0m\n" for line in text.splitlines())


def run(tmp_path, text: str, capsys) -> tuple[int, str, str]:
    output = tmp_path / "molecule.log"
    output.write_text(text, encoding="utf-8")
    status = deprecations.main(["deprecations.py", CHECKOUT, str(output)])
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_a_warning_from_a_role_of_the_checkout_fails_and_is_shown_with_its_origin(tmp_path, capsys):
    status, out, err = run(tmp_path, INJECTED.format(origin=f"{CHECKOUT}/roles/preinstall/tasks/main.yml"), capsys)
    assert status == 1
    assert "1 of this collection's, 0 of others" in out
    assert f"Origin: {CHECKOUT}/roles/preinstall/tasks/main.yml:5:14" in err


def test_molecule_s_frame_and_colours_do_not_hide_it(tmp_path, capsys):
    text = framed(INJECTED.format(origin=f"{CHECKOUT}/molecule/vip/verify.yml"))
    status, out, err = run(tmp_path, text, capsys)
    assert status == 1
    assert "1 of this collection's" in out
    assert f"Origin: {CHECKOUT}/molecule/vip/verify.yml:5:14" in err
    # The warning's text ends at its blank line: the task output after it is not part of it.
    assert "column 14" not in err


def test_a_warning_naming_the_collection_is_ours(tmp_path, capsys):
    text = ("[DEPRECATION WARNING]: slipway.cluster.ks_config uses a deprecated option. This feature will be removed "
            "in version 2.0.0.\n")
    assert run(tmp_path, text, capsys)[0] == 1


def test_warnings_of_ansible_core_or_of_other_collections_are_counted_not_failed(tmp_path, capsys):
    other = INJECTED.format(origin=f"{CHECKOUT}/.venv/lib/python3.11/site-packages/ansible_collections/"
                                   "community/crypto/plugins/module_utils/x.py")
    core = ("[DEPRECATION WARNING]: ANSIBLE_COLLECTIONS_PATHS option, does not fit var naming standard, use the "
            "singular form ANSIBLE_COLLECTIONS_PATH instead. This feature will be removed from ansible-core in "
            "version 2.19.\n")
    status, out, err = run(tmp_path, framed(other) + core, capsys)
    assert status == 0
    assert "0 of this collection's, 2 of others" in out
    assert "ANSIBLE_COLLECTIONS_PATHS option" in out
    assert err == ""


def test_a_path_outside_the_checkout_that_begins_like_it_is_not_ours(tmp_path, capsys):
    text = INJECTED.format(origin=f"{CHECKOUT}-other/roles/x/tasks/main.yml")
    assert run(tmp_path, text, capsys)[0] == 0


def test_no_warning_passes(tmp_path, capsys):
    status, out, _err = run(tmp_path, framed("PLAY RECAP\nlocalhost : ok=1 changed=0\n"), capsys)
    assert status == 0
    assert "0 of this collection's, 0 of others" in out


def test_a_warning_of_ours_in_a_step_s_log_fails(tmp_path, capsys):
    output, step = tmp_path / "molecule.log", tmp_path / "01-site-hardens.log"
    output.write_text(framed("PLAY RECAP\n"), encoding="utf-8")
    step.write_text(INJECTED.format(origin=f"{CHECKOUT}/roles/etcd/tasks/main.yml"), encoding="utf-8")
    assert deprecations.main(["deprecations.py", CHECKOUT, str(output), str(step)]) == 1
    assert f"Origin: {CHECKOUT}/roles/etcd/tasks/main.yml:5:14" in capsys.readouterr().err
