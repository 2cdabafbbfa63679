"""Placeholder: being written."""
SyncBatchNorm = None
