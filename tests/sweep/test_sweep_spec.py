"""Sweep descriptions: grid expansion, stable run ids, cluster scaling, and validation before any run."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hetgym.sim.cluster import get_cluster
from hetgym.sweep import SweepConfigError, SweepSpec, parse_seeds, scaled_cluster

ROOT = Path(__file__).resolve().parents[2]


def spec(**values: object) -> SweepSpec:
    base: dict[str, object] = {"policies": ["fifo", "srtf"], "scenarios": ["tiny"], "seeds": [0]}
    base.update(values)
    return SweepSpec.from_dict(base)


def test_import_does_not_import_ray() -> None:
    import subprocess

    code = "import sys, hetgym.sweep, hetgym.cli.sweep; print('ray' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_grid_is_the_cross_product_with_policy_knob_axes() -> None:
    s = spec(
        policies=["fifo", {"name": "tiresias", "grid": {"promote_knob": [4, 8]}}],
        loads=[0.5, 0.9],
        seeds=3,
        cluster_scales=[1, 2],
        grid={"workload.tightness": [0.8, 1.0]},
    )
    runs = s.expand()
    # 3 policy variants x 2 loads x 3 seeds x 2 scales x 2 tightness values
    assert len(runs) == 3 * 2 * 3 * 2 * 2
    labels = {r.policy for r in runs}
    assert labels == {"fifo", "tiresias[promote_knob=4]", "tiresias[promote_knob=8]"}
    knob8 = next(r for r in runs if r.policy == "tiresias[promote_knob=8]")
    assert knob8.policy_options == {"promote_knob": 8}
    assert {r.workload["target_utilisation"] for r in runs} == {0.5, 0.9}
    assert {r.workload["tightness"] for r in runs} == {0.8, 1.0}
    assert {r.seed for r in runs} == {0, 1, 2}
    assert {r.flat()["num_gpus"] for r in runs} == {8, 16}
    assert len({r.run_id for r in runs}) == len(runs)


def test_loads_replace_the_scenarios_arrival_rate() -> None:
    # The default scenario gives its load as an arrival rate; a utilisation axis must take over.
    runs = spec(scenarios=["default"], loads=[0.6]).expand()
    assert all(r.workload["arrival_rate_per_h"] is None for r in runs)
    assert all(r.workload["target_utilisation"] == 0.6 for r in runs)
    rates = spec(scenarios=["gavel"], arrival_rates_per_h=[2.0]).expand()
    assert all(r.workload["target_utilisation"] is None and r.workload["arrival_rate_per_h"] == 2.0 for r in rates)


def test_run_id_depends_on_the_configuration_only() -> None:
    a = spec(loads=[0.5, 1], seeds=[0, 1]).expand()
    b = spec(policies=["srtf", "fifo"], loads=[1.0, 0.5], seeds=[1, 0]).expand()
    assert {r.run_id for r in a} == {r.run_id for r in b}  # order of axes and 1 vs 1.0 do not matter
    labelled = spec(policies=[{"name": "fifo", "label": "baseline"}], loads=[0.5], seeds=[0]).expand()
    assert labelled[0].run_id in {r.run_id for r in a}  # nor does the display label
    other = spec(loads=[0.5], seeds=[0], sim={"restart_penalty_s": 10}).expand()
    assert not {r.run_id for r in other} & {r.run_id for r in a}  # any configuration field does


def test_trace_window_fields_at_their_defaults_leave_run_ids_as_before() -> None:
    # Runs described before WorkloadConfig had trace_member and trace_window keep their ids.
    for run in spec(seeds=[0, 1]).expand():
        assert "trace_window" not in run.workload and "trace_member" not in run.workload
        assert run.scenario_obj().workload.trace_window is False


@settings(max_examples=25, deadline=None)
@given(
    loads=st.lists(st.sampled_from([0.3, 0.5, 0.7, 0.9, 1.1]), min_size=1, max_size=3, unique=True),
    seeds=st.lists(st.integers(0, 50), min_size=1, max_size=3, unique=True),
    data=st.data(),
)
def test_run_ids_are_invariant_to_axis_order(loads: list[float], seeds: list[int], data: st.DataObject) -> None:
    first = {r.run_id: r.config() for r in spec(loads=loads, seeds=seeds).expand()}
    shuffled = spec(loads=data.draw(st.permutations(loads)), seeds=data.draw(st.permutations(seeds)))
    second = {r.run_id: r.config() for r in shuffled.expand()}
    assert first == second


def test_scaled_cluster_multiplies_servers_per_type() -> None:
    name = scaled_cluster("default", 2)
    spec2 = get_cluster(name)
    base = get_cluster("default")
    assert spec2.total_gpus == 2 * base.total_gpus
    assert spec2.capacity == {t: 2 * c for t, c in base.capacity.items()}
    assert get_cluster(scaled_cluster("default", 0.5)).total_gpus == base.total_gpus // 2
    assert scaled_cluster("tiny", 1) == "tiny"


def test_seeds_forms() -> None:
    assert parse_seeds(3) == [0, 1, 2]
    assert parse_seeds("2-4") == [2, 3, 4]
    assert parse_seeds("0,5") == [0, 5]
    assert parse_seeds([7]) == [7]
    for bad in (0, [], [1, 1], ["a"], "x-y", True):
        with pytest.raises(SweepConfigError, match="seeds"):
            parse_seeds(bad)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"policies": ["fifoo"]}, "unknown policy 'fifoo'; did you mean 'fifo'"),
        ({"seed": [0]}, "unknown sweep config key 'seed'; did you mean 'seeds'"),
        ({"policies": []}, "'policies' is missing or empty"),
        ({"scenarios": ["tinyy"]}, "unknown scenario 'tinyy'"),
        ({"clusters": ["gavel108"]}, "unknown cluster preset 'gavel108'; did you mean 'gavel-108'"),
        ({"workload": {"num_job": 5}}, "unknown workload key 'num_job'; did you mean 'num_jobs'"),
        ({"workload": {"num_jobs": "many"}}, "num_jobs = 'many' \\(str\\); expected int"),
        ({"workload": {"num_jobs": 0}}, "num_jobs=0 is out of range; give an integer in"),
        ({"sim": {"seed": 3}}, "unknown sim key 'seed'.*use 'seeds'"),
        ({"sim": {"restart_penalty_s": -1}}, "restart_penalty_s=-1 is out of range"),
        ({"grid": {"workload.tightnes": [1]}}, "did you mean 'tightness'"),
        ({"grid": {"tightness": [1]}}, "write 'workload.<field>' or 'sim.<field>'"),
        ({"grid": {"sim.restart_penalty_s": []}}, "the axis is empty"),
        ({"loads": [0.5, -1]}, "loads: -1 is not a positive number"),
        ({"loads": [0.5], "arrival_rates_per_h": [1]}, "not both"),
        ({"loads": [0.5], "grid": {"workload.target_utilisation": [0.3]}}, "keep one"),
        ({"cluster_scales": [0]}, "cluster_scales: 0 is not a positive number"),
        ({"policies": [{"name": "srtf", "options": {"type_choise": "order"}}]}, "did you mean 'type_choice'"),
        ({"policies": [{"name": "tiresias", "grid": {"promote_knob": [1, -1]}}]}, "promote_knob=-1"),
        ({"policies": [{"nme": "fifo"}]}, "unknown policies\\[0\\] key 'nme'"),
        ({"policies": ["fifo", "fifo"]}, "appear twice"),
        ({"workload": {"trace": "missing.csv"}}, "trace file .*missing.csv' does not exist"),
        ({"scenarios": ["tiny", {"name": "copy", "base": "tiny"}]}, "same configuration"),
        ({"imports": ["no_such_module_xyz"]}, "cannot be imported"),
    ],
)
def test_invalid_grids_fail_before_running(values: dict[str, object], message: str) -> None:
    with pytest.raises(SweepConfigError, match=message):
        spec(**values).expand()


def test_yaml_errors_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("policies: [fifo]\nloadz: [0.5]\n")
    with pytest.raises(SweepConfigError, match=r"bad.yaml: unknown sweep config key 'loadz'; did you mean 'loads'"):
        SweepSpec.from_yaml(path)
    path.write_text("policies: [fifo\n")
    with pytest.raises(SweepConfigError, match="not valid YAML"):
        SweepSpec.from_yaml(path)


def test_inline_scenarios_and_paths_relative_to_the_file(tmp_path: Path) -> None:
    (tmp_path / "policies.py").write_text("X = 1\n")
    path = tmp_path / "s.yaml"
    path.write_text(
        "policies: [fifo]\n"
        "imports: [policies.py]\n"
        "scenarios:\n"
        "  - {name: small, base: default, workload: {num_jobs: 10}}\n"
        "  - {name: mine, cluster: tiny, workload: {recipe: gavel-philly, num_jobs: 5, static: true}}\n"
    )
    s = SweepSpec.from_yaml(path)
    assert s.name == "s"
    assert s.imports == (str(tmp_path / "policies.py"),)
    runs = s.expand()
    assert [(r.scenario, r.cluster, r.workload["num_jobs"]) for r in runs] == [
        ("small", "default", 10),
        ("mine", "tiny", 5),
    ]


@pytest.mark.parametrize("path", sorted((ROOT / "scripts" / "sweeps").glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_example_configs_are_valid(path: Path) -> None:
    runs = SweepSpec.from_yaml(path).expand()
    assert runs
