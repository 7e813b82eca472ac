"""make compare: slipway and kubespray side by side on the same lab cluster (docs/performance.md)."""
