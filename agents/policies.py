"""Policy networks for the ``HetCluster`` ids: a slot-structured actor-critic, as SB3 policy classes.

The environment's observation is a window of K job slots plus cluster-wide features, and its actions
address slots: the sequential codec's action ``(k*T + t)*C + c`` sets slot k's count on type t to level
c, the one-shot codec has a count level per slot and type. A flat MLP over the flattened observation has
to learn the same rule once per slot (and generalises poorly from a few episodes of demonstrations);
the slot network shares its weights across slots instead:

* :class:`SlotExtractor` (an SB3 ``BaseFeaturesExtractor``): every slot's features (the ``job_*`` keys
  and ``slot_used``, reshaped to ``(K, per-slot)``), its position in the window (slots are ordered most
  urgent first) and the global features (cluster, clock, queue) go through one shared MLP; optional
  self-attention layers let slots see each other; a context vector pools the occupied slots (mean and
  max) with the global features.
* :class:`SlotActionNet`: one shared head scores each slot's own actions (its set-actions, its
  reject and mode actions) from the slot's embedding and the context; the commit's logit comes from the
  context. The logits are laid out exactly as the codec numbers its actions, so SB3's (masked)
  categorical distributions apply unchanged.
* :func:`two_stage_argmax`: the deterministic sequential action (commit, or the likeliest edit when
  editing is likelier than committing), rather than the flat argmax.
* :class:`SlotActorCriticPolicy` (``ActorCriticPolicy``, for PPO) and
  :class:`MaskableSlotActorCriticPolicy` (sb3-contrib's ``MaskableActorCriticPolicy``, for
  MaskablePPO): the same modules under the same parameter names, so weights move between them, and a
  cloned policy loads straight into either algorithm. The value head reads the context.

:func:`policy_spec` chooses the algorithm's policy class and keyword arguments for an environment and an
architecture name (``slot``, ``slot-flat``, ``set`` or ``mlp``, SB3's ``MultiInputPolicy``); the job-at-a-time
codec's network, ``set``, is :mod:`agents.set_policy`. What the two networks share (:class:`SlotLayout`,
the pooled slot encoder, the critic's latent and the SB3 plumbing) is :mod:`agents.window_policy`.
"""

from __future__ import annotations

from dataclasses import asdict
from functools import partial
from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.policies import ActorCriticPolicy
from torch import nn
from torch.nn import functional as F

from agents.set_policy import set_policy_spec
from agents.window_policy import (
    JOBWISE_CODECS,
    ContextLatent,
    PooledSlotEncoder,
    SlotLayout,
    WindowPolicyMixin,
    ortho_init_head,
)

ARCHITECTURES: tuple[str, ...] = ("slot", "slot-flat", "set", "mlp")


def _is_slot_key(key: str) -> bool:
    return key.startswith("job_") or key == "slot_used"


class SlotExtractor(PooledSlotEncoder):
    """Shared per-slot encoder with optional self-attention and a pooled context.

    Output, flattened to one row per observation: the K slot embeddings (``hidden`` each, slot order),
    the context (``hidden``), then the draft as observed (``job_alloc``, ``slot_used``,
    ``job_rejected`` and, with several modes, ``job_mode``: ``K * (T + 2 [+ M])`` values) for the ordered
    action head.

    Args:
        observation_space: The environment's ``Dict`` observation space.
        num_slots: K.
        hidden: Width of the slot embeddings and the context.
        attention_layers: Transformer encoder layers across slots (0: none; each one is a few times
            slower than the rest of the network on a CPU).
        heads: Attention heads.
    """

    def __init__(
        self,
        observation_space: spaces.Dict,
        num_slots: int,
        hidden: int = 128,
        attention_layers: int = 0,
        heads: int = 4,
    ) -> None:
        if not isinstance(observation_space, spaces.Dict):
            raise TypeError("the slot network reads a Dict observation (a HetCluster window)")
        for key in ("slot_used", "job_alloc"):
            if key not in observation_space.spaces:
                raise ValueError(f"the observation has no {key!r} key; the slot network needs the window encoder")
        num_types = int(np.prod(observation_space["job_alloc"].shape or (1,))) // num_slots
        mode_space = observation_space.spaces.get("job_mode")
        num_modes = int(np.prod(mode_space.shape or (1,))) // num_slots if mode_space is not None else 0
        raw = num_slots * (num_types + 2 + num_modes)
        super().__init__(observation_space, features_dim=(num_slots + 1) * hidden + raw)
        self.num_modes = num_modes
        self.num_slots = num_slots
        self.num_types = num_types
        self.hidden = hidden
        self.slot_keys: list[str] = []
        self.global_keys: list[str] = []
        slot_dim = 1  # the slot's position in the window
        global_dim = 0
        for key, space in observation_space.spaces.items():
            size = int(np.prod(space.shape or (1,)))
            if _is_slot_key(key):
                if size % num_slots:
                    raise ValueError(f"observation key {key!r} has {size} entries, not a multiple of K={num_slots}")
                self.slot_keys.append(key)
                slot_dim += size // num_slots
            else:
                self.global_keys.append(key)
                global_dim += size
        self.position: th.Tensor
        self.register_buffer("position", th.linspace(0.0, 1.0, num_slots).reshape(1, num_slots, 1))
        self._build_pooling(slot_dim, global_dim, hidden, attention_layers, heads)

    def forward(self, observations: dict[str, th.Tensor]) -> th.Tensor:
        k = self.num_slots
        batch = observations["slot_used"].shape[0]
        parts = [observations[key].reshape(batch, k, -1) for key in self.slot_keys]
        parts.append(self.position.expand(batch, k, 1))
        glob = th.cat([observations[key].reshape(batch, -1) for key in self.global_keys], dim=1)
        x = th.cat([*parts, glob.unsqueeze(1).expand(batch, k, glob.shape[1])], dim=2)
        used = observations["slot_used"].reshape(batch, k, 1) > 0.5
        h, ctx = self._pool(x, used, glob)
        rejected = observations.get("job_rejected")
        raw = [
            observations["job_alloc"].reshape(batch, k * self.num_types),
            observations["slot_used"].reshape(batch, k),
            rejected.reshape(batch, k) if rejected is not None else th.zeros(batch, k),
        ]
        if self.num_modes:
            raw.append(observations["job_mode"].reshape(batch, k * self.num_modes))
        return th.cat([h.reshape(batch, k * self.hidden), ctx, *raw], dim=1)


class SlotLatent(ContextLatent):
    """SB3's ``mlp_extractor`` for the slot network: the actor reads everything, the critic the context."""

    def __init__(self, num_slots: int, num_types: int, num_modes: int, hidden: int) -> None:
        modes = num_modes if num_modes > 1 else 0
        latent_dim_pi = (num_slots + 1) * hidden + num_slots * (num_types + 2 + modes)
        super().__init__(latent_dim_pi, num_slots * hidden, hidden)


_NEG = -1e9  # a log-probability that is effectively minus infinity, without NaNs in gradients
HEADS: tuple[str, ...] = ("ordered", "flat")


class SlotActionNet(nn.Module):
    """Per-slot action scores from a shared head, as logits in the codec's action order.

    Output layout. Sequential codec: set-actions (slot-major, ``T*C`` per slot), reject actions (K),
    mode actions (``K*M`` when M > 1), commit. One-shot codec: the count levels of every (slot, type)
    dimension, the two reject-flag logits per slot, the M mode logits per slot (SB3's
    ``MultiCategorical`` reads its dimensions' logits concatenated in this order).

    ``head="flat"`` scores every action independently (the commit from the context). ``head="ordered"``
    (sequential codec only) gives the actions the probabilities of a scan in the order in which the
    codec sequences an allocation (rejections, then decreases, then mode changes, then increases, each
    in slot order; :meth:`hetgym.envs.SequentialCodec.plan`): every (kind, slot) pair in that order has a
    gate, the probability that the next action is of that kind on that slot given that no earlier pair
    fired, and a choice among the slot's actions of that kind (a decrease is a set-action whose level is
    below the slot's draft count on that type, an increase one above); the commit is the probability
    that no gate fires. The logits are these log-probabilities. What the head must learn is then local
    to a slot (does this job still need a change of this kind, and which), while "the first slot in
    window order that needs one", which an expert's next action is, comes from the structure.
    """

    def __init__(self, layout: SlotLayout, hidden: int, head: str = "ordered") -> None:
        super().__init__()
        if head not in HEADS:
            raise ValueError(f"unknown action head {head!r}; use one of {HEADS}")
        if head == "ordered" and layout.codec != "sequential":
            head = "flat"  # the one-shot codec decides every dimension at once: nothing to order
        if head == "ordered" and not (layout.capacity and layout.levels):
            raise ValueError("the ordered head needs the layout's capacity and levels (SlotLayout.of_env)")
        self.layout = layout
        self.hidden = hidden
        self.kind = head
        k, t, c = layout.num_slots, layout.num_types, layout.num_levels
        self.tc = t * c
        self.raw_at = (k + 1) * hidden
        if head == "flat":
            out = layout.per_slot
        else:
            out = t * c + len(layout.passes) + (layout.num_modes if layout.num_modes > 1 else 0)
            self.capacity: th.Tensor
            self.levels: th.Tensor
            self.register_buffer("capacity", th.tensor(layout.capacity, dtype=th.float32))
            self.register_buffer("levels", th.tensor(layout.levels, dtype=th.float32))
        self.head = nn.Sequential(nn.Linear(2 * hidden, hidden), nn.ReLU(), nn.Linear(hidden, out))
        self.commit = nn.Linear(hidden, 1) if (layout.codec == "sequential" and head == "flat") else None

    def close_gates(self, bias: float = -4.0) -> None:
        """Start the ordered head's gates nearly closed (probability 0.018 each), so an untrained policy
        commits often, as experts mostly do, instead of editing the draft up to the per-epoch cap."""
        if self.kind == "ordered":
            t, c = self.layout.num_types, self.layout.num_levels
            last = self.head[2]
            assert isinstance(last, nn.Linear)
            with th.no_grad():
                last.bias[t * c : t * c + len(self.layout.passes)] = bias

    def forward(self, latent: th.Tensor) -> th.Tensor:
        lay, hdim = self.layout, self.hidden
        k = lay.num_slots
        batch = latent.shape[0]
        h = latent[:, : k * hdim].reshape(batch, k, hdim)
        ctx = latent[:, k * hdim : (k + 1) * hdim]
        per = self.head(th.cat([h, ctx.unsqueeze(1).expand(batch, k, hdim)], dim=2))
        if self.kind == "ordered":
            return self._ordered(per, latent[:, self.raw_at :])
        tc = self.tc
        pieces = [per[:, :, :tc].reshape(batch, k * tc)]
        at = tc
        width = (1 if lay.codec == "sequential" else 2) if lay.reject else 0
        if width:
            pieces.append(per[:, :, at : at + width].reshape(batch, k * width))
            at += width
        if lay.num_modes > 1:
            pieces.append(per[:, :, at : at + lay.num_modes].reshape(batch, k * lay.num_modes))
        if self.commit is not None:
            pieces.append(self.commit(ctx))
        return th.cat(pieces, dim=1)

    def _ordered(self, per: th.Tensor, raw: th.Tensor) -> th.Tensor:
        lay = self.layout
        batch, k = per.shape[0], lay.num_slots
        t, c, m = lay.num_types, lay.num_levels, lay.num_modes
        passes = lay.passes
        draft = th.round(raw[:, : k * t].reshape(batch, k, t) * self.capacity)
        used = raw[:, k * t : k * t + k] > 0.5
        live = used & ~(raw[:, k * t + k : k * t + 2 * k] > 0.5)
        level = self.levels.reshape(1, 1, 1, c)
        down = (level < draft.unsqueeze(3)) & live.reshape(batch, k, 1, 1)
        up = (level > draft.unsqueeze(3)) & live.reshape(batch, k, 1, 1)
        choice = per[:, :, : t * c].reshape(batch, k, t, c)
        gates = per[:, :, t * c : t * c + len(passes)]
        available = {
            "reject": live,
            "decrease": down.flatten(2).any(dim=2),
            "mode": live,
            "increase": up.flatten(2).any(dim=2),
        }
        fire, stay = [], []
        for i, kind in enumerate(passes):
            ok = available[kind]
            g = gates[:, :, i]
            fire.append(th.where(ok, F.logsigmoid(g), th.full_like(g, _NEG)))
            stay.append(th.where(ok, F.logsigmoid(-g), th.zeros_like(g)))
        stay_all = th.stack(stay, dim=1).reshape(batch, len(passes) * k)
        before = th.cumsum(stay_all, dim=1) - stay_all  # log P(no earlier gate fired), scan order
        start = before.reshape(batch, len(passes), k) + th.stack(fire, dim=1)
        commit = stay_all.sum(dim=1, keepdim=True)
        p_dec, p_inc = passes.index("decrease"), passes.index("increase")
        flat = choice.reshape(batch, k, t * c)
        dec_lp = F.log_softmax(flat.masked_fill(~down.reshape(batch, k, t * c), _NEG), dim=2)
        inc_lp = F.log_softmax(flat.masked_fill(~up.reshape(batch, k, t * c), _NEG), dim=2)
        set_lp = th.where(
            down.reshape(batch, k, t * c),
            start[:, p_dec].unsqueeze(2) + dec_lp,
            th.where(up.reshape(batch, k, t * c), start[:, p_inc].unsqueeze(2) + inc_lp, th.full_like(dec_lp, _NEG)),
        )
        pieces = [set_lp.reshape(batch, k * t * c)]
        if lay.reject:
            pieces.append(start[:, passes.index("reject")])
        if m > 1:
            current = raw[:, k * (t + 2) : k * (t + 2 + m)].reshape(batch, k, m) > 0.5  # the draft's mode
            mode_lp = F.log_softmax(per[:, :, t * c + len(passes) :].masked_fill(current, _NEG), dim=2)
            pieces.append((start[:, passes.index("mode")].unsqueeze(2) + mode_lp).reshape(batch, k * m))
        pieces.append(commit)
        return th.cat(pieces, dim=1)


def two_stage_argmax(logits: th.Tensor) -> th.Tensor:
    """Deterministic sequential actions: commit if its probability is at least 1/2, else the likeliest edit.

    The flat argmax over a sequential codec's actions favours the commit whenever the policy is unsure
    which edit to make (its probability spread over many set-actions, each below the commit's) even
    when editing is more likely than committing. Deciding in two stages, commit or edit and then which
    edit, takes the most likely branch at each stage. ``logits`` are already masked.
    """
    probs = th.softmax(logits, dim=-1)
    commit = logits.shape[-1] - 1
    edit = logits[..., :commit].argmax(dim=-1)
    return th.where(probs[..., commit] >= 0.5, th.full_like(edit, commit), edit)


class _SlotPolicyMixin(WindowPolicyMixin):
    """What the two slot policy classes share (the mixin comes first in their bases)."""

    def __init__(
        self,
        observation_space: spaces.Space[Any],
        action_space: spaces.Space[Any],
        lr_schedule: Any,
        slot_layout: dict[str, Any] | SlotLayout,
        hidden: int = 128,
        attention_layers: int = 0,
        head: str = "ordered",
        two_stage: bool = True,
        **kwargs: Any,
    ) -> None:
        layout = slot_layout if isinstance(slot_layout, SlotLayout) else SlotLayout(**slot_layout)
        if head not in HEADS:
            raise ValueError(f"unknown action head {head!r}; use one of {HEADS}")
        self.slot_head = head
        self.two_stage = bool(two_stage) and layout.codec == "sequential"
        self._init_window(layout, hidden, attention_layers)
        extractor_kwargs = {"num_slots": layout.num_slots}
        super().__init__(
            observation_space, action_space, lr_schedule, **self._window_kwargs(kwargs, SlotExtractor, extractor_kwargs)
        )

    def deterministic_from_logits(self, masked_logits: th.Tensor) -> th.Tensor:
        """The deterministic action for (masked) logits: :func:`two_stage_argmax` or the plain argmax."""
        if self.two_stage:
            return two_stage_argmax(masked_logits)
        return masked_logits.argmax(dim=-1)

    def _own_decoding(self) -> bool:
        return self.two_stage

    def _build_mlp_extractor(self) -> None:
        lay = self.slot_layout
        self.mlp_extractor = SlotLatent(lay.num_slots, lay.num_types, lay.num_modes, self.slot_hidden)

    def _replace_action_net(self, lr_schedule: Any) -> None:
        expected = self.slot_layout.num_logits
        space = self.action_space
        if isinstance(space, spaces.Discrete):
            have = int(space.n)
        elif isinstance(space, spaces.MultiDiscrete):
            have = int(np.sum(space.nvec))
        else:
            raise ValueError(f"the slot network acts in a Discrete or MultiDiscrete space, not {space}")
        if have != expected:
            raise ValueError(
                f"the slot layout {self.slot_layout} gives {expected} logits, the action space {have}: the slot "
                "network has heads for the 'sequential' and 'multidiscrete' codecs only; use arch='set' "
                "(--arch set) with 'jobwise' or 'jobwise-types', arch='mlp' (--arch mlp) with another codec"
            )
        net = SlotActionNet(self.slot_layout, self.slot_hidden, self.slot_head)
        self.action_net = net
        if self.ortho_init:
            ortho_init_head(net.head)
            if net.commit is not None:
                net.commit.apply(partial(ActorCriticPolicy.init_weights, gain=0.01))
        net.close_gates()
        self._optimise_all(lr_schedule)

    def _extra_parameters(self) -> dict[str, Any]:
        return {"head": self.slot_head, "two_stage": self.two_stage}


class SlotActorCriticPolicy(_SlotPolicyMixin, ActorCriticPolicy):
    """The slot network as an SB3 ``ActorCriticPolicy`` (PPO; actions are not masked).

    Args:
        observation_space: The window observation (``Dict``).
        action_space: The codec's space.
        lr_schedule: SB3's learning-rate schedule.
        slot_layout: The codec's :class:`SlotLayout` (or its fields as a dict).
        hidden: Width of the slot embeddings (128).
        attention_layers: Self-attention layers across slots (0).
        head: ``ordered`` (default; the sequential codec's plan order, see :class:`SlotActionNet`) or
            ``flat``.
        two_stage: Deterministic actions of the sequential codec by :func:`two_stage_argmax` (default)
            rather than the flat argmax; sampling is unaffected.
        **kwargs: Other ``ActorCriticPolicy`` arguments (``ortho_init``, ``optimizer_kwargs``, ...).
    """


class MaskableSlotActorCriticPolicy(_SlotPolicyMixin, MaskableActorCriticPolicy):
    """The slot network as sb3-contrib's ``MaskableActorCriticPolicy`` (MaskablePPO, masked actions).

    Same arguments and parameter names as :class:`SlotActorCriticPolicy`.
    """


def policy_spec(
    env: Any,
    arch: str = "slot",
    *,
    maskable: bool = True,
    hidden: int = 128,
    attention_layers: int = 0,
    decoding: str = "argmax",
) -> tuple[type[ActorCriticPolicy] | type[MaskableActorCriticPolicy] | str, dict[str, Any]]:
    """The policy class (or SB3 name) and ``policy_kwargs`` for ``env`` and an architecture.

    Args:
        env: A ``HetClusterEnv`` (possibly wrapped).
        arch: ``slot`` (:class:`SlotActorCriticPolicy` / :class:`MaskableSlotActorCriticPolicy` with the
            ordered head), ``slot-flat`` (the same with the flat head), ``set`` (the jobwise codec's
            order-invariant network, :mod:`agents.set_policy`; ``slot`` picks it for that codec) or ``mlp``
            (SB3's ``MultiInputPolicy`` with two hidden layers of ``2 * hidden``).
        maskable: The maskable class (MaskablePPO) or the plain one (PPO).
        hidden: Width (see above).
        attention_layers: Self-attention layers across slots (``slot`` and ``set``).
        decoding: The set network's deterministic decoding (``argmax`` or ``kind-first``,
            :func:`agents.set_policy.kind_first_argmax`); the other networks take ``argmax`` only (the
            slot network decodes the sequential codec in two stages of its own).
    """
    if arch not in ARCHITECTURES:
        raise ValueError(f"unknown policy architecture {arch!r}; use one of {ARCHITECTURES}")
    layout = None if arch == "mlp" else SlotLayout.of_env(env)
    is_set = layout is not None and (arch == "set" or (arch == "slot" and layout.codec in JOBWISE_CODECS))
    if decoding != "argmax" and not is_set:
        raise ValueError(
            f"decoding={decoding!r} needs the set network (arch='set' with codec='jobwise' or 'jobwise-types'); "
            f"arch={arch!r} decodes by argmax: drop --decoding or use --arch set -e codec=jobwise"
        )
    if arch == "mlp":
        width = 2 * hidden
        return "MultiInputPolicy", {"net_arch": {"pi": [width, width], "vf": [width, width]}}
    assert layout is not None
    if is_set:
        return set_policy_spec(
            layout, maskable=maskable, hidden=hidden, attention_layers=attention_layers, decoding=decoding
        )
    cls = MaskableSlotActorCriticPolicy if maskable else SlotActorCriticPolicy
    head = "flat" if arch == "slot-flat" else "ordered"
    return cls, {
        "slot_layout": asdict(layout),
        "hidden": hidden,
        "attention_layers": attention_layers,
        "head": head,
    }


__all__ = [
    "ARCHITECTURES",
    "MaskableSlotActorCriticPolicy",
    "SlotActionNet",
    "SlotActorCriticPolicy",
    "SlotExtractor",
    "SlotLatent",
    "SlotLayout",
    "policy_spec",
    "two_stage_argmax",
]
