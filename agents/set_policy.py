"""An order-invariant set network for the job-at-a-time codecs (``jobwise``, ``jobwise-types``), as SB3 policies.

The job-at-a-time codec presents the window's jobs one at a time; each action decides the *current* job
(the slot the observation's ``slot_cursor`` marks): run it on a count level of one GPU type in a mode,
give it no GPUs, keep its draft, reject it, or stop (``done``). Its ``Discrete`` action space
(:class:`hetgym.envs.codecs.JobwiseCodec`) does not address slots, so the slot network of
:mod:`agents.policies`, whose heads score each slot's own actions, does not apply. Following Decima
(Mao et al., "Learning Scheduling Algorithms for Data Processing Clusters", SIGCOMM 2019), which embeds
a variable set of jobs with shared networks and scores actions from the embedding of what they act on
plus a pooled summary, this network treats the window as a set:

* :class:`SetExtractor`: one MLP shared across slots embeds each slot (every per-slot key, ``job_*``,
  ``slot_used`` and ``slot_cursor``, with the global features: cluster, clock, queue); optional
  self-attention layers across the occupied slots (empty slots are masked out); a context pools the
  occupied slots' embeddings (masked mean and max) with the global features. No slot position is
  encoded, so the output does not depend on the slots' order. The current job's embedding is read
  at the cursor. For every (GPU type t, count level c >= 1) pair it gathers what that set action would
  act on: the cluster's features of type t, the current job's per-type features at t (``job_speed``,
  ``job_current``, ``job_alloc``) and, with the ``window-levels`` observation, its per-level features
  at (t, c) (``job_level_rate``, ``job_level_slack``), plus the type and level (one-hot, and the level
  as a share of the type's capacity).
* :class:`SetActionNet`: one head shared across the (t, c) pairs scores the M modes of each pair's set
  action from [current job, context, pair features]; a second head scores ``none``, ``keep``,
  ``reject`` (with ``allow_reject``) and ``done`` from [current job, context]. The logits follow the
  codec's action numbering, so SB3's (masked) categorical distribution applies unchanged.
* :class:`SetLatent`: the critic reads the context only (pooled slots and global features).
* Deterministic actions (``decoding``): ``argmax``, the likeliest action, or ``kind-first``
  (:func:`kind_first_argmax`): the likeliest *kind* of action first (a GPU set action, summed over
  its (t, c, m) choices, against none, keep, reject and done), then the likeliest action of that kind.
  Sampling is the same under both.

The ``jobwise-types`` codec numbers its actions as ``jobwise`` does (a set action there adds a GPU type to the
current job until ``keep`` ends its turn), so the same network serves it unchanged; the types a turn has
given show in the current job's ``job_alloc`` and in the mask.

Permuting the slots other than the current one (or all of them, the cursor moving with its slot)
leaves the logits and the value unchanged up to floating-point summation order
(``tests/agents/test_set_policy.py``). The price is that the network cannot tell from a slot's place
whether its job was already decided this epoch; it sees the draft (``job_alloc``) instead.

:class:`SetActorCriticPolicy` (PPO) and :class:`MaskableSetActorCriticPolicy` (MaskablePPO) hold the same
modules under the same names, so a clone saved for one loads into the other.
:func:`agents.policies.policy_spec` picks them for ``arch="set"``, and for ``arch="slot"`` when the
codec is ``jobwise``.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.policies import ActorCriticPolicy
from torch import nn

from agents.window_policy import (
    JOBWISE_CODECS,
    ContextLatent,
    PooledSlotEncoder,
    SlotLayout,
    WindowPolicyMixin,
    ortho_init_head,
)
from hetgym.envs.observations import SLOT_TYPE_FEATURES, TYPE_FEATURES

#: The codec this network was built for; it serves every codec of :data:`~agents.window_policy.JOBWISE_CODECS`
#: (``jobwise-types`` numbers its actions the same way).
JOBWISE = "jobwise"
#: Deterministic decodings of the set policies (see :func:`kind_first_argmax`).
DECODINGS: tuple[str, ...] = ("argmax", "kind-first")
#: Per-(slot, type, level) observation keys (``window-levels``), entry ``(k*T + t)*C + c``.
LEVEL_KEY_PREFIX = "job_level_"


def jobwise_num_set(layout: SlotLayout) -> int:
    """The ``T * (C - 1) * M`` set actions (type, count level >= 1, mode) that open the codec's numbering."""
    return layout.num_types * (layout.num_levels - 1) * layout.num_modes


def jobwise_num_actions(layout: SlotLayout) -> int:
    """``T * (C - 1) * M`` set actions, then none, keep, [reject], done."""
    return jobwise_num_set(layout) + 3 + int(layout.reject)


def kind_first_argmax(logits: th.Tensor, num_set: int) -> th.Tensor:
    """Deterministic jobwise actions: the likeliest kind of action, then the likeliest action of that kind.

    The kinds are the ``num_set`` GPU set actions taken together (run the job on some type and count) and
    each of the other actions alone (none, keep, reject, done). The flat argmax keeps a running job
    whenever the policy is unsure *which* reallocation to make, its probability spread over many set
    actions each below ``keep``'s, even when some reallocation is likelier than keeping; deciding the
    kind first takes the likelier branch (ties go to the single action). ``logits`` are already masked
    (a masked action has probability 0), ``(..., num_set + 3 [+ 1])``.
    """
    if not 0 < num_set < logits.shape[-1]:
        raise ValueError(f"num_set={num_set} must leave at least one set and one other action of {logits.shape[-1]}")
    probs = th.softmax(logits, dim=-1)
    set_best = logits[..., :num_set].argmax(dim=-1)
    other_best = logits[..., num_set:].argmax(dim=-1) + num_set
    set_prob = probs[..., :num_set].sum(dim=-1)
    other_prob = probs.gather(-1, other_best.unsqueeze(-1)).squeeze(-1)
    return th.where(set_prob > other_prob, set_best, other_best)


def check_decoding(decoding: str) -> str:
    """``decoding`` if it is one of :data:`DECODINGS`, else a ``ValueError`` naming them."""
    if decoding not in DECODINGS:
        raise ValueError(f"unknown decoding {decoding!r}; use one of {DECODINGS}")
    return decoding


def _layout(slot_layout: dict[str, Any] | SlotLayout) -> SlotLayout:
    layout = slot_layout if isinstance(slot_layout, SlotLayout) else SlotLayout(**slot_layout)
    if layout.codec not in JOBWISE_CODECS:
        raise ValueError(
            f"the set network decides one job at a time (codec='jobwise' or 'jobwise-types'), not "
            f"codec={layout.codec!r}; "
            "use arch='slot' (--arch slot) or 'mlp' with that codec"
        )
    if not (layout.capacity and layout.levels):
        raise ValueError("the set network needs the layout's capacity and levels (SlotLayout.of_env)")
    return layout


def _is_slot_key(key: str) -> bool:
    return key.startswith("job_") or key in ("slot_used", "slot_cursor")


class SetExtractor(PooledSlotEncoder):
    """Shared per-slot encoder, optional masked self-attention, pooled context, current job and pair features.

    Output, one row per observation: the current job's embedding (``hidden``), the context (``hidden``),
    then the features of every (type t, level c >= 1) pair, ``(T, C - 1, pair_dim)`` flattened (see the
    module docstring).

    Args:
        observation_space: The environment's ``Dict`` observation (with ``slot_cursor``: the jobwise codec).
        slot_layout: The codec's :class:`~agents.window_policy.SlotLayout` (or its fields).
        hidden: Width of the slot embeddings and the context.
        attention_layers: Transformer encoder layers across slots (0: none).
        heads: Attention heads.
    """

    def __init__(
        self,
        observation_space: spaces.Dict,
        slot_layout: dict[str, Any] | SlotLayout,
        hidden: int = 128,
        attention_layers: int = 0,
        heads: int = 4,
    ) -> None:
        if not isinstance(observation_space, spaces.Dict):
            raise TypeError("the set network reads a Dict observation (a HetCluster window)")
        layout = _layout(slot_layout)
        for key in ("slot_used", "slot_cursor"):
            if key not in observation_space.spaces:
                raise ValueError(
                    f"the observation has no {key!r} key; the set network needs the window observation of "
                    "codec='jobwise' or 'jobwise-types' (whose slot_cursor marks the job being decided)"
                )
        k, t, c = layout.num_slots, layout.num_types, layout.num_levels
        sizes = {key: int(np.prod(space.shape or (1,))) for key, space in observation_space.spaces.items()}
        self.slot_keys = [key for key in sizes if _is_slot_key(key)]
        self.global_keys = [key for key in sizes if not _is_slot_key(key)]
        for key in self.slot_keys:
            if sizes[key] % k:
                raise ValueError(f"observation key {key!r} has {sizes[key]} entries, not a multiple of K={k}")
        self.cluster_keys = [key for key in TYPE_FEATURES if sizes.get(key) == t]
        self.type_keys = [key for key in SLOT_TYPE_FEATURES if sizes.get(key) == k * t]
        self.level_keys = [key for key in self.slot_keys if key.startswith(LEVEL_KEY_PREFIX)]
        for key in self.level_keys:
            if sizes[key] != k * t * c:
                raise ValueError(f"observation key {key!r} has {sizes[key]} entries, not K*T*C={k * t * c}")
        # Type one-hot, level one-hot (levels 1..C-1), and the level's GPUs / the type's capacity.
        levels = np.asarray(layout.levels[1:], dtype=np.float32)
        capacity = np.asarray(layout.capacity, dtype=np.float32)
        static = np.concatenate(
            [
                np.broadcast_to(np.eye(t, dtype=np.float32)[:, None, :], (t, c - 1, t)),
                np.broadcast_to(np.eye(c - 1, dtype=np.float32)[None, :, :], (t, c - 1, c - 1)),
                np.minimum(1.0, levels[None, :] / np.maximum(capacity[:, None], 1.0))[:, :, None],
            ],
            axis=2,
        )
        self.pair_dim = len(self.cluster_keys) + len(self.type_keys) + len(self.level_keys) + static.shape[2]
        super().__init__(observation_space, features_dim=2 * hidden + t * (c - 1) * self.pair_dim)
        self.num_slots, self.num_types, self.num_levels = k, t, c
        self.hidden = hidden
        self.static: th.Tensor
        self.register_buffer("static", th.as_tensor(static.copy()).unsqueeze(0))
        slot_dim = sum(sizes[key] // k for key in self.slot_keys)
        global_dim = sum(sizes[key] for key in self.global_keys)
        self._build_pooling(slot_dim, global_dim, hidden, attention_layers, heads)

    def forward(self, observations: dict[str, th.Tensor]) -> th.Tensor:
        k, t, c = self.num_slots, self.num_types, self.num_levels
        batch = observations["slot_used"].shape[0]
        glob = th.cat([observations[key].reshape(batch, -1) for key in self.global_keys], dim=1)
        slots = [observations[key].reshape(batch, k, -1) for key in self.slot_keys]
        used = observations["slot_used"].reshape(batch, k, 1) > 0.5
        h, ctx = self._pool(th.cat([*slots, glob.unsqueeze(1).expand(batch, k, glob.shape[1])], dim=2), used, glob)
        # The cursor is one-hot (all zero once no job is left): weighting by it gathers the current slot.
        cursor = observations["slot_cursor"].reshape(batch, k, 1)
        current = (h * cursor).sum(dim=1)
        pair = [self.static.expand(batch, t, c - 1, self.static.shape[3])]
        for key in self.cluster_keys:
            pair.append(observations[key].reshape(batch, t, 1, 1).expand(batch, t, c - 1, 1))
        for key in self.type_keys:
            mine = (observations[key].reshape(batch, k, t) * cursor).sum(dim=1)
            pair.append(mine.reshape(batch, t, 1, 1).expand(batch, t, c - 1, 1))
        for key in self.level_keys:
            mine = (observations[key].reshape(batch, k, t * c) * cursor).sum(dim=1)
            pair.append(mine.reshape(batch, t, c, 1)[:, :, 1:])
        pairs = th.cat(pair, dim=3)
        return th.cat([current, ctx, pairs.reshape(batch, -1)], dim=1)


class SetLatent(ContextLatent):
    """SB3's ``mlp_extractor`` for the set network: the actor reads everything, the critic the context
    (after the current job's embedding)."""

    def __init__(self, features_dim: int, hidden: int) -> None:
        super().__init__(features_dim, hidden, hidden)


class SetActionNet(nn.Module):
    """The jobwise codec's logits: a head shared over (type, level) pairs, and one for the other actions.

    Output layout (the codec's): set action ``((t * (C - 1)) + (c - 1)) * M + m`` for type t, level
    c >= 1 and mode m, then none, keep, [reject], done.
    """

    def __init__(self, layout: SlotLayout, hidden: int, pair_dim: int) -> None:
        super().__init__()
        self.layout = _layout(layout)
        self.hidden = hidden
        self.pair_dim = pair_dim
        self.num_pairs = layout.num_types * (layout.num_levels - 1)
        self.pair_head = nn.Sequential(
            nn.Linear(2 * hidden + pair_dim, hidden), nn.ReLU(), nn.Linear(hidden, layout.num_modes)
        )
        self.job_head = nn.Sequential(
            nn.Linear(2 * hidden, hidden), nn.ReLU(), nn.Linear(hidden, 3 + int(layout.reject))
        )

    def forward(self, latent: th.Tensor) -> th.Tensor:
        batch, hdim = latent.shape[0], self.hidden
        job = latent[:, : 2 * hdim]  # the current job's embedding and the context
        pairs = latent[:, 2 * hdim :].reshape(batch, self.num_pairs, self.pair_dim)
        x = th.cat([job.unsqueeze(1).expand(batch, self.num_pairs, 2 * hdim), pairs], dim=2)
        return th.cat([self.pair_head(x).reshape(batch, -1), self.job_head(job)], dim=1)


class _SetPolicyMixin(WindowPolicyMixin):
    """What the two set policy classes share (the mixin comes first in their bases)."""

    def __init__(
        self,
        observation_space: spaces.Space[Any],
        action_space: spaces.Space[Any],
        lr_schedule: Any,
        slot_layout: dict[str, Any] | SlotLayout,
        hidden: int = 128,
        attention_layers: int = 0,
        decoding: str = "argmax",
        **kwargs: Any,
    ) -> None:
        self._init_window(_layout(slot_layout), hidden, attention_layers)
        self.decoding = check_decoding(decoding)
        extractor_kwargs = {"slot_layout": asdict(self.slot_layout)}
        super().__init__(
            observation_space, action_space, lr_schedule, **self._window_kwargs(kwargs, SetExtractor, extractor_kwargs)
        )

    def deterministic_from_logits(self, masked_logits: th.Tensor) -> th.Tensor:
        """The deterministic action for (masked) logits under :attr:`decoding`."""
        if self.decoding == "kind-first":
            return kind_first_argmax(masked_logits, jobwise_num_set(self.slot_layout))
        return masked_logits.argmax(dim=-1)

    def _own_decoding(self) -> bool:
        return True  # the plain argmax too is taken over the logits

    def _build_mlp_extractor(self) -> None:
        self.mlp_extractor = SetLatent(self.features_dim, self.slot_hidden)

    def _replace_action_net(self, lr_schedule: Any) -> None:
        expected = jobwise_num_actions(self.slot_layout)
        space = self.action_space
        if not isinstance(space, spaces.Discrete) or int(space.n) != expected:
            raise ValueError(
                f"the jobwise layout {self.slot_layout} gives {expected} actions, the action space is {space}"
            )
        extractor = self.features_extractor
        if not isinstance(extractor, SetExtractor):
            raise TypeError(f"the set network reads its pairs from a SetExtractor, not {type(extractor).__name__}")
        net = SetActionNet(self.slot_layout, self.slot_hidden, extractor.pair_dim)
        self.action_net = net
        if self.ortho_init:
            for head in (net.pair_head, net.job_head):
                ortho_init_head(head)
        self._optimise_all(lr_schedule)

    def _extra_parameters(self) -> dict[str, Any]:
        return {"decoding": self.decoding}


class SetActorCriticPolicy(_SetPolicyMixin, ActorCriticPolicy):
    """The set network as an SB3 ``ActorCriticPolicy`` (PPO; actions are not masked).

    Args:
        observation_space: The jobwise window observation (``Dict`` with ``slot_cursor``).
        action_space: The codec's ``Discrete`` space.
        lr_schedule: SB3's learning-rate schedule.
        slot_layout: The codec's :class:`~agents.window_policy.SlotLayout` (or its fields as a dict).
        hidden: Width of the embeddings (128).
        attention_layers: Self-attention layers across slots (0).
        decoding: Deterministic actions by the plain ``argmax`` (default) or ``kind-first``
            (:func:`kind_first_argmax`); sampling is unaffected.
        **kwargs: Other ``ActorCriticPolicy`` arguments (``ortho_init``, ``optimizer_kwargs``, ...).
    """


class MaskableSetActorCriticPolicy(_SetPolicyMixin, MaskableActorCriticPolicy):
    """The set network as sb3-contrib's ``MaskableActorCriticPolicy`` (MaskablePPO, masked actions).

    Same arguments and parameter names as :class:`SetActorCriticPolicy`.
    """


def set_policy_spec(
    layout: SlotLayout,
    *,
    maskable: bool = True,
    hidden: int = 128,
    attention_layers: int = 0,
    decoding: str = "argmax",
) -> tuple[type[ActorCriticPolicy] | type[MaskableActorCriticPolicy], dict[str, Any]]:
    """The set policy class and its ``policy_kwargs`` for a jobwise layout (see :func:`agents.policies.policy_spec`)."""
    cls = MaskableSetActorCriticPolicy if maskable else SetActorCriticPolicy
    return cls, {
        "slot_layout": asdict(_layout(layout)),
        "hidden": hidden,
        "attention_layers": attention_layers,
        "decoding": check_decoding(decoding),
    }


__all__ = [
    "DECODINGS",
    "JOBWISE",
    "MaskableSetActorCriticPolicy",
    "SetActionNet",
    "SetActorCriticPolicy",
    "SetExtractor",
    "SetLatent",
    "check_decoding",
    "jobwise_num_actions",
    "jobwise_num_set",
    "kind_first_argmax",
    "set_policy_spec",
]
