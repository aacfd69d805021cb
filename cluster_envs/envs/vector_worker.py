"""The worker loop of multi-process vector envs: one native vector env behind a pipe.

Used by the SB3 multi-process adapter of the agents layer (one process per share of the envs).
It imports only ``cluster_envs`` and Gymnasium, so a worker starts without torch/SB3.
"""

from __future__ import annotations

from multiprocessing.connection import Connection
from typing import Any

from cluster_envs.envs.vector import ClusterVectorEnv


def serve(remote: Connection, parent: Connection, env_id: str, n: int, kwargs: dict) -> None:
    """Run a ``ClusterVectorEnv(env_id, n, **kwargs)`` for commands on ``remote``.

    Commands ``(name, data)``: ``step`` (actions -> obs, rewards, terminated,
    truncated, infos, masks), ``reset`` ((seeds, options) -> obs, infos, masks),
    ``spaces``, ``get`` ((attribute, local indices, (args, kwargs) or None)), ``set``
    ((attribute, local indices, value)), ``close``. Every answer is ``(True, result)``,
    or ``(False, exception)``, re-raised by the caller.
    """
    parent.close()
    venv = ClusterVectorEnv(env_id, n, **kwargs)
    while True:
        cmd, data = remote.recv()
        try:
            if cmd == "step":
                out: Any = (*venv.step_unbatched(data), venv.action_masks())
            elif cmd == "reset":
                infos = venv.reset_unbatched(seed=data[0], options=data[1])
                out = (venv.observations(), infos, venv.action_masks())
            elif cmd == "spaces":
                out = (venv.single_observation_space, venv.single_action_space)
            elif cmd == "get":  # (name, local indices, call it with (args, kwargs) or None)
                name, idx, call = data
                attrs = [getattr(venv.envs[i], name) for i in idx]
                out = attrs if call is None else [a(*call[0], **call[1]) for a in attrs]
            elif cmd == "set":
                for i in data[1]:
                    setattr(venv.envs[i], data[0], data[2])
                out = None
            elif cmd == "close":
                venv.close()
                remote.send((True, None))
                remote.close()
                return
            else:
                raise ValueError(f"unknown command {cmd!r}")
            remote.send((True, out))
        except Exception as exc:  # noqa: BLE001  (re-raised in the main process)
            remote.send((False, exc))
