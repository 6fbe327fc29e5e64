"""Launching runs: allocations, the submitter that waits on submitit, and the task on the node."""
