"""``SetPolicy``: one network for any window, queue length and cluster size.

The scale-free observations (``observation="scale_free"``) are K slots of F fields (the
first, ``present``, masks padding) and a global block. ``SetPolicy`` scores every slot
with one shared network, the RLScheduler "kernel" / Deep Sets structure:

* each slot is embedded by a shared MLP from its fields and the global summary;
* the present slots' embeddings are pooled (mean and max) into a context;
* a shared head turns ``[slot embedding, context]`` into the slot's ``c`` logits
  (MoldableScheduling: one per parallelism level; JobPlacement: one per node;
  MetisAllocation with ``action="hints"``, a ``MultiDiscrete([c] * K)``: one per option), and, if
  the action space has one more action (MoldableScheduling's *wait*), a head on the
  context gives its logit;
* the critic reads the context and the global summary.

So permuting the slots permutes the slot logits and leaves the wait logit and the value
unchanged (tests/test_set_policy.py), and no weight depends on K. The global block's
node-occupancy histogram (``nodes_with_free=g``, one field per GPU count of the largest
node) is summarised into three shape-free numbers (share of full nodes, of idle nodes,
mean free share) so a node size the agent never saw still fits: :func:`adapt` rebuilds
a trained model for another env's spaces and loads the same weights.

Use it with MaskablePPO (``policy: SetPolicy``); masks apply to the logits as usual.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

from cluster_envs.envs.layout import layout_of
from cluster_envs.errors import ConfigError

#: Width of the shared layers.
DEFAULT_HIDDEN = 64
#: Prefix of the node-occupancy histogram fields that depend on the node size.
HISTOGRAM = "nodes_with_free="


def global_summary_matrix(fields: tuple[str, ...]) -> np.ndarray:
    """``(G, G')``: maps the global block to shape-free fields (see the module)."""
    hist = [i for i, f in enumerate(fields) if f.startswith(HISTOGRAM)]
    keep = [i for i, f in enumerate(fields) if not f.startswith(HISTOGRAM)]
    extra = 3 if hist else 0
    m = np.zeros((len(fields), len(keep) + extra), dtype=np.float32)
    for c, i in enumerate(keep):
        m[i, c] = 1.0
    if hist:
        counts = [int(fields[i][len(HISTOGRAM) :]) for i in hist]
        top = max(counts)
        for i, g in zip(hist, counts, strict=True):
            m[i, len(keep)] = float(g == 0)
            m[i, len(keep) + 1] = float(g == top)
            m[i, len(keep) + 2] = g / top if top else 0.0
    return m


def _mlp(sizes: list[int], act: type[nn.Module]) -> nn.Sequential:
    layers: list[nn.Module] = []
    for a, b in zip(sizes[:-1], sizes[1:], strict=True):
        layers += [nn.Linear(a, b), act()]
    return nn.Sequential(*layers)


class SetExtractor(nn.Module):
    """Actor output = the logits themselves (``K * c (+1)``); critic latent ``hidden``."""

    def __init__(self, num_slots: int, slot_features: int, summary: np.ndarray,
                 per_slot: int, wait: bool, hidden: int, act: type[nn.Module]) -> None:  # fmt: skip
        super().__init__()
        self.num_slots, self.slot_features, self.per_slot, self.wait = (
            num_slots, slot_features, per_slot, wait)  # fmt: skip
        self.register_buffer("summary", torch.as_tensor(summary), persistent=False)
        g = summary.shape[1]
        self.embed = _mlp([slot_features + g, hidden, hidden], act)
        self.score = nn.Sequential(_mlp([3 * hidden, hidden], act), nn.Linear(hidden, per_slot))
        self.wait_head = nn.Sequential(_mlp([2 * hidden + g, hidden], act), nn.Linear(hidden, 1))
        self.critic = _mlp([2 * hidden + g, hidden, hidden], act)
        for head in (self.score[-1], self.wait_head[-1]):
            assert isinstance(head, nn.Linear)
            nn.init.orthogonal_(head.weight, gain=0.01)
            nn.init.zeros_(head.bias)
        self.latent_dim_pi = num_slots * per_slot + int(wait)
        self.latent_dim_vf = hidden

    def _encode(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        cut = self.num_slots * self.slot_features
        slots = obs[:, :cut].reshape(-1, self.num_slots, self.slot_features)
        summary: torch.Tensor = self.summary  # type: ignore[assignment]  # a buffer
        glob = obs[:, cut:] @ summary
        emb = self.embed(torch.cat([slots, glob[:, None, :].expand(-1, self.num_slots, -1)], -1))
        present = slots[..., :1]
        count = present.sum(dim=1).clamp(min=1.0)
        mean = (emb * present).sum(dim=1) / count
        masked = emb.masked_fill(present < 0.5, -1e9).max(dim=1).values
        top = torch.where(present.sum(dim=1) > 0, masked, torch.zeros_like(masked))
        context = torch.cat([mean, top], dim=-1)
        return emb, context, glob

    def _logits(self, emb: torch.Tensor, context: torch.Tensor, glob: torch.Tensor) -> torch.Tensor:
        ctx = context[:, None, :].expand(-1, self.num_slots, -1)
        logits = self.score(torch.cat([emb, ctx], dim=-1)).flatten(1)
        if self.wait:
            logits = torch.cat([logits, self.wait_head(torch.cat([context, glob], -1))], -1)
        return logits

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        emb, context, glob = self._encode(obs)
        return self._logits(emb, context, glob), self.critic(torch.cat([context, glob], -1))

    def forward_actor(self, obs: torch.Tensor) -> torch.Tensor:
        return self._logits(*self._encode(obs))

    def forward_critic(self, obs: torch.Tensor) -> torch.Tensor:
        _, context, glob = self._encode(obs)
        return self.critic(torch.cat([context, glob], -1))


class SetPolicy(MaskableActorCriticPolicy):
    """MaskableActorCriticPolicy over a slot set (see the module docstring).

    Args:
        hidden: Width of the shared layers.
        Everything else as :class:`MaskableActorCriticPolicy` (``net_arch`` unused).
    """

    def __init__(self, observation_space: spaces.Space, action_space: spaces.Space,
                 lr_schedule: Any, *args: Any, hidden: int = DEFAULT_HIDDEN,
                 **kwargs: Any) -> None:  # fmt: skip
        layout = layout_of(observation_space)
        if layout is None or layout.mask_index != 0:
            raise ConfigError(
                "SetPolicy needs a slot-layout observation whose first slot field is "
                "`present` (make the env with observation='scale_free')"
            )
        k = layout.num_slots
        if isinstance(action_space, spaces.MultiDiscrete):
            # One choice per slot (MetisAllocation's action="hints"): MaskablePPO splits
            # the flat logits into consecutive blocks of nvec[k], the slot-major layout
            # the shared head writes (tests/test_set_policy.py).
            nvec = np.asarray(action_space.nvec).reshape(-1)
            if len(nvec) != k or len(set(nvec.tolist())) != 1:
                raise ConfigError(
                    f"SetPolicy: {action_space} is not one equal choice per slot ({k} slots)"
                )
            n, wait = k * int(nvec[0]), False
        elif isinstance(action_space, spaces.Discrete):
            n = int(action_space.n)
            wait = n % k == 1
        else:
            raise ConfigError(
                f"SetPolicy needs a Discrete or MultiDiscrete action space, got {action_space}"
            )
        if (n - int(wait)) % k or n - int(wait) < k:
            raise ConfigError(f"SetPolicy: {n} actions do not split over {k} slots")
        self.num_slots, self.slot_features = k, layout.slot_size
        self.per_slot, self.wait, self.hidden = (n - int(wait)) // k, wait, hidden
        self.summary = global_summary_matrix(tuple(layout.global_fields))
        kwargs.pop("net_arch", None)
        super().__init__(observation_space, action_space, lr_schedule, *args, **kwargs)

    def _build_mlp_extractor(self) -> None:
        # SB3 annotates mlp_extractor as MlpExtractor; this hook is its documented swap point.
        self.mlp_extractor = SetExtractor(  # type: ignore[assignment]
            self.num_slots, self.slot_features, self.summary, self.per_slot, self.wait,
            self.hidden, self.activation_fn,
        )  # fmt: skip

    def _build(self, lr_schedule: Any) -> None:
        super()._build(lr_schedule)
        self.action_net = nn.Identity()  # the extractor's actor output is the logits
        self.optimizer = self.optimizer_class(  # type: ignore[call-arg]
            self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs
        )

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data = super()._get_constructor_parameters()
        data.update(hidden=self.hidden)
        return data


class ShapeFreeFlatten(BaseFeaturesExtractor):
    """The slots as they are, flattened, then the global block's shape-free summary
    (:func:`global_summary_matrix`): the inputs :class:`SetPolicy` sees, without its set
    structure."""

    def __init__(self, observation_space: spaces.Box, cut: int, summary: np.ndarray) -> None:
        super().__init__(observation_space, features_dim=cut + summary.shape[1])
        self.cut = cut
        self.register_buffer("summary", torch.as_tensor(summary), persistent=False)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        summary: torch.Tensor = self.summary  # type: ignore[assignment]  # a buffer
        return torch.cat([obs[:, : self.cut], obs[:, self.cut :] @ summary], dim=-1)


class FlatPolicy(MaskableActorCriticPolicy):
    """The flat-MLP ablation of :class:`SetPolicy` (``agents.generalist train --flat``).

    Same inputs (the K slots and the global summary, so it also serves another node size
    through :func:`adapt`), but one MLP (``hidden`` x 2, separate actor and critic) over
    their concatenation: no weight sharing across slots, no pooling, so it is neither
    permutation-equivariant nor free of K.
    """

    def __init__(self, observation_space: spaces.Space, action_space: spaces.Space,
                 lr_schedule: Any, *args: Any, hidden: int = DEFAULT_HIDDEN,
                 **kwargs: Any) -> None:  # fmt: skip
        layout = layout_of(observation_space)
        if layout is None:
            raise ConfigError(
                "FlatPolicy needs a slot-layout observation (make the env with "
                "observation='scale_free')"
            )
        self.hidden = hidden
        # Derived from the space (also when loading or adapting): never the saved ones.
        kwargs["features_extractor_class"] = ShapeFreeFlatten
        kwargs["features_extractor_kwargs"] = {
            "cut": layout.num_slots * layout.slot_size,
            "summary": global_summary_matrix(tuple(layout.global_fields)),
        }
        kwargs["net_arch"] = {"pi": [hidden, hidden], "vf": [hidden, hidden]}
        super().__init__(observation_space, action_space, lr_schedule, *args, **kwargs)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data = super()._get_constructor_parameters()
        data.update(hidden=self.hidden)
        for key in ("features_extractor_class", "features_extractor_kwargs", "net_arch"):
            data.pop(key, None)
        return data


def adapt(model: Any, env: Any, tie: bool = False) -> Any:
    """``model`` (MaskablePPO with SetPolicy or FlatPolicy) rebuilt for ``env``'s spaces,
    same weights: a copy of them, or with ``tie`` the very same parameter tensors (a step
    of an optimizer on either model moves both; for fitting one policy to several cluster
    shapes at once, :func:`agents.imitation.pretrain_interleaved`).

    Raises a ConfigError naming both shapes when the weights cannot serve ``env``
    (another per-slot field count or global summary; for FlatPolicy also another K).
    """
    policy = model.policy
    if not isinstance(policy, (SetPolicy, FlatPolicy)):
        raise ConfigError("adapt() needs a model whose policy is SetPolicy or FlatPolicy")
    if (policy.observation_space == env.observation_space
            and policy.action_space == env.action_space):  # fmt: skip
        return model
    from sb3_contrib import MaskablePPO

    kind = type(policy)
    new = MaskablePPO(kind, env, policy_kwargs={"hidden": policy.hidden},
                      device="cpu", seed=0, n_steps=8, batch_size=8)  # fmt: skip
    try:
        new.policy.load_state_dict(policy.state_dict())
    except RuntimeError as exc:
        raise ConfigError(
            f"{kind.__name__} trained on observation {policy.observation_space.shape} / "
            f"{policy.action_space} cannot serve {env.observation_space.shape} / "
            f"{env.action_space}: {exc}"
        ) from exc
    if tie:
        _tie_parameters(new.policy, policy)
    return new


def _tie_parameters(dst: torch.nn.Module, src: torch.nn.Module) -> None:
    """Make every parameter of ``dst`` the same tensor as ``src``'s of that name."""
    for name, param in src.named_parameters():
        *path, leaf = name.split(".")
        module = dst
        for part in path:
            module = getattr(module, part)
        setattr(module, leaf, param)


#: Policies ``policy:`` in the hyper-parameter YAML may name besides SB3's aliases.
CUSTOM_POLICIES: dict[str, type[Any]] = {"SetPolicy": SetPolicy}
