"""cluster-envs: simulator, performance models and Gymnasium envs for GPU-cluster scheduling."""

__version__ = "0.1.0"
