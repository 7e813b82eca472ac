"""KubeSphere's core from the bundle's images (ks-apiserver, ks-controller-manager, ks-console built from KubeSphere
3.4.1's sources) against a real kube-apiserver and etcd, in a network namespace of its own (kubesphere_core_netns.py:
ks-controller-manager listens on every address at fixed ports). What the kubesphere role's core check asks, ks-apiserver
reading its JWT secret from its environment as the role sets it, and the console behind the role's TLS front in headless
Chromium, without a lab cluster."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kube_apiserver import BUNDLE_DIR, bundle_problem

HERE = Path(__file__).resolve().parent
IMAGES = ("ks-apiserver", "ks-controller-manager", "ks-console")


@pytest.fixture(scope="module", name="seen")
def fixture_seen(tmp_path_factory):
    problem = bundle_problem()
    missing = [name for name in IMAGES if not (BUNDLE_DIR / "images" / f"{name}.tar").is_file()]
    if problem or missing:
        pytest.fail(problem or f"the bundle at {BUNDLE_DIR} has no {', '.join(missing)} image: run `make bundle` "
                    "(with KubeSphere's sources in shared/reference/kubesphere)", pytrace=False)
    for program in ("unshare", "node", "chromium"):
        if shutil.which(program) is None:
            pytest.fail(f"{program} is missing (tests/deps.sh installs it)", pytrace=False)
    work = tmp_path_factory.mktemp("kubesphere-core")
    shots = work / "screenshots"
    proc = subprocess.run(
        ["unshare", "--net", "--", "sh", "-c", 'ip link set lo up 2>/dev/null || busybox ip link set lo up; exec "$@"',
         "sh", sys.executable, str(HERE / "kubesphere_core_netns.py"), str(BUNDLE_DIR), str(work / "run"), str(shots)],
        capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["shots"] = shots
    result["logs"] = work / "run"
    return result


def test_ks_apiserver_answers_its_release(seen):
    assert seen["version"]["gitVersion"] == "v3.4.1"
    assert seen["version"]["gitCommit"] == "3e0493a1c5e1c4413a7b77e8b408d428220ed929"
    assert seen["version"]["gitTreeState"] == "clean"


def test_ks_controller_manager_reconciles_a_user_and_its_role_binding(seen):
    # the password given in clear is stored bcrypt-hashed, the user becomes Active
    assert seen["user"] == {"state": "Active", "password_prefix": "$2a$"}
    # the GlobalRoleBinding to platform-admin becomes a ClusterRoleBinding to cluster-admin
    assert seen["binding"] == {"role": "cluster-admin", "subjects": ["admin"]}


def test_the_oauth_endpoint_issues_a_token_for_the_password_only(seen):
    assert seen["token"] == 200
    assert seen["wrong_password"] in (400, 401)


def test_ks_apiserver_signs_with_the_jwt_secret_of_its_environment_not_of_its_configmap(seen):
    """The role's way: kubesphere-config names authentication.jwtSecret empty, the Deployment sets
    KUBESPHERE_AUTHENTICATION_JWTSECRET from the Secret; ks-apiserver 3.4.1 signs with that, and without it refuses to
    start (the file alone holds no secret)."""
    assert seen["token_signed_with_the_env_secret"] is True
    assert seen["token_signed_with_another_secret"] is False
    assert seen["without_jwt_env"]["rc"] != 0 and seen["without_jwt_env"]["refused"], seen["without_jwt_env"]


def test_the_console_logs_in_over_tls_and_shows_the_cluster_in_chromium(seen):
    assert seen["login_page"] == {"status": 200, "title": True}
    # the role's TLS front serves it with the certificate given, which a client without its CA refuses
    assert seen["login_page_tls"] == {"status": 200, "title": True}
    assert seen["tls_untrusted"] is None
    assert seen["browser"]["rc"] == 0, seen["browser"]["out"]
    assert "at https://" in seen["browser"]["out"], seen["browser"]["out"]
    for name in ("console-login.png", "console-overview.png", "console-nodes.png"):
        assert (seen["shots"] / name).read_bytes().startswith(b"\x89PNG"), name
