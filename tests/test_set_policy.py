"""SetPolicy: permutation equivariance, shape-free weights, and training with MaskablePPO."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from sb3_contrib import MaskablePPO

import cluster_envs  # noqa: F401
from agents.set_policy import SetPolicy, adapt, global_summary_matrix
from cluster_envs.errors import ConfigError

MOLDABLE = "cluster_envs/MoldableScheduling-v0"


def _env(family: str = "mixed", env_id: str = MOLDABLE) -> gym.Env:
    return gym.make(env_id, family=family, split="train", observation="scale_free", num_jobs=12)


def _model(env: gym.Env) -> MaskablePPO:
    return MaskablePPO(SetPolicy, env, n_steps=32, batch_size=32, n_epochs=2, seed=0,
                       device="cpu", policy_kwargs={"hidden": 16})  # fmt: skip


def _random_obs(policy: SetPolicy, present: list[int], seed: int = 0) -> torch.Tensor:
    rng = np.random.default_rng(seed)
    k, f = policy.num_slots, policy.slot_features
    obs = rng.uniform(size=policy.observation_space.shape).astype(np.float32)
    slots = obs[: k * f].reshape(k, f)
    slots[:, 0] = 0.0
    slots[present, 0] = 1.0
    slots[[i for i in range(k) if i not in present]] = 0.0
    return torch.as_tensor(obs)[None]


def _permute(policy: SetPolicy, obs: torch.Tensor, perm: np.ndarray) -> torch.Tensor:
    k, f = policy.num_slots, policy.slot_features
    slots = obs[0, : k * f].reshape(k, f)[perm]
    return torch.cat([slots.flatten(), obs[0, k * f :]])[None]


def test_slot_logits_permute_and_wait_and_value_do_not() -> None:
    policy = _model(_env()).policy
    ext = policy.mlp_extractor
    obs = _random_obs(policy, present=[0, 1, 2, 5])
    perm = np.array([5, 2, 0, 1, 3, 4, 6, 7])
    with torch.no_grad():
        for layer in (ext.score[-1], ext.wait_head[-1]):  # off the near-zero init
            torch.nn.init.normal_(layer.weight)
        logits, value = ext(obs)
        logits_p, value_p = ext(_permute(policy, obs, perm))
    c = policy.per_slot
    per_slot = logits[0, :-1].reshape(-1, c)
    per_slot_p = logits_p[0, :-1].reshape(-1, c)
    present = [0, 1, 2, 5]
    for new, old in enumerate(perm):
        if old in present:
            assert torch.allclose(per_slot_p[new], per_slot[old], atol=1e-5)
    assert torch.allclose(logits_p[0, -1], logits[0, -1], atol=1e-5)  # wait
    assert torch.allclose(value_p, value, atol=1e-5)
    assert not torch.allclose(per_slot[0], per_slot[1])  # slots are scored differently


def test_padding_slots_do_not_change_context() -> None:
    policy = _model(_env()).policy
    obs = _random_obs(policy, present=[0, 3])
    noisy = obs.clone()
    f = policy.slot_features
    noisy[0, 6 * f + 1 : 7 * f] = 0.7  # garbage in an absent slot (present = 0)
    with torch.no_grad():
        assert torch.allclose(policy.mlp_extractor(obs)[1], policy.mlp_extractor(noisy)[1])


def test_histogram_summary_is_shape_free() -> None:
    four = global_summary_matrix(("a", *(f"nodes_with_free={g}" for g in range(5)), "b"))
    eight = global_summary_matrix(("a", *(f"nodes_with_free={g}" for g in range(9)), "b"))
    assert four.shape[1] == eight.shape[1] == 5
    full4 = np.array([0.3, 0, 0, 0, 0, 1.0, 0.9])  # every node fully free
    full8 = np.array([0.3, *([0] * 8), 1.0, 0.9])
    assert np.allclose(full4 @ four, full8 @ eight)


def test_trains_and_serves_another_cluster_shape() -> None:
    env = _env("mixed")
    model = _model(env)
    before = [p.detach().clone() for p in model.policy.parameters()]
    model.learn(128)
    after = list(model.policy.parameters())
    assert any(not torch.equal(a, b) for a, b in zip(before, after, strict=True))
    assert all(torch.isfinite(p).all() for p in after)
    other = _env("lublin-256")  # 8-GPU nodes: another global block than mixed's
    assert other.observation_space.shape != env.observation_space.shape
    served = adapt(model, other)
    obs, _ = other.reset(seed=3)
    mask = other.unwrapped.action_masks()
    action, _ = served.predict(obs, deterministic=True, action_masks=mask)
    assert mask[int(action)]
    for a, b in zip(model.policy.parameters(), served.policy.parameters(), strict=True):
        assert torch.equal(a, b)


def test_placement_scores_nodes() -> None:
    model = _model(_env("mixed", "cluster_envs/JobPlacement-v0"))
    assert model.policy.per_slot == 1 and not model.policy.wait
    model.learn(64)


def test_rejects_a_box_without_slot_layout() -> None:
    box = gym.spaces.Box(0.0, 1.0, (10,), dtype=np.float32)
    with pytest.raises(ConfigError, match="slot-layout"):
        SetPolicy(box, gym.spaces.Discrete(3), lambda _: 1e-3)


def _metis(**kwargs: object) -> gym.Env:
    return gym.make("cluster_envs/MetisAllocation-v0", action="hints",
                    observation="scale_free_hints", **kwargs)  # fmt: skip


def test_multi_discrete_logits_split_per_slot_as_maskable_ppo_splits_them() -> None:
    env = _metis(preset="toy")
    policy = _model(env).policy
    k, c = policy.num_slots, policy.per_slot
    assert (k, c, policy.wait) == (8, 6, False)
    obs = _random_obs(policy, present=[0, 2, 3, 7], seed=1)
    with torch.no_grad():
        for layer in (policy.mlp_extractor.score[-1],):  # off the near-zero init
            torch.nn.init.normal_(layer.weight)
        logits = policy.mlp_extractor.forward_actor(obs).reshape(k, c)
        mask = np.zeros((k, c), dtype=bool)
        mask[:, 5] = True
        mask[[0, 2, 3, 7]] = True
        dist = policy.get_distribution(obs, action_masks=mask.reshape(1, -1))
    cats = dist.distributions
    assert len(cats) == k
    for slot, cat in enumerate(cats):
        expected = torch.log_softmax(logits[slot].masked_fill(~torch.as_tensor(mask[slot]),
                                                              -1e8), -1)  # fmt: skip
        assert torch.allclose(torch.log_softmax(cat.logits[0], -1), expected, atol=1e-4)
    mode = dist.mode()[0].numpy()
    assert mask[np.arange(k), mode].all()
    assert mode[1] == mode[4] == 5  # an empty slot's only option: pause


def test_multi_discrete_serves_other_slot_counts_and_cluster_sizes() -> None:
    env = _metis(preset="toy")  # 16 GPUs, 8 slots
    model = _model(env)
    model.learn(64)
    other = _metis(family="synthetic-256", split="train", num_jobs=10)  # 256 GPUs, 32 slots
    served = adapt(model, other)
    assert served.policy.num_slots == 32 and served.policy.per_slot == 6
    obs, _ = other.reset(seed=2)
    mask = other.unwrapped.action_masks()
    action, _ = served.predict(obs, deterministic=True, action_masks=mask)
    assert action.shape == (32,)
    assert mask.reshape(32, 6)[np.arange(32), action].all()
    for a, b in zip(model.policy.parameters(), served.policy.parameters(), strict=True):
        assert torch.equal(a, b)


def test_rejects_unequal_multi_discrete() -> None:
    env = _metis(preset="toy")
    with pytest.raises(ConfigError, match="one equal choice per slot"):
        SetPolicy(env.observation_space, gym.spaces.MultiDiscrete([6] * 7 + [5]), lambda _: 1e-3)
