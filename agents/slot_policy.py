"""``SlotPolicy``: an actor-critic whose weights are shared across job slots.

MetisAllocation's observation is J slots of F fields each, then G cluster fields, and its
action one categorical per slot (``MultiDiscrete([K] * J)``). A flat MLP must learn the
same rule separately for every slot (and its output layer alone has ``J * K`` heads per
hidden unit); a slot's job says nothing about which slot it landed in. SlotPolicy is a
Deep Sets network instead (Zaheer et al., 2017), the structure Decima and other cluster
schedulers use for sets of jobs:

* every slot is embedded by one shared MLP from its fields and the cluster fields;
* the embeddings of the *occupied* slots (field 0, ``present``) are mean-pooled into a
  cluster context, which each slot sees next to its own embedding (so a slot's
  allocation can depend on the other jobs, as SLAQ's greedy split does);
* one shared linear head turns each slot's latent into its K logits; the critic reads
  the pooled context and the cluster fields.

So permuting the slots permutes the action distribution (tested), and the parameter count
does not grow with J. Use it with ``policy: SlotPolicy`` (``policy_kwargs: {hidden: H}``
optional) for PPO or A2C. The split into J slot blocks and G global fields, and which
slot field marks an occupied slot, come from the env's observation layout (the
:class:`cluster_envs.envs.layout.LayoutBox` its ``observation_space`` is); the
``global_features`` kwarg is only needed for a plain ``Box`` (and, when given, must agree
with the layout -- models saved before layouts existed store it and still load).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from stable_baselines3.common.policies import ActorCriticPolicy
from torch import nn

from cluster_envs.envs.layout import layout_of
from cluster_envs.errors import ConfigError

#: Width of the per-slot embeddings and latents.
DEFAULT_HIDDEN = 128


class SlotExtractor(nn.Module):
    """Per-slot actor latents (flattened, ``J * hidden``) and a pooled critic latent."""

    def __init__(
        self,
        num_slots: int,
        slot_features: int,
        global_features: int,
        hidden: int,
        activation_fn: type[nn.Module],
        mask_index: int = 0,
    ) -> None:
        super().__init__()
        self.num_slots, self.slot_features = num_slots, slot_features
        self.mask_index = mask_index
        self.embed = nn.Sequential(
            nn.Linear(slot_features + global_features, hidden), activation_fn(),
            nn.Linear(hidden, hidden), activation_fn(),
        )  # fmt: skip
        self.actor = nn.Sequential(nn.Linear(2 * hidden, hidden), activation_fn())
        self.critic = nn.Sequential(
            nn.Linear(hidden + global_features, hidden), activation_fn(),
            nn.Linear(hidden, hidden), activation_fn(),
        )  # fmt: skip
        self.latent_dim_pi = num_slots * hidden
        self.latent_dim_vf = hidden

    def _encode(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        cut = self.num_slots * self.slot_features
        slots = obs[:, :cut].reshape(-1, self.num_slots, self.slot_features)
        cluster = obs[:, cut:]
        expanded = cluster[:, None, :].expand(-1, self.num_slots, -1)
        embedded = self.embed(torch.cat([slots, expanded], dim=-1))
        present = slots[..., self.mask_index : self.mask_index + 1]
        pooled = (embedded * present).sum(dim=1) / present.sum(dim=1).clamp(min=1.0)
        return embedded, pooled, cluster

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        embedded, pooled, cluster = self._encode(obs)
        return self._actor(embedded, pooled), self.critic(torch.cat([pooled, cluster], dim=-1))

    def _actor(self, embedded: torch.Tensor, pooled: torch.Tensor) -> torch.Tensor:
        context = pooled[:, None, :].expand(-1, self.num_slots, -1)
        return self.actor(torch.cat([embedded, context], dim=-1)).flatten(1)

    def forward_actor(self, obs: torch.Tensor) -> torch.Tensor:
        embedded, pooled, _ = self._encode(obs)
        return self._actor(embedded, pooled)

    def forward_critic(self, obs: torch.Tensor) -> torch.Tensor:
        _, pooled, cluster = self._encode(obs)
        return self.critic(torch.cat([pooled, cluster], dim=-1))


class SlotHead(nn.Module):
    """One linear map from a slot's latent to its K logits, shared by every slot."""

    def __init__(self, num_slots: int, hidden: int, choices: int) -> None:
        super().__init__()
        self.num_slots, self.hidden = num_slots, hidden
        self.linear = nn.Linear(hidden, choices)

    def forward(self, latent: torch.Tensor) -> torch.Tensor:
        per_slot = latent.reshape(-1, self.num_slots, self.hidden)
        return self.linear(per_slot).flatten(1)


class SlotPolicy(ActorCriticPolicy):
    """ActorCriticPolicy with :class:`SlotExtractor` and :class:`SlotHead` (see module).

    Args:
        global_features: G, the cluster fields after the J slot blocks (None: from the
            observation space's layout).
        hidden: Width of the shared layers.
        Everything else as :class:`ActorCriticPolicy` (``net_arch`` is not used).
    """

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        lr_schedule: Any,
        *args: Any,
        global_features: int | None = None,
        hidden: int = DEFAULT_HIDDEN,
        **kwargs: Any,
    ) -> None:
        if not isinstance(action_space, spaces.MultiDiscrete) or len(set(action_space.nvec)) != 1:
            raise ConfigError(
                "SlotPolicy needs a MultiDiscrete action space with one size per slot"
            )
        if not isinstance(observation_space, spaces.Box) or len(observation_space.shape) != 1:
            raise ConfigError("SlotPolicy needs a flat Box observation")
        num_slots = len(action_space.nvec)
        global_features, self.mask_index = _split(observation_space, num_slots, global_features)
        slot_total = observation_space.shape[0] - global_features
        if global_features < 0 or slot_total <= 0 or slot_total % num_slots:
            raise ConfigError(
                f"SlotPolicy: {observation_space.shape[0]} observation fields minus "
                f"global_features={global_features} do not split into {num_slots} slots"
            )
        self.num_slots = num_slots
        self.slot_features = slot_total // num_slots
        self.global_features = global_features
        self.hidden = hidden
        self.choices = int(action_space.nvec[0])
        kwargs.pop("net_arch", None)
        super().__init__(observation_space, action_space, lr_schedule, *args, **kwargs)

    def _build_mlp_extractor(self) -> None:
        # SB3 annotates mlp_extractor as MlpExtractor; this hook is its documented swap point.
        self.mlp_extractor = SlotExtractor(  # type: ignore[assignment]
            self.num_slots, self.slot_features, self.global_features, self.hidden,
            self.activation_fn, self.mask_index,
        )  # fmt: skip

    def _build(self, lr_schedule: Any) -> None:
        super()._build(lr_schedule)
        self.action_net = SlotHead(self.num_slots, self.hidden, self.choices)
        if self.ortho_init:
            self.action_net.apply(lambda m: self.init_weights(m, gain=0.01))
        self.optimizer = self.optimizer_class(  # type: ignore[call-arg]  # SB3 types it type[Optimizer]
            self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs
        )

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data = super()._get_constructor_parameters()
        data.update(global_features=self.global_features, hidden=self.hidden)
        return data


def _split(space: spaces.Space, num_slots: int, global_features: int | None) -> tuple[int, int]:
    """``(G, index of the occupied-slot field)`` from the space's layout or the kwarg."""
    layout = layout_of(space)
    if layout is None:
        if global_features is None:
            raise ConfigError(
                "SlotPolicy: the observation space carries no layout (not a LayoutBox); "
                "pass policy_kwargs={'global_features': G}"
            )
        return global_features, 0
    if layout.num_slots != num_slots:
        raise ConfigError(
            f"SlotPolicy: the observation has {layout.num_slots} slots but the action "
            f"space {num_slots}"
        )
    if global_features is not None and global_features != layout.global_size:
        raise ConfigError(
            f"SlotPolicy: global_features={global_features} but the observation layout "
            f"has {layout.global_size} global fields ({', '.join(layout.global_fields)})"
        )
    if layout.mask_index is None:
        raise ConfigError("SlotPolicy: the observation layout declares no occupied-slot field")
    return layout.global_size, layout.mask_index


#: Policies ``policy:`` in the hyper-parameter YAML may name besides SB3's aliases.
CUSTOM_POLICIES: dict[str, type[ActorCriticPolicy]] = {"SlotPolicy": SlotPolicy}


def count_parameters(module: nn.Module) -> int:
    """Number of trainable parameters."""
    return int(sum(np.prod(p.shape) for p in module.parameters() if p.requires_grad))
