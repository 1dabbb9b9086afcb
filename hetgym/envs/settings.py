"""``EnvSettings``: what the window environment's configuration gives every action codec and observation encoder.

A leaf module (it imports only the throughput model's type), so that the codecs and the encoders, which the
configuration looks up by name in their registries, can name their settings without importing the
configuration back (:mod:`hetgym.envs.config` builds them and re-exports the class).
"""

from __future__ import annotations

from dataclasses import dataclass

from hetgym.sim.throughput import ThroughputModel


@dataclass(frozen=True)
class EnvSettings:
    """What the configuration gives every codec and observation encoder (:meth:`HetClusterConfig.settings`).

    These are environment-wide rather than one component's knobs: the count levels and ``allow_reject``
    shape both the action space and the observation (the ``window-levels`` encoder mirrors the levels,
    the window shows rejections), the per-epoch action cap limits sequential actions and is an observed
    feature, and the time scale sets both the time features and the time-based rewards. A component's own
    knobs, which only it reads, are ``codec_knobs`` / ``observation_knobs``.

    Attributes:
        levels: Ascending GPU count levels starting at 0.
        allow_reject: Whether actions can reject a job.
        max_actions: The per-epoch cap on actions.
        time_scale_s: Time unit of the squashed time features.
        throughput: The throughput model the simulator runs with.
        slot_cursor: The codec decides one window slot per action, the slot at ``state.cursor``
            (``jobwise``, ``jobwise-types``); the observation then shows which one (its ``slot_cursor`` key).
    """

    levels: tuple[int, ...]
    allow_reject: bool
    max_actions: int
    time_scale_s: float
    throughput: ThroughputModel
    slot_cursor: bool = False


__all__ = ["EnvSettings"]
