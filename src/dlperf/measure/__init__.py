"""Measuring: a run's throughput over its window, percentiles, medians, spread, speedup
(stats); what explains it (efficiency: MFU, memory, energy; ceiling: the speedup's communication
bound); outliers and instability (variance); adaptive repeats (repeats); and the tables that
hold it all (tables)."""
