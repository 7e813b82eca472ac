# Unit tests of site.yml's reconfiguration decisions and of the encryption key rotation's steps.
from __future__ import annotations

import pytest

from ansible_collections.slipway.cluster.plugins.module_utils._drift import cluster_configuration_drift, settings_drift, static_pod_drift
from ansible_collections.slipway.cluster.plugins.module_utils._encryption import encryption_config_keys, encryption_keys, rotation_plan

AUDIT = {"name": "audit-log", "hostPath": "/var/log/kubernetes/audit", "mountPath": "/var/log/kubernetes/audit",
         "readOnly": False, "pathType": "DirectoryOrCreate"}


def pod(command, volumes=(), mounts=()):
    return {"spec": {"containers": [{"command": list(command), "volumeMounts": list(mounts)}],
                     "volumes": list(volumes)}}


def encryption(*names, kind="aescbc"):
    return {"apiVersion": "apiserver.config.k8s.io/v1", "kind": "EncryptionConfiguration",
            "resources": [{"resources": ["secrets"],
                           "providers": [{kind: {"keys": [{"name": n, "secret": "S-" + n} for n in names]}},
                                         {"identity": {}}]}]}


class TestSettingsDrift:
    def test_subset_holds(self):
        actual = {"seccompDefault": True, "podPidsLimit": 4096, "cgroupDriver": "systemd",
                  "authentication": {"anonymous": {"enabled": False}, "webhook": {"enabled": True, "cacheTTL": "2m0s"}}}
        wanted = {"seccompDefault": True, "podPidsLimit": 4096, "authentication": {"anonymous": {"enabled": False}}}
        assert settings_drift(actual, wanted) == []

    def test_missing_and_different(self):
        actual = {"seccompDefault": False, "authentication": {"anonymous": {"enabled": True}}}
        wanted = {"seccompDefault": True, "serverTLSBootstrap": True, "authentication": {"anonymous": {"enabled": False}}}
        assert settings_drift(actual, wanted) == [
            "authentication.anonymous.enabled: True != False",
            "seccompDefault: False != True",
            "serverTLSBootstrap: missing != True",
        ]

    @pytest.mark.parametrize("actual, wanted, same", [
        ("5m0s", "5m", True), ("300s", "5m", True), ("1h30m0s", "90m", True), ("0s", "5m", False),
        ("4h0m0s", "4h", True), ("5m", "5", False),
    ])
    def test_durations(self, actual, wanted, same):
        assert (settings_drift({"t": actual}, {"t": wanted}) == []) is same

    def test_lists_compare_whole(self):
        assert settings_drift({"tlsCipherSuites": ["A", "B"]}, {"tlsCipherSuites": ["A", "B"]}) == []
        assert settings_drift({"tlsCipherSuites": ["A"]}, {"tlsCipherSuites": ["A", "B"]}) != []

    def test_zero_values_kubeadm_leaves_out(self):
        assert settings_drift({"authentication": {}}, {"readOnlyPort": 0, "authentication": {"anonymous": {}}}) == []
        assert settings_drift({}, {"readOnlyPort": 10255}) == ["readOnlyPort: missing != 10255"]
        assert settings_drift({}, {"authentication": {"anonymous": {"enabled": True}}}) == [
            "authentication: missing != {'anonymous': {'enabled': True}}"]

    def test_not_a_mapping(self):
        assert settings_drift(None, {"a": 1}) == [".: None != {'a': 1}"]


class TestStaticPodDrift:
    WANTED = {"kube-apiserver": {"args": {"profiling": "false", "audit-log-maxage": 30}, "volumes": [AUDIT]},
              "kube-scheduler": {"args": {"profiling": "false"}}}

    def test_hardened_manifest_holds_everything(self):
        manifests = {
            "kube-apiserver": pod(["kube-apiserver", "--advertise-address=10.0.0.1", "--profiling=false",
                                   "--audit-log-maxage=30"],
                                  [{"name": "audit-log", "hostPath": {"path": "/var/log/kubernetes/audit"}}],
                                  [{"name": "audit-log", "mountPath": "/var/log/kubernetes/audit"}]),
            "kube-scheduler": pod(["kube-scheduler", "--profiling=false"]),
        }
        assert static_pod_drift(manifests, self.WANTED) == {}

    def test_kubeadm_defaults_differ(self):
        manifests = {"kube-apiserver": pod(["kube-apiserver", "--profiling=true"]),
                     "kube-scheduler": pod(["kube-scheduler", "--bind-address=127.0.0.1"])}
        assert static_pod_drift(manifests, self.WANTED) == {
            "kube-apiserver": ["--audit-log-maxage missing", "--profiling=true, not false",
                               "volume audit-log (/var/log/kubernetes/audit) not mounted"],
            "kube-scheduler": ["--profiling missing"],
        }

    def test_missing_manifest_is_left_out(self):
        assert static_pod_drift({"kube-scheduler": None}, self.WANTED) == {}

    def test_volume_mounted_elsewhere(self):
        manifests = {"kube-scheduler": pod(["kube-scheduler", "--profiling=false"]),
                     "kube-apiserver": pod(["kube-apiserver", "--profiling=false", "--audit-log-maxage=30"],
                                           [{"name": "audit-log", "hostPath": {"path": "/var/log/kubernetes/audit"}}],
                                           [{"name": "audit-log", "mountPath": "/elsewhere"}])}
        assert list(static_pod_drift(manifests, self.WANTED)) == ["kube-apiserver"]


class TestClusterConfigurationDrift:
    WANTED = {"apiServer": {"args": {"profiling": "false"}, "volumes": [AUDIT]},
              "scheduler": {"args": {"profiling": "false"}}}

    def test_v1beta4_holds(self):
        config = {"apiServer": {"extraArgs": [{"name": "profiling", "value": "false"}],
                                "extraVolumes": [dict(AUDIT)]},
                  "scheduler": {"extraArgs": [{"name": "profiling", "value": "false"}]}}
        assert cluster_configuration_drift(config, self.WANTED) == []

    def test_v1beta3_mapping_and_gaps(self):
        config = {"apiServer": {"extraArgs": {"profiling": "true"}}, "scheduler": {}}
        assert cluster_configuration_drift(config, self.WANTED) == [
            "apiServer --profiling: true != false",
            "apiServer volume audit-log missing",
            "scheduler --profiling: missing != false",
        ]

    def test_no_configuration(self):
        assert cluster_configuration_drift(None, self.WANTED) == ["no ClusterConfiguration"]


class TestRotation:
    CPS = ("cp1", "cp2", "cp3")

    def configs(self, *per_host):
        return dict(zip(self.CPS, per_host))

    def test_names(self):
        assert encryption_keys(encryption("b", "a")) == ["b", "a"]
        assert encryption_keys(None) == []
        assert encryption_keys({"resources": [{"resources": ["configmaps"], "providers": [{"aescbc": {}}]}]}) == []

    def test_fresh_rotation(self):
        plan = rotation_plan(self.configs(*[encryption("old")] * 3), "old", "", "new")
        assert plan["problems"] == [] and plan["pending"] and plan["rewrite"] and plan["name"] == "new"
        assert plan["provider"] == "aescbc"
        assert plan["add"] == {h: ["old", "new"] for h in self.CPS}
        assert plan["promote"] == {h: ["new", "old"] for h in self.CPS}
        assert plan["remove"] == {h: ["new"] for h in self.CPS}

    def test_generated_name_when_none_asked(self):
        plan = rotation_plan(self.configs(*[encryption("old")] * 3), "old", "", "", "key-20261125")
        assert plan["name"] == "key-20261125" and plan["pending"]

    def test_done_with_the_same_name_is_nothing_to_do(self):
        plan = rotation_plan(self.configs(*[encryption("new")] * 3), "new", "", "new", "key-fresh")
        assert plan["problems"] == [] and not plan["pending"] and not plan["rewrite"]

    @pytest.mark.parametrize("state, rewritten", [
        ((["old", "new"], ["old"], ["old"]), "old"),            # stopped while adding
        ((["new", "old"], ["old", "new"], ["old", "new"]), "old"),  # stopped while promoting
        ((["new", "old"], ["new", "old"], ["new", "old"]), "old"),  # stopped before the rewrite
        ((["new"], ["new", "old"], ["new", "old"]), "new"),      # stopped while removing
    ])
    def test_resume_converges_to_the_same_steps(self, state, rewritten):
        plan = rotation_plan(self.configs(*(encryption(*keys) for keys in state)), rewritten, "new", "", "key-other")
        assert plan["problems"] == [] and plan["pending"] and plan["name"] == "new"
        assert plan["promote"] == {h: ["new", "old"] if "old" in keys else ["new"] for h, keys in zip(self.CPS, state)}
        assert plan["remove"] == {h: ["new"] for h in self.CPS}
        assert plan["rewrite"] is (rewritten != "new")
        # Every host holds the new key after the add step, before any becomes its writer.
        assert all("new" in keys for keys in plan["add"].values())

    def test_other_name_while_one_is_stopped(self):
        plan = rotation_plan(self.configs(*[encryption("old", "new")] * 3), "old", "new", "third")
        assert plan["problems"] == ["a rotation to key new was stopped before it finished: run again with "
                                    "rotate_encryption_key_name=new (or without a name) to finish it first"]
        assert not plan["pending"]

    def test_every_problem_at_once(self):
        plan = rotation_plan({"cp1": encryption("a", kind="identity"), "cp2": None, "cp3": encryption("a")}, "", "", "bad:name")
        assert len(plan["problems"]) == 4
        assert plan["problems"][0].startswith("cp2: no encryption configuration")
        assert "key name 'bad:name'" in plan["problems"][3]

    def test_secrets_come_from_any_control_plane(self):
        configs = self.configs(encryption("old", "new"), encryption("old"), encryption("old"))
        assert encryption_config_keys(configs, ["new", "old"], "new", "GENERATED") == [
            {"name": "new", "secret": "S-new"}, {"name": "old", "secret": "S-old"}]
        assert encryption_config_keys(self.configs(*[encryption("old")] * 3), ["old", "new"], "new", "GEN")[1] == {
            "name": "new", "secret": "GEN"}
        with pytest.raises(ValueError):
            encryption_config_keys(self.configs(*[encryption("old")] * 3), ["lost"])
