"""Built-in workloads: training loops written against each framework's own library models."""
