"""Observation layouts: one declaration per env of what every index of its vector means.

Every env's flat observation is ``num_slots`` copies of a per-slot block (a job slot, a
window slot, a node), then one global block. :class:`ObsLayout` declares the field names
of both blocks once; the encoders, the ablation masks, the tests and the set policies
(``agents/slot_policy.py``) all derive offsets from it instead of repeating numbers.

The env's ``observation_space`` is a :class:`LayoutBox` (a plain ``Box`` that also carries
its ``layout``), so a policy built from the space alone can split it into slots and the
global block; it compares equal to a ``Box`` of the same bounds, so models saved with a
plain ``Box`` still load.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces

from cluster_envs.config import suggest
from cluster_envs.errors import ConfigError

#: Name of the block repeated once per slot, and of the block after the slots.
SLOTS_BLOCK = "slots"
GLOBAL_BLOCK = "global"


@dataclass(frozen=True)
class ObsLayout:
    """``num_slots`` x ``slot_fields``, then ``global_fields``, in this order.

    Attributes:
        slot_fields: Names of the fields of one slot, in order.
        num_slots: How many slots (J).
        global_fields: Names of the fields after the slots, in order.
        slot_prefix: Slot ``k``'s field ``f`` is described as ``f"{slot_prefix}{k}.{f}"``.
        mask_field: The slot field that is 1 for an occupied slot and 0 for padding
            (what a set encoder pools over), or None when every slot is always present.
    """

    slot_fields: tuple[str, ...]
    num_slots: int
    global_fields: tuple[str, ...]
    slot_prefix: str = "slot"
    mask_field: str | None = "present"

    def __post_init__(self) -> None:
        if self.num_slots < 0:
            raise ConfigError(f"num_slots must be >= 0, got {self.num_slots}")
        for kind, names in (("slot", self.slot_fields), ("global", self.global_fields)):
            if len(set(names)) != len(names):
                raise ConfigError(f"duplicate {kind} field names in {names}")
        if self.mask_field is not None and self.mask_field not in self.slot_fields:
            raise ConfigError(f"mask_field {self.mask_field!r} is not a slot field")

    @property
    def slot_size(self) -> int:
        """Fields per slot (F)."""
        return len(self.slot_fields)

    @property
    def global_size(self) -> int:
        """Fields of the global block (G)."""
        return len(self.global_fields)

    @property
    def global_offset(self) -> int:
        """Index of the first global field (``J * F``)."""
        return self.num_slots * self.slot_size

    @property
    def size(self) -> int:
        """Length of the observation vector (``J * F + G``)."""
        return self.global_offset + self.global_size

    @property
    def mask_index(self) -> int | None:
        """Position of :attr:`mask_field` inside a slot (None: no mask)."""
        return None if self.mask_field is None else self.slot_fields.index(self.mask_field)

    def describe(self) -> list[str]:
        """The name of every observation index, in order."""
        names = [
            f"{self.slot_prefix}{k}.{f}" for k in range(self.num_slots) for f in self.slot_fields
        ]
        return names + list(self.global_fields)

    def field_names(self) -> list[str]:
        """Every field name (slot fields once, then global fields)."""
        return [*self.slot_fields, *self.global_fields]

    def slot_index(self, name: str) -> int:
        """Position of slot field ``name`` inside one slot."""
        if name not in self.slot_fields:
            raise ConfigError(f"unknown slot field {name!r}{suggest(name, self.slot_fields)}")
        return self.slot_fields.index(name)

    def global_index(self, name: str) -> int:
        """Absolute index of global field ``name``."""
        if name not in self.global_fields:
            raise ConfigError(f"unknown global field {name!r}{suggest(name, self.global_fields)}")
        return self.global_offset + self.global_fields.index(name)

    def slices(self, name: str) -> slice:
        """Where ``name`` lies in the vector: a block, a slot field (every slot) or a global field.

        ``slices("slots")`` and ``slices("global")`` are the two blocks; a slot field gives
        a strided slice hitting that field in every slot (``obs[layout.slices("present")]``
        is the slot mask); a global field a slice of length 1.
        """
        if name == SLOTS_BLOCK:
            return slice(0, self.global_offset)
        if name == GLOBAL_BLOCK:
            return slice(self.global_offset, self.size)
        if name in self.slot_fields:
            i = self.slot_fields.index(name)
            return slice(i, self.global_offset, self.slot_size)
        if name in self.global_fields:
            i = self.global_index(name)
            return slice(i, i + 1)
        valid = [SLOTS_BLOCK, GLOBAL_BLOCK, *self.field_names()]
        raise ConfigError(f"unknown observation field {name!r}{suggest(name, valid)}")

    def slot_mask(self, fields: Iterable[str]) -> np.ndarray:
        """A float32 vector over one slot: 0 at ``fields``, 1 elsewhere (an ablation mask)."""
        keep = np.ones(self.slot_size, dtype=np.float32)
        for name in fields:
            keep[self.slot_index(name)] = 0.0
        return keep

    def indices(self, fields: Iterable[str]) -> np.ndarray:
        """Sorted absolute indices of ``fields`` (slot fields in every slot, or global)."""
        out = [np.arange(self.size)[self.slices(name)] for name in fields]
        return np.unique(np.concatenate(out)) if out else np.zeros(0, dtype=np.int64)

    def split(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(slots, global)``: a ``(..., J, F)`` view and the ``(..., G)`` global block."""
        obs = np.asarray(obs)
        lead = obs.shape[:-1]
        slots = obs[..., : self.global_offset].reshape(*lead, self.num_slots, self.slot_size)
        return slots, obs[..., self.global_offset :]

    def space(self) -> LayoutBox:
        """A ``Box(0, 1, (size,), float32)`` carrying this layout."""
        return LayoutBox(self)


class LayoutBox(spaces.Box):
    """``Box(0, 1, (layout.size,), float32)`` with the :class:`ObsLayout` it follows."""

    def __init__(self, layout: ObsLayout, **kwargs: Any) -> None:
        super().__init__(0.0, 1.0, shape=(layout.size,), dtype=np.float32, **kwargs)
        self.layout = layout

    def __repr__(self) -> str:
        lay = self.layout
        return (
            f"LayoutBox({lay.num_slots} x {lay.slot_size} slot fields + "
            f"{lay.global_size} global, shape={self.shape})"
        )


def layout_of(space: spaces.Space) -> ObsLayout | None:
    """The :class:`ObsLayout` a space carries (None for a plain space)."""
    layout = getattr(space, "layout", None)
    return layout if isinstance(layout, ObsLayout) else None


def repeated(names: Sequence[str], count: int, fmt: str) -> list[str]:
    """``[fmt.format(i=i, name=n) for i in range(count) for n in names]`` (indexed groups)."""
    return [fmt.format(i=i, name=n) for i in range(count) for n in names]
