"""The slot block of a new simulator state, written in one pass (MetisEncoder's hot path).

:meth:`MetisEncoder.encode_slot` builds a fresh row per slot (its curve row copied, then
every state field written) which ``_fill_slots`` copies into the observation; at the end
of a slice every occupied slot is re-encoded that way. :func:`fresh_block` writes the
same values straight into the observation buffer: each slot's cached curve row once,
then the state fields of ``STATE_FIELDS``, reading the job in the same order (so the
estimator refits and the profiles are measured in the same order as well). Only for the
``fitted`` / ``oracle`` features (no field zeroed) of the default encoder; the result is
equal to the row-by-row path (the pinned-trajectory and cache tests check it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from cluster_envs.envs.normalise import norm_time, squash

if TYPE_CHECKING:
    from cluster_envs.envs.metis_features import MetisEncoder
    from cluster_envs.sim.engine import Simulator

#: ``OBS_NORM`` of :mod:`cluster_envs.envs.metis_features` (loss observations shown).
_OBS_NORM = 10.0
#: ``QUALITY_INDEX`` of :mod:`cluster_envs.envs.metis_features`.
_QUALITY = 11


def fresh_block(
    enc: MetisEncoder, sim: Simulator, slots: list[int | None], counts: list[int]
) -> tuple[np.ndarray, float, int]:
    """The observation buffer with every slot row written (cluster fields zero), the
    sum of ``est_quality`` over the present slots and their number."""
    size, top = enc.slot_size, enc.max_gpus
    obs = np.zeros(enc.size, dtype=np.float32)
    rows = obs[: enc.num_slots * size].reshape(enc.num_slots, size)
    estimator, jobs, now = sim.estimator, sim.jobs, sim.now_s
    states, held, attained = sim.state, sim.num_gpus_held, sim.attained_gpu_s
    total_iterations, fitted = estimator.total_iterations, estimator.fitted
    num_observations, curve_base = estimator.num_observations, enc.curve_base
    quality_sum, present = 0.0, 0
    for k, j in enumerate(slots):
        if j is None:
            continue
        state = int(states[j])
        est_total = total_iterations(j)
        base = curve_base(sim, j, est_total, sim.iterations_done(j), fitted(j))
        rows[k] = base
        o = k * size
        obs[o + 1] = state == 1
        obs[o + 2] = state == 2
        obs[o + 3] = state == 3
        obs[o + 4] = min(int(held[j]) / top, 1.0)
        obs[o + 5] = min(counts[k] / top, 1.0)
        obs[o + 9] = norm_time(now - jobs[j].submit_time_s)
        obs[o + 13] = norm_time(float(attained[j]))
        obs[o + 18] = squash(num_observations(j) / _OBS_NORM)
        quality_sum += float(base[_QUALITY])
        present += 1
    return obs, quality_sum, present
