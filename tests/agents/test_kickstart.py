"""The kickstarting pieces: the distillation schedule, the masked KL, and cloning a constant teacher."""

from __future__ import annotations

import pytest
import torch as th
from sb3_contrib import MaskablePPO

from agents.events import make_env
from agents.kickstart import (
    agreement,
    behaviour_clone,
    collect_teacher,
    distill_beta,
    frozen_copy,
    masked_kl,
    teacher_rule,
)
from hetgym.envs.events.actions import AUTO_ACTION


def test_distill_beta_falls_linearly_to_zero_and_stays() -> None:
    assert distill_beta(0, 2.0, 100) == 2.0
    assert distill_beta(25, 2.0, 100) == pytest.approx(1.5)
    assert distill_beta(50, 2.0, 100) == pytest.approx(1.0)
    assert distill_beta(100, 2.0, 100) == 0.0
    assert distill_beta(10_000, 2.0, 100) == 0.0
    assert distill_beta(0, 2.0, 0) == 0.0  # no distillation at all
    values = [distill_beta(s, 1.0, 64) for s in range(0, 80, 8)]
    assert values == sorted(values, reverse=True)


def test_masked_kl_is_zero_for_equal_policies_and_ignores_invalid_actions() -> None:
    masks = th.tensor([[True, True, False]])
    teacher = th.tensor([[2.0, 0.0, -1e8]])
    assert masked_kl(teacher, teacher, masks).item() == pytest.approx(0.0, abs=1e-6)
    assert masked_kl(teacher, th.tensor([[0.0, 2.0, -1e8]]), masks).item() > 0.5
    # The invalid action's term is left out even where the teacher's probability there is not 0.
    loose = th.tensor([[2.0, 0.0, 1.0]])
    assert masked_kl(loose, th.tensor([[2.0, 0.0, -1e8]]), masks).item() < 1.0


def test_rule_teachers_and_their_clone_on_tiny() -> None:
    env = make_env("HetClusterEvents-Tiny-v0")
    env.reset(seed=0)
    assert teacher_rule("elasticflow", env)() == AUTO_ACTION
    u = env.unwrapped
    assert u.actions.describe(teacher_rule("force-any", env)()) == "force"  # type: ignore[attr-defined]
    data = collect_teacher("HetClusterEvents-Tiny-v0", "force-any", [0, 1], gamma=0.99)
    assert len(data.actions) == len(data.returns) == len(data.obs) > 0
    assert data.masks[range(len(data.actions)), data.actions].all()
    model = MaskablePPO("MlpPolicy", make_env("HetClusterEvents-Tiny-v0"), seed=0, device="cpu")
    accuracy = behaviour_clone(model.policy, data, epochs=20, lr=1e-3, batch_size=8, seed=0)
    assert accuracy == 1.0
    teacher = frozen_copy(model.policy)
    assert agreement(teacher, data) == 1.0 and not any(p.requires_grad for p in teacher.parameters())
