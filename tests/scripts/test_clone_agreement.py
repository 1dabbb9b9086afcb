"""scripts/studies/clone_agreement.py: a saved clone against its teacher on held-out workloads.

A study (scripts/studies/): its smoke run stays in the default test run, the other tests are marked ``slow``."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import load_script

from agents import bc
from agents.args import BCArgs
from agents.bc import action_agreement
from agents.common import load_agent
from agents.demos import collect_demonstrations

CA = load_script("studies/clone_agreement")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("runs")
    args = BCArgs(
        env_id="HetCluster-Tiny-v1",
        teacher="edf",
        env={"codec": "multidiscrete", "observation": "window-levels"},
        train_seeds="0-2",
        val_seeds="100",
        eval_seeds="1000",
        epochs=2,
        hidden=16,
        out_dir=str(out),
        run_name="bc",
    )
    return bc.train(args).path


def test_it_measures_the_clone_on_the_teachers_held_out_episodes(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "figures" / "agreement.json"
    assert CA.main([str(run), "--seeds", "200-201", "--out", str(out)]) == 0
    (row,) = json.loads(out.read_text())
    # The same figures, computed here from the parts.
    model, meta = load_agent(run)
    expected = action_agreement(
        model.policy, collect_demonstrations(meta.env_id, meta.env_kwargs, "edf", [200, 201]).transitions()
    )
    assert row["agreement"] == expected["agreement"] and row["states"] == expected["states"]
    lo, hi = row["agreement_ci95"]
    assert 0.0 <= lo <= row["agreement"] <= hi <= 1.0
    assert row["agreement_changing"] == expected["agreement_changing"]
    assert 0 < row["changing_share"] < 1 and row["teacher"] == "edf" and row["seeds"] == [200, 201]
    demos = collect_demonstrations(meta.env_id, meta.env_kwargs, "edf", [200, 201])
    assert row["teacher_dsr_in_env"] == sum(m["dsr"] for m in demos.episode_metrics()) / 2
    assert "at changing epochs" in capsys.readouterr().out
    assert [p.name for p in out.parent.iterdir()] == ["agreement.json"]  # no temporary file left


@pytest.mark.slow
def test_training_seeds_and_runs_without_a_teacher_are_refused(run: Path, tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        CA.main([str(run), "--seeds", "1-3", "--out", str(tmp_path / "a.json")])
    with pytest.raises(SystemExit):
        CA.main([str(tmp_path / "no-such-run")])
    assert not (tmp_path / "a.json").exists()


@pytest.mark.slow
def test_the_interval_resamples_whole_workloads() -> None:
    data = collect_demonstrations("HetCluster-Tiny-v1", {}, "edf", [300, 301, 302]).transitions()
    episode = np.concatenate([[0], np.cumsum(data.dones[:-1])])
    assert episode[-1] == 2 and data.dones[-1]
    for pred, expected in ((data.acts, (1.0, 1.0)), (data.acts + 1, (0.0, 0.0))):
        assert CA.workload_interval(CA.agrees(pred, data.acts), data.dones) == expected
    # Right on the first workload only: a resample of three workloads holds none of it with probability
    # 8/27 and only it with 1/27, both above 2.5%, so the interval is all of [0, 1] (a count of states as
    # independent would give a narrow one around the overall share).
    pred = np.where(episode == 0, data.acts, data.acts + 1)
    assert CA.workload_interval(CA.agrees(pred, data.acts), data.dones) == (0.0, 1.0)


@pytest.mark.slow
def test_runs_of_one_teacher_share_one_collection_of_its_episodes(
    run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[list[int]] = []
    real = CA.collect_demonstrations

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls.append(list(args[3]))
        return real(*args, **kwargs)

    monkeypatch.setattr(CA, "collect_demonstrations", counting)
    out = tmp_path / "two.json"
    assert CA.main([str(run), str(run), "--seeds", "200", "--out", str(out)]) == 0
    first, second = json.loads(out.read_text())
    assert calls == [[200]] and first["agreement"] == second["agreement"]


def _tiny_jobwise() -> Any:
    import gymnasium as gym

    env = gym.make("HetCluster-Tiny-v1")
    env.reset(seed=0)
    return env.unwrapped


@pytest.mark.slow
def test_actions_are_classed_against_what_the_decided_job_held() -> None:
    env = _tiny_jobwise()
    codec, capacity = env.codec, env.state.capacity
    assert isinstance(codec, CA.JobwiseCodec) and len(capacity) >= 2
    types = len(capacity)
    slots = env.observation_space["slot_cursor"].shape[0]
    levels = list(codec.levels)
    lo, hi = 1, 2  # the first two count levels above 0
    # Slot 1 is decided; the job holds levels[lo] GPUs of type 0 (other slots hold GPUs that must not count).
    cursor = np.zeros((1, slots), dtype=np.float32)
    cursor[0, 1] = 1
    current = np.zeros((1, slots, types), dtype=np.float32)
    current[0, 1, 0] = levels[lo] / capacity[0]
    current[0, 0, 1] = 1.0
    idle = np.zeros_like(current)
    idle[0, 0, 1] = 1.0
    cases = {
        "grow": (current, codec.set_action(0, hi)),
        "same": (current, codec.set_action(0, lo)),
        "move": (current, codec.set_action(1, lo)),
        "start": (idle, codec.set_action(0, lo)),
        "keep": (current, codec.keep),
        "none": (current, codec.none),
        "done": (current, codec.done),
    }
    for kind, (held, action) in cases.items():
        obs = {"slot_cursor": cursor, "job_current": held.reshape(1, -1)}
        assert CA.decision_kinds(codec, capacity, obs, np.array([action])).tolist() == [kind], kind
    shrink_from = current.copy()
    shrink_from[0, 1, 0] = levels[hi] / capacity[0]
    obs = {"slot_cursor": cursor, "job_current": shrink_from.reshape(1, -1)}
    assert CA.decision_kinds(codec, capacity, obs, np.array([codec.set_action(0, lo)])).tolist() == ["shrink"]
    # A job holding GPUs of two types: any set action on it is "forked", whichever type it names.
    forked = current.copy()
    forked[0, 1, 1] = levels[lo] / capacity[1]
    obs = {"slot_cursor": np.repeat(cursor, 3, axis=0), "job_current": np.repeat(forked.reshape(1, -1), 3, axis=0)}
    acts = np.array([codec.set_action(0, lo), codec.set_action(1, hi), codec.keep])
    assert CA.decision_kinds(codec, capacity, obs, acts).tolist() == ["forked", "forked", "keep"]


@pytest.mark.slow
def test_the_tick_split_reads_the_clock_tick_entry() -> None:
    clock = np.zeros((4, 4), dtype=np.float32)
    clock[:3, 1] = 1.0  # three states at round ticks
    out = CA.tick_split({"clock": clock.reshape(-1)}, np.array([True, False, True, True]))
    assert out == {"tick_share": 0.75, "agreement_at_ticks": 2 / 3, "agreement_off_ticks": 1.0}
    none = CA.tick_split({"clock": np.zeros((2, 4), dtype=np.float32)}, np.array([True, False]))
    assert math.isnan(none["agreement_at_ticks"]) and none["agreement_off_ticks"] == 0.5


@pytest.mark.slow
def test_the_breakdown_splits_states_by_the_teachers_kind() -> None:
    teacher = np.array(["keep", "keep", "grow", "grow", "grow", "done"], dtype=object)
    clone = np.array(["keep", "grow", "keep", "keep", "grow", "done"], dtype=object)
    out = CA.breakdown(teacher, clone, teacher == clone)
    assert list(out) == ["keep", "grow", "done"]  # report order, kinds absent from the states left out
    assert out["grow"] == {"states": 3, "share": 0.5, "agreement": 1 / 3, "clone": {"keep": 2 / 3, "grow": 1 / 3}}
    assert out["keep"]["agreement"] == 0.5 and out["done"]["clone"] == {"done": 1.0}
    assert sum(b["share"] for b in out.values()) == pytest.approx(1.0)
    typed = CA.breakdown(teacher, clone, teacher == clone, np.array([False, False, True, False, True, False]))
    assert typed["grow"]["clone_same_type"] == 2 / 3 and "clone_same_type" not in typed["keep"]


@pytest.mark.slow
def test_same_set_type_compares_the_types_of_two_set_actions() -> None:
    codec = _tiny_jobwise().codec
    lo, hi = 1, 2
    teacher = np.array([codec.set_action(0, lo), codec.set_action(0, lo), codec.set_action(1, hi), codec.keep])
    clone = np.array([codec.set_action(0, hi), codec.set_action(1, lo), codec.keep, codec.keep])
    assert CA.same_set_type(codec, teacher, clone).tolist() == [True, False, False, False]


@pytest.mark.slow
def test_the_breakdown_on_a_jobwise_clone_and_its_refusal_for_another_codec(
    run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    jobwise = bc.train(
        BCArgs(
            env_id="HetCluster-Tiny-v1",
            teacher="edf",
            train_seeds="0-1",
            val_seeds="100",
            eval_seeds="",
            epochs=1,
            hidden=16,
            out_dir=str(tmp_path / "runs"),
            run_name="jobwise",
        )
    ).path
    out = tmp_path / "kinds.json"
    assert CA.main([str(jobwise), "--seeds", "200", "--breakdown", "--out", str(out)]) == 0
    (row,) = json.loads(out.read_text())
    parts = row["breakdown"]
    assert sum(b["states"] for b in parts.values()) == row["states"]
    overall = sum(b["agreement"] * b["states"] for b in parts.values()) / row["states"]
    assert overall == pytest.approx(row["agreement"])
    assert all(abs(sum(b["clone"].values()) - 1) < 1e-9 for b in parts.values())
    assert "teacher keep:" in capsys.readouterr().out
    # The tick split weighs back to the overall agreement.
    share = row["tick_share"]
    at = row["agreement_at_ticks"] if share > 0 else 0.0
    off = row["agreement_off_ticks"] if share < 1 else 0.0
    assert share * at + (1 - share) * off == pytest.approx(row["agreement"])
    # The multi-discrete codec of the module's run has no current job: refused, nothing written.
    with pytest.raises(SystemExit):
        CA.main([str(run), "--seeds", "200", "--breakdown", "--out", str(tmp_path / "b.json")])
    assert not (tmp_path / "b.json").exists()
    # Each listed decoding of the set network is measured on the same teacher episodes.
    both = tmp_path / "decodings.json"
    assert CA.main([str(jobwise), "--seeds", "200", "--decoding", "argmax,kind-first", "--out", str(both)]) == 0
    rows = json.loads(both.read_text())
    assert [r["decoding"] for r in rows] == ["argmax", "kind-first"]
    assert rows[0]["agreement"] == pytest.approx(row["agreement"]) and rows[0]["states"] == rows[1]["states"]
    # A decoding the run's network has not is refused before any collection, nothing written.
    with pytest.raises(SystemExit):
        CA.main([str(run), "--seeds", "200", "--decoding", "kind-first", "--out", str(tmp_path / "c.json")])
    assert not (tmp_path / "c.json").exists()
