"""Placeholder: being written."""
DistributedOptimizer = None
