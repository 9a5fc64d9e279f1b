"""The public tabular suite: datasets (benchmarks.tabular.datasets) and the harness (benchmarks.tabular.run)."""
