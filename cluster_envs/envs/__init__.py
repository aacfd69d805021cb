"""Gymnasium adapters over the simulator (registered on ``import cluster_envs``)."""
