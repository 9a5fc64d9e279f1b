"""Benchmarks for dp_sklearn: privacy-utility curves on real data, paper reproductions,
speed against scikit-learn, and tight-vs-paper accounting.

Run everything with ``python -m benchmarks.run`` (see ``benchmarks/README.md``).
"""
