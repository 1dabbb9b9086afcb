"""The flat form of every observation: one float32 vector, and the layout that names its slices.

Every observation encoder of the environments (:class:`~hetgym.envs.observations.ObservationEncoder` and its
subclasses, :class:`~hetgym.envs.events.observation.EventObservation`) writes an observation as one float32
vector; its :class:`ObservationLayout` says where each named feature lies in it: ``name -> (start, stop,
shape)`` (:class:`LayoutEntry`), in the vector's order. The flat ids (``HetCluster-v2``,
``HetClusterEvents-v2``) return that vector as it is, under the layout's :attr:`~ObservationLayout.box`; the
earlier ids return the ``Dict`` of its slices (:meth:`ObservationLayout.as_dict`, views into one fresh vector,
keys in the order the ``Dict`` always had), under :attr:`~ObservationLayout.dict_space`. So the ``Dict`` is a
view over the flat vector, never a second computation of it, and
:class:`~hetgym.envs.flat.DictObservation` gives it for a flat id as a Gymnasium wrapper.

``env.unwrapped.layout`` is the environment's layout; a feature's entries are
``vector[start:stop].reshape(shape)``. This module imports numpy and Gymnasium's spaces only.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
from gymnasium import spaces

from hetgym.sim.errors import HetgymError

#: What an environment returns as an observation: the flat vector (the flat ids) or the ``Dict`` of its slices.
Observation = dict[str, np.ndarray] | np.ndarray


class LayoutEntry(NamedTuple):
    """Where one named feature lies in the flat vector: ``vector[start:stop].reshape(shape)``."""

    start: int
    stop: int
    shape: tuple[int, ...]

    @property
    def slice(self) -> slice:
        """``slice(start, stop)``."""
        return slice(self.start, self.stop)


class ObservationLayout(Mapping[str, LayoutEntry]):
    """The named slices of a flat float32 observation and its bounds, in the vector's order.

    Args:
        features: ``{name: (shape, low, high)}`` in the vector's order; ``low`` and ``high`` are scalars or
            float32 arrays of ``shape`` (the bounds of that feature's entries).
        dict_order: The key order of the ``Dict`` form (:meth:`as_dict`, :attr:`dict_space`); default: the
            vector's order. Every name exactly once.

    Raises:
        HetgymError: An empty layout, a name twice or missing in ``dict_order``, a bound of the wrong shape, or a
            low above its high.
    """

    def __init__(
        self,
        features: Mapping[str, tuple[tuple[int, ...], Any, Any]],
        dict_order: Sequence[str] | None = None,
    ) -> None:
        if not features:
            raise HetgymError("an observation layout needs at least one feature")
        entries: dict[str, LayoutEntry] = {}
        lows: list[np.ndarray] = []
        highs: list[np.ndarray] = []
        offset = 0
        for name, (shape, low, high) in features.items():
            shape = tuple(int(n) for n in shape)
            size = int(np.prod(shape, dtype=np.int64))
            entries[name] = LayoutEntry(offset, offset + size, shape)
            offset += size
            for bound, out, which in ((low, lows, "low"), (high, highs, "high")):
                arr = np.broadcast_to(np.asarray(bound, dtype=np.float32), shape) if np.ndim(bound) == 0 else bound
                arr = np.asarray(arr, dtype=np.float32)
                if arr.shape != shape:
                    raise HetgymError(
                        f"observation feature {name!r}: its {which} bound has shape {arr.shape}, the feature {shape}"
                    )
                out.append(arr.reshape(-1))
        self._entries = entries
        self.size = offset
        self.low: np.ndarray = np.concatenate(lows).astype(np.float32)
        self.high: np.ndarray = np.concatenate(highs).astype(np.float32)
        if (self.low > self.high).any():
            bad = [n for n, e in entries.items() if (self.low[e.slice] > self.high[e.slice]).any()]
            raise HetgymError(f"observation features {bad}: a low bound above its high bound")
        order = list(entries) if dict_order is None else list(dict_order)
        if sorted(order) != sorted(entries):
            raise HetgymError(
                f"dict_order {order} must name every feature of the layout ({list(entries)}) exactly once"
            )
        self.dict_order: tuple[str, ...] = tuple(order)
        self._items = [(name, entries[name].slice, entries[name].shape) for name in order]
        self._box: spaces.Box | None = None
        self._dict: spaces.Dict | None = None

    # Mapping protocol: name -> LayoutEntry, in the vector's order.
    def __getitem__(self, name: str) -> LayoutEntry:
        return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __repr__(self) -> str:
        inner = ", ".join(f"{n}: ({e.start}, {e.stop}, {e.shape})" for n, e in self._entries.items())
        return f"ObservationLayout({{{inner}}})"

    @property
    def slices(self) -> dict[str, slice]:
        """``{name: slice(start, stop)}`` in the vector's order."""
        return {name: e.slice for name, e in self._entries.items()}

    @property
    def box(self) -> spaces.Box:
        """The flat form's space: ``Box(low, high, (size,), float32)``."""
        if self._box is None:
            self._box = spaces.Box(self.low.copy(), self.high.copy(), dtype=np.float32)
        return self._box

    @property
    def dict_space(self) -> spaces.Dict:
        """The ``Dict`` form's space: one float32 ``Box`` per feature, its bounds the layout's."""
        if self._dict is None:
            boxes: dict[str, spaces.Space[Any]] = {}
            for name, sl, shape in self._items:
                boxes[name] = spaces.Box(
                    self.low[sl].reshape(shape).copy(), self.high[sl].reshape(shape).copy(), dtype=np.float32
                )
            self._dict = spaces.Dict(boxes)
        return self._dict

    def zeros(self) -> np.ndarray:
        """A new all-zero flat vector."""
        return np.zeros(self.size, dtype=np.float32)

    def as_dict(self, vector: np.ndarray) -> dict[str, np.ndarray]:
        """The ``Dict`` form of ``vector``: each feature's entries as a view into it, in :attr:`dict_order`."""
        return {name: vector[sl] if len(shape) == 1 else vector[sl].reshape(shape) for name, sl, shape in self._items}

    def from_dict(self, observation: Mapping[str, np.ndarray], out: np.ndarray | None = None) -> np.ndarray:
        """The flat vector of a ``Dict`` observation (written into ``out`` when given)."""
        vector = np.empty(self.size, dtype=np.float32) if out is None else out
        for name, sl, _ in self._items:
            vector[sl] = np.asarray(observation[name]).reshape(-1)
        return vector

    def describe(self) -> list[tuple[str, int, int, tuple[int, ...]]]:
        """``(name, start, stop, shape)`` of every feature, in the vector's order (for documentation)."""
        return [(name, e.start, e.stop, e.shape) for name, e in self._entries.items()]

    @classmethod
    def of_dict_space(cls, space: spaces.Dict) -> ObservationLayout:
        """The layout of ``space``'s float32 ``Box`` es, laid out in the ``Dict``'s key order."""
        features: dict[str, tuple[tuple[int, ...], Any, Any]] = {}
        for name, sub in space.spaces.items():
            if not isinstance(sub, spaces.Box):
                raise HetgymError(
                    f"observation key {name!r} is a {type(sub).__name__}; a flat layout needs a Box per key"
                )
            features[name] = (tuple(sub.shape), sub.low, sub.high)
        return cls(features)


__all__ = ["LayoutEntry", "Observation", "ObservationLayout"]
