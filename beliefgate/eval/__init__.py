"""Evaluation: episodes, grids, metrics, reports, switch benchmarks and sensitivity analysis."""
