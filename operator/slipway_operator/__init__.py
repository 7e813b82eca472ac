"""slipway-operator: reconciles the KubeSphere ClusterConfiguration in the cluster (docs/kubesphere.md)."""
