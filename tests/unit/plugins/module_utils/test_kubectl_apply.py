# Unit tests of the diff-then-apply logic of kubectl_apply, with a fake kubectl.
from __future__ import annotations

import pytest

from ansible_collections.slipway.cluster.plugins.module_utils import _kubectl_apply as ka

DIFF_OUT = "diff -u -N /tmp/LIVE/apps.v1.DaemonSet.x /tmp/MERGED/apps.v1.DaemonSet.x\n-  replicas: 1\n+  replicas: 2\n"


class FakeKubectl:
    """Answers diff and apply with the given (rc, stdout, stderr) and records every call."""

    def __init__(self, diff, apply=(0, "daemonset.apps/x serverside-applied\n", "")):
        self.answers = {"diff": diff, "apply": apply}
        self.calls = []

    def __call__(self, argv):
        self.calls.append(list(argv))
        verb = "diff" if "diff" in argv else "apply"
        return self.answers[verb]

    def verbs(self):
        return ["diff" if "diff" in argv else "apply" for argv in self.calls]


def applier(fake, force=False, kubeconfig="/etc/kubernetes/admin.conf"):
    return ka.KubectlApply(fake, "/usr/local/bin/kubectl", "/tmp/m.yml", kubeconfig, "slipway", force)


@pytest.mark.parametrize("rc,stderr,state", [
    (0, "", ka.SAME),
    (1, "", ka.DIFFERENT),
    (1, "exit status 1", ka.DIFFERENT),
    (2, 'Error from server (NotFound): namespaces "kube-flannel" not found', ka.UNKNOWN),
    (1 + 1, 'error: resource mapping not found for name: "x" namespace: "" from "m.yml": no matches for kind '
            '"Installation" in version "operator.tigera.io/v1"\nensure CRDs are installed first', ka.UNKNOWN),
])
def test_classify(rc, stderr, state):
    assert ka.classify_diff(rc, "", stderr) == state


def test_classify_raises_on_other_errors():
    with pytest.raises(ka.KubectlError, match="exit 2.*Unauthorized"):
        ka.classify_diff(2, "", "error: You must be logged in to the server (Unauthorized)")


def test_same_is_not_applied():
    fake = FakeKubectl(diff=(0, "", ""))
    result = applier(fake).run_apply(check_mode=False)
    assert (result.changed, result.state, result.applied, fake.verbs()) == (False, ka.SAME, [], ["diff"])


def test_different_is_applied_with_the_same_flags():
    fake = FakeKubectl(diff=(1, DIFF_OUT, ""))
    result = applier(fake, force=True).run_apply(check_mode=False)
    assert (result.changed, result.state, result.diff) == (True, ka.DIFFERENT, DIFF_OUT)
    assert result.applied == ["daemonset.apps/x serverside-applied"]
    flags = ["--server-side", "--field-manager=slipway", "--force-conflicts", "-f", "/tmp/m.yml"]
    base = ["/usr/local/bin/kubectl", "--kubeconfig", "/etc/kubernetes/admin.conf"]
    assert fake.calls == [base + ["diff"] + flags, base + ["apply"] + flags]


def test_check_mode_only_diffs():
    fake = FakeKubectl(diff=(1, DIFF_OUT, ""))
    result = applier(fake).run_apply(check_mode=True)
    assert (result.changed, result.applied, fake.verbs()) == (True, [], ["diff"])


def test_unknown_is_applied_and_says_why():
    fake = FakeKubectl(diff=(2, "", 'Error from server (NotFound): namespaces "kube-flannel" not found'))
    result = applier(fake).run_apply(check_mode=False)
    assert (result.changed, result.state, fake.verbs()) == (True, ka.UNKNOWN, ["diff", "apply"])
    assert "kube-flannel" in result.diff


def test_failed_apply_raises():
    fake = FakeKubectl(diff=(1, DIFF_OUT, ""), apply=(1, "", "Apply failed with 1 conflict"))
    with pytest.raises(ka.KubectlError, match="apply failed.*conflict"):
        applier(fake).run_apply(check_mode=False)


def test_no_kubeconfig_leaves_kubectl_default():
    fake = FakeKubectl(diff=(0, "", ""))
    applier(fake, kubeconfig=None).run_apply(check_mode=False)
    assert "--kubeconfig" not in fake.calls[0]
