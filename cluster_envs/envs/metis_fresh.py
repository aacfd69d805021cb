"""MetisEncoder's slot block: kept per simulator state, a new state's written in one pass.

:func:`fill_slots` keeps the observation buffer while the simulator's state version
stays (the Discrete variant's "+1 GPU" steps rewrite one ``pending_gpus`` entry), and
builds a new state's buffer with :func:`fresh_block` where it applies.
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

#: Loss observations are shown as ``squash(count / OBS_NORM)``.
OBS_NORM = 10.0
#: Index of ``pending_gpus`` in a slot (the one field that depends on the pending count).
PENDING_INDEX = 5
#: Index of ``est_quality`` in a slot.
QUALITY_INDEX = 11


def fill_slots(
    enc: MetisEncoder,
    sim: Simulator,
    slots: list[int | None],
    counts: list[int],
    changed: int | None,
) -> tuple[np.ndarray, float, int, bool]:
    """The observation buffer with the slot rows (``counts``: pending GPUs per slot)
    written, the sum of ``est_quality`` over the present slots, their number, and
    whether the buffer is new. Within one state version the buffer is kept and a slot
    whose pending count changed gets its ``pending_gpus`` rewritten (as ``slot_row``
    does; ``est_quality`` does not depend on it, so the sum is the one of a full pass).
    ``changed``: the one slot whose count may differ from the previous call's, a hint
    checked against the counts kept (any other difference is found slot by slot)."""
    enc._sync_rows(sim)
    size, block = enc.slot_size, enc._block
    if block is not None and block[0] == slots:
        obs, before, k = block[2], block[1], changed
        keep = enc._keep[PENDING_INDEX]
        if k is not None and counts[:k] == before[:k] and counts[k + 1 :] == before[k + 1 :]:
            if slots[k] is not None and counts[k] != before[k]:  # the one slot changed
                obs[k * size + PENDING_INDEX] = enc._pending_feature(counts[k]) * keep
        else:
            for k, j in enumerate(slots):
                if j is not None and counts[k] != before[k]:
                    obs[k * size + PENDING_INDEX] = enc._pending_feature(counts[k]) * keep
        enc._block = (block[0], counts, obs, block[3], block[4])
        return obs, block[3], block[4], False
    if enc.one_pass:
        obs, quality_sum, present = fresh_block(enc, sim, slots, counts)
    else:
        obs = np.zeros(enc.size, dtype=np.float32)
        quality_sum, present = 0.0, 0
        for k, j in enumerate(slots):
            if j is None:
                continue
            row = enc.slot_row(sim, j, int(counts[k]))
            obs[k * size : (k + 1) * size] = row
            quality_sum += float(row[QUALITY_INDEX])
            present += 1
    enc._block = (list(slots), counts, obs, quality_sum, present)
    return obs, quality_sum, present, True


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
    slot_reads, curve_base = estimator.slot_reads, enc.curve_base
    quality_sum, present = 0.0, 0
    for k, j in enumerate(slots):
        if j is None:
            continue
        state = states.item(j)
        est_total, done, fit, num_obs = slot_reads(j)  # encode_slot's four reads in one
        base = curve_base(sim, j, est_total, done, fit)
        rows[k] = base
        o = k * size
        obs[o + 1] = state == 1
        obs[o + 2] = state == 2
        obs[o + 3] = state == 3
        obs[o + 4] = min(held.item(j) / top, 1.0)
        obs[o + 5] = min(counts[k] / top, 1.0)
        obs[o + 9] = norm_time(now - jobs[j].submit_time_s)
        obs[o + 13] = norm_time(attained.item(j))
        obs[o + 18] = squash(num_obs / OBS_NORM)
        quality_sum += float(base[QUALITY_INDEX])
        present += 1
    return obs, quality_sum, present
