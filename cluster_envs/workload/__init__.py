"""Workloads: synthetic generators and trace loaders."""
