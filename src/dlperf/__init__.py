"""dlperf: deep-learning framework training benchmarks as a Snakemake workflow."""

__version__ = "0.1.0"
SCHEMA_VERSION = 3  # version of the results tables' columns; bump on any change of meaning
