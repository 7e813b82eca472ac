"""Shared helpers of the controller-side integration tests (real ansible-playbook, ansible-galaxy, ansible-doc)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = ROOT / ".venv" / "bin"


def run(args: list[str], env: dict[str, str] | None = None, cwd: Path = ROOT, timeout: int = 300) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1", **(env or {})}
    return subprocess.run(args, cwd=cwd, env=full_env, capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture(name="tool")
def fixture_tool():
    def path(name: str) -> str:
        return str(VENV_BIN / name)
    return path
