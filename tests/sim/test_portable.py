"""``hetgym.sim.portable``: the CPU-independent elementwise functions and solves, and the digests under
another CPU's NumPy loops and OpenBLAS kernel."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from hetgym.sim import portable

TESTS = Path(__file__).resolve().parents[1]


def test_transcendentals_equal_the_c_library_scalars() -> None:
    x = np.random.default_rng(0).uniform(-5.0, 5.0, size=200)
    assert portable.exp(x).tolist() == [math.exp(v) for v in x]
    assert portable.tanh(x).tolist() == [math.tanh(v) for v in x]
    assert portable.log(np.abs(x)).tolist() == [math.log(abs(v)) for v in x]
    assert portable.power(10.0, x).tolist() == [math.pow(10.0, v) for v in x]


def test_edge_values_follow_numpy() -> None:
    assert portable.exp([1000.0, -math.inf]).tolist() == [math.inf, 0.0]
    assert np.isnan(portable.exp([math.nan]))[0]
    logs = portable.log([0.0, -1.0, math.inf])
    assert logs[0] == -math.inf and np.isnan(logs[1]) and logs[2] == math.inf
    assert portable.tanh([-math.inf, math.inf]).tolist() == [-1.0, 1.0]
    assert portable.power([10.0, -8.0, 0.0], [400.0, 0.5, -1.0]).tolist()[0] == math.inf
    assert np.isnan(portable.power(-8.0, 0.5))
    assert portable.power(0.0, -1.0) == math.inf


def test_shapes_are_kept_and_broadcast() -> None:
    assert portable.exp(np.zeros((2, 3))).shape == (2, 3)
    assert portable.power(np.arange(1, 4)[:, None], np.array([1.0, 2.0])).tolist() == [[1, 1], [2, 4], [3, 9]]
    assert portable.tanh([]).shape == (0,)


def test_products_and_solves_match_blas_and_lapack() -> None:
    rng = np.random.default_rng(1)
    m = rng.normal(size=(6, 4, 4))
    a = m @ m.transpose(0, 2, 1) + 4 * np.eye(4)
    b = rng.normal(size=(6, 4))
    np.testing.assert_allclose(portable.solve_spd(a, b), np.linalg.solve(a, b[..., None])[..., 0], rtol=1e-12)
    np.testing.assert_allclose(portable.inv_spd(a), np.linalg.inv(a), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(portable.solve_spd(a[0], b[0]), np.linalg.solve(a[0], b[0]), rtol=1e-12)
    np.testing.assert_allclose(portable.matvec(m, b[0]), m @ b[0], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(portable.vecmat(b[0], m[0]), b[0] @ m[0], rtol=1e-12, atol=1e-14)


def test_solve_refuses_mismatched_shapes() -> None:
    with pytest.raises(ValueError, match="square"):
        portable.inv_spd(np.ones((2, 3)))
    with pytest.raises(ValueError, match="b has shape"):
        portable.solve_spd(np.eye(3), np.ones(2))


# Cases whose numbers went through np.power (the generators), the OpenBLAS kernel (finish-time fairness's
# analytic centre) and np.tanh (the observation's slack) before those moved to hetgym.sim.portable.
_PROBE = """
import json, sys
sys.path[:0] = [{tests!r}]
import env_digests, sim_digests
sim = {{c.key: sim_digests.digest(c) for c in sim_digests.cases() if c.key in {sim_keys!r}}}
env = {{c.key: env_digests.digest(c) for c in env_digests.cases() if c.key in {env_keys!r}}}
print(json.dumps({{"sim": sim, "env": env}}))
"""


@pytest.mark.parametrize(
    "cpu",
    [
        {"NPY_DISABLE_CPU_FEATURES": "X86_V3 X86_V4 AVX512_ICL AVX512_SPR", "OPENBLAS_CORETYPE": "Prescott"},
        {"OPENBLAS_CORETYPE": "Haswell"},
    ],
    ids=["baseline-loops-prescott-blas", "haswell-blas"],
)
def test_digests_hold_under_another_cpus_loops_and_kernels(cpu: dict[str, str]) -> None:
    sim_keys = ["edf@default#s0", "gavel-ftf@gavel-compat:t0-150#s0"]
    env_keys = ["v1-tiny#s2"]
    code = _PROBE.format(tests=str(TESTS), sim_keys=sim_keys, env_keys=env_keys)
    env = {**os.environ, **cpu}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    sim_committed = json.loads((TESTS / "data" / "sim_digests.json").read_text())
    env_committed = json.loads((TESTS / "data" / "env_digests.json").read_text())
    for key in sim_keys:
        assert got["sim"][key] == sim_committed[key], f"{key} under {cpu}"
    for key in env_keys:
        assert got["env"][key] == env_committed[key], f"{key} under {cpu}"
