"""Exceptions raised by cluster-envs.

Every error names the offending input (config key, file and line, job id) so that
users never have to dig through a numpy traceback to find what they did wrong.
"""

from __future__ import annotations


class ClusterEnvsError(Exception):
    """Base class of every error raised on purpose by cluster-envs."""


class ConfigError(ClusterEnvsError, ValueError):
    """An invalid configuration value, unknown key or unknown preset name."""


class TraceFormatError(ClusterEnvsError, ValueError):
    """A malformed workload trace; the message starts with ``file:line:``."""

    def __init__(self, path: str, line: int | None, reason: str) -> None:
        self.path = str(path)
        self.line = line
        self.reason = reason
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {reason}")


class InfeasibleDecisionError(ClusterEnvsError, ValueError):
    """A scheduling decision that the cluster cannot carry out (names job and reason)."""


class InvalidActionError(ClusterEnvsError, ValueError):
    """An env action that is not a value of the action space (names action and space)."""


class ResetNeededError(ClusterEnvsError, RuntimeError):
    """An env method called before ``reset()``."""
