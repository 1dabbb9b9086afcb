"""Elementwise transcendental functions whose results do not depend on the CPU.

NumPy picks a ufunc loop for the running CPU: on a processor with AVX-512 ``np.power``, ``np.exp``,
``np.log`` and ``np.tanh`` of float64 arrays run vectorised implementations that may round the last bit
differently from the scalar loop another processor runs. One bit in a generated job's duration moves
every completion after it, so a scenario's results (and the digests that hold them to bit-identity)
would differ between machines with the same packages installed.

Matrix products and solves have the same trouble one level down: ``@``, ``np.dot`` and ``np.linalg``
call the BLAS/LAPACK kernel chosen for the CPU (OpenBLAS's Haswell, SkylakeX, Zen, ... kernels, or the
one ``OPENBLAS_CORETYPE`` names), which add the products in different orders.

The transcendental functions here apply Python's :mod:`math` (the C library's scalar function, the same
on every CPU of one platform) element by element; the products and solves use elementwise NumPy
arithmetic and reductions, whose results do not depend on the CPU's vector width. They are for the places
whose results feed the simulation (workload generation, policies' numeric planning, observations); the
transcendental ones cost a Python call per element, so use them on arrays of jobs or window slots, not in
inner loops over millions of values.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["exp", "inv_spd", "log", "matvec", "power", "solve_spd", "tanh", "vecmat"]

# Beyond these arguments math.exp overflows (raises) where NumPy returns inf.
_EXP_MAX = 709.782712893384


def _apply(fn: Callable[[float], float], x: ArrayLike) -> NDArray[np.float64]:
    arr = np.asarray(x, dtype=np.float64)
    flat = np.fromiter(map(fn, arr.ravel().tolist()), dtype=np.float64, count=arr.size)
    return flat.reshape(arr.shape)


def _exp(v: float) -> float:
    if v > _EXP_MAX:
        return math.inf
    if v != v:  # NaN
        return v
    return math.exp(v)


def _log(v: float) -> float:
    if v > 0.0:
        return math.log(v)  # inf -> inf
    if v == 0.0:
        return -math.inf
    return math.nan  # negative or NaN, as NumPy (without its warning)


def _tanh(v: float) -> float:
    return math.tanh(v)  # tanh(+-inf) = +-1, NaN -> NaN


def _pow(b: float, e: float) -> float:
    try:
        return math.pow(b, e)
    except OverflowError:
        return math.inf
    except ValueError:  # a negative base to a fractional power, or 0 to a negative one
        return math.inf if b == 0.0 else math.nan


def exp(x: ArrayLike) -> NDArray[np.float64]:
    """``e ** x`` elementwise (inf above float64's range, as :func:`numpy.exp`)."""
    return _apply(_exp, x)


def log(x: ArrayLike) -> NDArray[np.float64]:
    """Natural logarithm elementwise: ``-inf`` at 0 and NaN below, as :func:`numpy.log` (no warning)."""
    return _apply(_log, x)


def tanh(x: ArrayLike) -> NDArray[np.float64]:
    """Hyperbolic tangent elementwise (``tanh(+-inf) = +-1``)."""
    return _apply(_tanh, x)


def power(base: ArrayLike, exponent: ArrayLike) -> NDArray[np.float64]:
    """``base ** exponent`` elementwise in float64, broadcasting as NumPy does (inf on overflow)."""
    b, e = np.broadcast_arrays(np.asarray(base, dtype=np.float64), np.asarray(exponent, dtype=np.float64))
    flat = np.fromiter(map(_pow, b.ravel().tolist(), e.ravel().tolist()), dtype=np.float64, count=b.size)
    return flat.reshape(b.shape)


def matvec(a: ArrayLike, v: ArrayLike) -> NDArray[np.float64]:
    """``a @ v`` for a matrix (or a stack of them) and a vector, without BLAS."""
    a_arr = np.asarray(a, dtype=np.float64)
    return (a_arr * np.asarray(v, dtype=np.float64)).sum(axis=-1)


def vecmat(v: ArrayLike, a: ArrayLike) -> NDArray[np.float64]:
    """``v @ a`` for a vector and a matrix, without BLAS."""
    a_arr = np.asarray(a, dtype=np.float64)
    return (np.asarray(v, dtype=np.float64)[:, None] * a_arr).sum(axis=0)


def _eliminate(a: NDArray[np.float64], rhs: NDArray[np.float64]) -> NDArray[np.float64]:
    """Solve ``a x = rhs`` (``(..., k, k)`` by ``(..., k, r)``, both overwritten) by Gaussian elimination
    without pivoting, vectorised over the batch axes."""
    k = a.shape[-1]
    for p in range(k):
        for i in range(p + 1, k):
            f = a[..., i, p] / a[..., p, p]
            a[..., i, p:] -= f[..., None] * a[..., p, p:]
            rhs[..., i, :] -= f[..., None] * rhs[..., p, :]
    x = np.empty_like(rhs)
    for i in range(k - 1, -1, -1):
        acc = rhs[..., i, :].copy()
        for j in range(i + 1, k):
            acc -= a[..., i, j][..., None] * x[..., j, :]
        x[..., i, :] = acc / a[..., i, i][..., None]
    return x


def _square(a: ArrayLike) -> NDArray[np.float64]:
    arr = np.array(a, dtype=np.float64)  # a copy: eliminated in place
    if arr.ndim < 2 or arr.shape[-1] != arr.shape[-2]:
        raise ValueError(f"need a (..., k, k) stack of square matrices, got shape {arr.shape}")
    return arr


def solve_spd(a: ArrayLike, b: ArrayLike) -> NDArray[np.float64]:
    """Solve ``a x = b`` for symmetric positive definite ``a`` (``(..., k, k)``) and vectors ``b`` (``(..., k)``)
    without LAPACK: Gaussian elimination without pivoting (stable for such matrices), vectorised over
    the batch axes. Meant for small ``k`` (the loops over rows run in Python)."""
    a_arr = _square(a)
    b_arr = np.asarray(b, dtype=np.float64)
    if b_arr.shape[-1:] != a_arr.shape[-1:]:
        raise ValueError(f"b has shape {b_arr.shape}; it needs (..., {a_arr.shape[-1]}) to match a {a_arr.shape}")
    shape = np.broadcast_shapes(a_arr.shape[:-1], b_arr.shape)
    rhs = np.array(np.broadcast_to(b_arr, shape)[..., None])
    return _eliminate(np.array(np.broadcast_to(a_arr, shape + shape[-1:])), rhs)[..., 0]


def inv_spd(a: ArrayLike) -> NDArray[np.float64]:
    """The inverse of each symmetric positive definite matrix of ``a`` (``(..., k, k)``), without LAPACK."""
    a_arr = _square(a)
    k = a_arr.shape[-1]
    return _eliminate(a_arr, np.array(np.broadcast_to(np.eye(k), a_arr.shape)))
