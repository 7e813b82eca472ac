# -*- coding: utf-8 -*-
# Copyright: (c) 2026, slipway.cluster contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
# Private to the slipway.cluster collection: no compatibility promise outside it.
"""Server-side apply of a manifest file with kubectl, changed only when the cluster changes.

``kubectl apply --server-side`` reports every object as applied, changed or not. So the wanted
state is first compared with the live one by ``kubectl diff --server-side`` (a dry-run apply on
the server: exit 0 same, 1 different), and apply runs only when they differ. Needs nothing on the
node but kubectl, so it works on any control plane of an air-gapped cluster.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Sequence

# kubectl diff cannot compare an object whose namespace or kind the same manifest creates first:
# the apply will create them, so the manifest counts as different.
_NOT_THERE_YET = re.compile(
    r"namespaces? \"[^\"]+\" not found|no matches for kind|ensure CRDs are installed first"
    r"|the server could not find the requested resource",
    re.IGNORECASE,
)

SAME, DIFFERENT, UNKNOWN = "same", "different", "unknown"

# run(argv) -> (rc, stdout, stderr)
Runner = Callable[[Sequence[str]], "tuple[int, str, str]"]


class KubectlError(Exception):
    """kubectl failed; the message says which command and why."""


@dataclass
class ApplyResult:
    changed: bool
    state: str
    diff: str = ""
    applied: list[str] = field(default_factory=list)


def classify_diff(rc: int, stdout: str, stderr: str) -> str:
    """SAME, DIFFERENT, or UNKNOWN (the manifest creates what its objects need); raise on errors."""
    if rc == 0:
        return SAME
    if rc == 1:
        return DIFFERENT
    if _NOT_THERE_YET.search(stderr or ""):
        return UNKNOWN
    raise KubectlError(f"kubectl diff failed (exit {rc}): {(stderr or stdout).strip()}")


class KubectlApply:
    """Compare a manifest with the cluster and apply it when it differs (not in check mode)."""

    def __init__(self, run: Runner, kubectl: str, src: str, kubeconfig: str | None,
                 field_manager: str, force_conflicts: bool):
        self.run = run
        self.src = src
        self.base = [kubectl] + (["--kubeconfig", kubeconfig] if kubeconfig else [])
        self.apply_flags = ["--server-side", f"--field-manager={field_manager}"]
        if force_conflicts:
            self.apply_flags.append("--force-conflicts")

    def diff_argv(self) -> list[str]:
        return self.base + ["diff"] + self.apply_flags + ["-f", self.src]

    def apply_argv(self) -> list[str]:
        return self.base + ["apply"] + self.apply_flags + ["-f", self.src]

    def run_apply(self, check_mode: bool) -> ApplyResult:
        rc, out, err = self.run(self.diff_argv())
        state = classify_diff(rc, out, err)
        result = ApplyResult(changed=state != SAME, state=state, diff=out if state == DIFFERENT else "")
        if state == UNKNOWN:
            result.diff = f"# kubectl diff could not compare: {err.strip()}\n"
        if not result.changed or check_mode:
            return result
        rc, out, err = self.run(self.apply_argv())
        if rc != 0:
            raise KubectlError(f"kubectl apply failed (exit {rc}): {(err or out).strip()}")
        result.applied = [line for line in out.splitlines() if line.strip()]
        return result
