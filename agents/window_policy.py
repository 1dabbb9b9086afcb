"""What the two window networks share: the action layout, the pooled slot encoder, the critic, the SB3 plumbing.

The slot network (:mod:`agents.policies`, for the codecs that address slots) and the set network
(:mod:`agents.set_policy`, for the job-at-a-time codecs) both read the ``HetCluster`` window as K job
slots plus global features, and both are SB3 actor-critic policies whose action head is replaced by a
network of their own. The pieces they have in common live here, so that neither module imports the
other:

* :class:`SlotLayout`: how the codec's action space is laid out over the window's slots.
* :class:`PooledSlotEncoder`: the base of both features extractors: one MLP shared across slots,
  optional self-attention across the occupied slots (padding slots masked out), and a context that
  pools the occupied slots' embeddings (mean and max) with the global features.
* :class:`ContextLatent`: SB3's ``mlp_extractor`` of both: the actor reads every feature, the critic
  the context.
* :class:`WindowPolicyMixin`: the SB3 policy plumbing (the mixin comes first in the bases): the
  extractor's arguments, the optimiser over the replaced action head, the constructor parameters a
  saved model is rebuilt from, and deterministic actions by the network's own decoding. For the type
  checker it extends :class:`SB3PolicyHost`, what it uses of the SB3 class after it in the bases.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.policies import ActorCriticPolicy, BasePolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor, MlpExtractor
from stable_baselines3.common.type_aliases import Schedule
from stable_baselines3.common.vec_env import VecEnv
from torch import nn

#: The codec names that decide one job at a time (``Discrete``, the same numbering): ``jobwise`` and its alias
#: ``jobwise-types`` (``several_types=True``), the set network's (:mod:`agents.set_policy`).
JOBWISE_CODECS: tuple[str, ...] = ("jobwise", "jobwise-types")


@dataclass(frozen=True)
class SlotLayout:
    """How the action space is laid out over the window's slots (from the environment's codec).

    Attributes:
        codec: ``sequential`` (``Discrete``) or ``multidiscrete``.
        num_slots: K.
        num_types: T.
        num_levels: C, the count levels.
        reject: Whether there are reject actions (flags).
        num_modes: M, the execution modes (mode actions exist when M > 1).
        capacity: GPUs of each type (to read the draft's counts from ``job_alloc``).
        levels: The count levels.
    """

    codec: str
    num_slots: int
    num_types: int
    num_levels: int
    reject: bool
    num_modes: int
    capacity: tuple[int, ...] = ()
    levels: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "capacity", tuple(int(c) for c in self.capacity))
        object.__setattr__(self, "levels", tuple(int(c) for c in self.levels))
        if self.capacity and len(self.capacity) != self.num_types:
            raise ValueError(f"capacity {self.capacity} does not list the {self.num_types} GPU types")
        if self.levels and len(self.levels) != self.num_levels:
            raise ValueError(f"levels {self.levels} are not the {self.num_levels} count levels")

    @property
    def passes(self) -> tuple[str, ...]:
        """The sequential codec's edit kinds in the order an expert's plan takes them."""
        out = ["reject"] if self.reject else []
        out.append("decrease")
        if self.num_modes > 1:
            out.append("mode")
        return (*out, "increase")

    @property
    def per_slot(self) -> int:
        """Logits each slot contributes."""
        n = self.num_types * self.num_levels
        if self.codec == "sequential":
            n += int(self.reject)
        else:
            n += 2 * int(self.reject)
        if self.num_modes > 1:
            n += self.num_modes
        return n

    @property
    def num_logits(self) -> int:
        """All logits (the commit's included for the sequential codec)."""
        return self.num_slots * self.per_slot + (1 if self.codec == "sequential" else 0)

    @classmethod
    def of_env(cls, env: Any) -> SlotLayout:
        """The layout of a ``HetClusterEnv`` (possibly wrapped, or the first of an SB3 vector env)."""
        if isinstance(env, VecEnv):
            codec = env.get_attr("codec", [0])[0]
            capacity = env.get_attr("state", [0])[0].capacity
        else:
            base = env.unwrapped if hasattr(env, "unwrapped") else env
            codec, capacity = base.codec, base.state.capacity
        return cls(
            codec=str(codec.name),
            num_slots=int(codec.num_slots),
            num_types=int(codec.num_types),
            num_levels=len(codec.levels),
            reject=bool(codec.allow_reject),
            num_modes=len(codec.modes),
            capacity=tuple(int(c) for c in capacity),
            levels=tuple(int(v) for v in codec.levels),
        )


class PooledSlotEncoder(BaseFeaturesExtractor):
    """Base of the window networks' features extractors: shared slot MLP, masked attention, pooled context.

    A subclass calls :meth:`_build_pooling` where it creates its modules and :meth:`_pool` in its
    ``forward``, with the slots' inputs (each slot's features with the global features appended).
    """

    def _build_pooling(self, slot_dim: int, global_dim: int, hidden: int, attention_layers: int, heads: int) -> None:
        """The shared slot MLP (``encoder``), ``attention_layers`` transformer layers and the ``context`` MLP."""
        self.encoder = nn.Sequential(
            nn.Linear(slot_dim + global_dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU()
        )
        self.attention: nn.Module | None = None
        if attention_layers > 0:
            layer = nn.TransformerEncoderLayer(hidden, heads, 2 * hidden, dropout=0.0, batch_first=True)
            self.attention = nn.TransformerEncoder(layer, attention_layers, enable_nested_tensor=False)
        self.context = nn.Sequential(nn.Linear(2 * hidden + global_dim, hidden), nn.ReLU())

    def _pool(self, x: th.Tensor, used: th.Tensor, glob: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        """The slot embeddings (zero on empty slots) and the context, for inputs ``x`` ``(batch, K, in)``,
        occupancy ``used`` ``(batch, K, 1)`` and global features ``glob`` ``(batch, G)``."""
        h = self.encoder(x)
        if self.attention is not None:
            # Padding slots are hidden from attention (an all-empty window attends to itself unmasked).
            pad = ~used.squeeze(2) & used.squeeze(2).any(dim=1, keepdim=True)
            h = self.attention(h, src_key_padding_mask=pad)
        h = h * used
        mean = h.sum(dim=1) / used.sum(dim=1).clamp(min=1)
        top = th.where(used, h, th.full_like(h, -1e4)).max(dim=1).values
        top = th.where(used.any(dim=1), top, th.zeros_like(top))
        return h, self.context(th.cat([mean, top, glob], dim=1))


class ContextLatent(MlpExtractor):
    """SB3's ``mlp_extractor`` of the window networks: the actor reads everything, the critic the context.

    An ``MlpExtractor`` (the type SB3's policies give their ``mlp_extractor``) without layers of its own:
    its ``policy_net`` and ``value_net`` are empty, hold no parameters and draw no random numbers, so the
    weights and their names are the critic layer's alone.

    Args:
        latent_dim_pi: The features' width (what the actor reads).
        ctx_at: Where the context starts in the features.
        hidden: The context's width.
    """

    def __init__(self, latent_dim_pi: int, ctx_at: int, hidden: int) -> None:
        super().__init__(latent_dim_pi, net_arch=[], activation_fn=nn.ReLU, device="cpu")
        self.hidden = hidden
        self.ctx_at = ctx_at
        self.latent_dim_pi = latent_dim_pi
        self.latent_dim_vf = hidden
        self.value = nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU())

    def forward(self, features: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        return self.forward_actor(features), self.forward_critic(features)

    def forward_actor(self, features: th.Tensor) -> th.Tensor:
        return features

    def forward_critic(self, features: th.Tensor) -> th.Tensor:
        return self.value(features[:, self.ctx_at : self.ctx_at + self.hidden])


def ortho_init_head(head: nn.Module) -> None:
    """SB3's orthogonal initialisation of a two-layer head (gain sqrt 2, then 0.01 on the output layer)."""
    assert isinstance(head, nn.Sequential)
    head[0].apply(partial(ActorCriticPolicy.init_weights, gain=np.sqrt(2)))
    head[2].apply(partial(ActorCriticPolicy.init_weights, gain=0.01))


class SB3PolicyHost(BasePolicy):
    """What :class:`WindowPolicyMixin` uses of the SB3 actor-critic policy after it in the bases
    (``ActorCriticPolicy`` or sb3-contrib's ``MaskableActorCriticPolicy``), for the type checker only.

    Both derive from SB3's ``BasePolicy`` and add these attributes and methods, which no common base
    declares (``get_distribution`` takes the action masks in the maskable one only), so the mixin names
    them here; at run time the mixin's base is ``object`` and each name is the SB3 class's own.
    """

    ortho_init: bool
    features_dim: int
    mlp_extractor: MlpExtractor
    action_net: nn.Module

    def __init__(
        self,
        observation_space: spaces.Space[Any],
        action_space: spaces.Space[Any],
        lr_schedule: Schedule,
        **kwargs: Any,
    ) -> None:
        super().__init__(observation_space, action_space)

    def _predict(self, observation: Any, deterministic: bool = False) -> th.Tensor:
        raise NotImplementedError

    def get_distribution(self, obs: Any, action_masks: np.ndarray | None = None) -> Any:
        raise NotImplementedError

    def _build(self, lr_schedule: Schedule) -> None:
        raise NotImplementedError

    def _get_constructor_parameters(self) -> dict[str, Any]:
        raise NotImplementedError


if TYPE_CHECKING:
    _PolicyHost = SB3PolicyHost
else:
    _PolicyHost = object


class WindowPolicyMixin(_PolicyHost):
    """The SB3 plumbing of the window networks' policy classes (the mixin comes first in their bases).

    A network's own mixin subclasses this one: its ``__init__`` calls :meth:`_init_window` and then the
    SB3 class's ``__init__`` with :meth:`_window_kwargs`; it defines ``_replace_action_net`` (which ends
    with :meth:`_optimise_all`), ``_extra_parameters`` (what its constructor takes besides the layout,
    the width and the attention layers), ``deterministic_from_logits`` and ``_own_decoding``.
    """

    slot_layout: SlotLayout
    slot_hidden: int
    slot_attention_layers: int

    def _init_window(self, layout: SlotLayout, hidden: int, attention_layers: int) -> None:
        self.slot_layout = layout
        self.slot_hidden = int(hidden)
        self.slot_attention_layers = int(attention_layers)

    def _window_kwargs(
        self, kwargs: dict[str, Any], extractor: type[BaseFeaturesExtractor], first: dict[str, Any]
    ) -> dict[str, Any]:
        """SB3's keyword arguments: ``kwargs`` with no MLP and ``extractor`` (``first``, width, attention)."""
        out = dict(kwargs)
        out["net_arch"] = []
        out["features_extractor_class"] = extractor
        out["features_extractor_kwargs"] = {
            **first,
            "hidden": self.slot_hidden,
            "attention_layers": self.slot_attention_layers,
        }
        out.setdefault("activation_fn", nn.ReLU)
        return out

    def _optimise_all(self, lr_schedule: Any) -> None:
        """A new optimiser, over the parameters of the replaced action head too."""
        # As a callable: torch types Optimizer.__init__ without the lr that every optimiser SB3 takes has.
        make_optimizer: Callable[..., th.optim.Optimizer] = self.optimizer_class
        self.optimizer = make_optimizer(self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs)

    def _replace_action_net(self, lr_schedule: Any) -> None:
        raise NotImplementedError

    def _extra_parameters(self) -> dict[str, Any]:
        raise NotImplementedError

    def deterministic_from_logits(self, masked_logits: th.Tensor) -> th.Tensor:
        raise NotImplementedError

    def _own_decoding(self) -> bool:
        """Whether deterministic actions come from :meth:`deterministic_from_logits` (else SB3's argmax)."""
        raise NotImplementedError

    def _build(self, lr_schedule: Any) -> None:
        super()._build(lr_schedule)
        self._replace_action_net(lr_schedule)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data: dict[str, Any] = super()._get_constructor_parameters()
        for key in ("net_arch", "features_extractor_class", "features_extractor_kwargs"):
            data.pop(key, None)
        data.update(
            slot_layout=asdict(self.slot_layout),
            hidden=self.slot_hidden,
            attention_layers=self.slot_attention_layers,
            **self._extra_parameters(),
        )
        return data

    def _predict(
        self, observation: Any, deterministic: bool = False, action_masks: np.ndarray | None = None
    ) -> th.Tensor:
        if action_masks is None:
            dist = self.get_distribution(observation)
        else:
            dist = self.get_distribution(observation, action_masks)
        if deterministic and self._own_decoding():
            return self.deterministic_from_logits(dist.distribution.logits)
        return dist.get_actions(deterministic=deterministic)


__all__ = [
    "JOBWISE_CODECS",
    "ContextLatent",
    "PooledSlotEncoder",
    "SB3PolicyHost",
    "SlotLayout",
    "WindowPolicyMixin",
    "ortho_init_head",
]
