"""slipway-fleet: SlipwayCluster resources in a management cluster, each operation a Kubernetes Job (docs/fleet.md)."""
