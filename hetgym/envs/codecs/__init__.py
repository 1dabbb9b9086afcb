"""Action codecs: how an agent's actions edit the draft allocation, and the inverse map for experts.

A codec is chosen by the ``codec`` option from the registry :data:`CODECS`; each one acts on the K-slot
window of :class:`~hetgym.envs.state.DecisionState` (jobs outside the window keep their GPUs). Four are
built in, and one alias:

* :class:`SequentialCodec` (``sequential``, :mod:`.sequential`): a masked ``Discrete`` space. One action
  sets one slot's GPU count on one type to a count level, rejects one slot's job, sets one slot's
  execution mode, or commits the draft. Only a commit (or the action that reaches the per-epoch cap)
  advances the simulator. The mask allows exactly the actions the simulator would accept and that
  change the draft.
* :class:`OneShotCodec` (``multidiscrete``, :mod:`.oneshot`): a ``MultiDiscrete`` space giving, in one
  step, a count level for every slot and type (plus a reject flag and a mode per slot when enabled).
  Infeasible parts are repaired in a fixed order (see the class docstring); every step commits.
* :class:`JobwiseCodec` (``jobwise``, :mod:`.jobwise`): a ``Discrete`` space deciding the window's jobs one
  at a time, most urgent first (a type, count and mode, none, keep or reject); at most K + 1 steps an epoch.
  Its knob ``several_types=True`` (:class:`JobwiseKnobs`; the alias ``jobwise-types``) keeps the actions but lets
  a set action add a GPU type to the current job until ``keep`` ends its turn, so a job can hold several
  types; at most K * (T + 1) + 1 steps an epoch.
* :class:`ScoreCodec` (``score``, :mod:`.score`): a ``MultiDiscrete`` space giving, per slot, a GPU type
  (or none, keep, reject), a count level and a priority; a fixed allocator serves the slots by priority and
  every step commits.

Every codec provides the inverse map :meth:`ActionCodec.encode` from a target
:class:`~hetgym.sim.Allocation` (an expert's decision) to the actions that express it, with an
:class:`~hetgym.envs.exactness.Encoding` saying whether the expression is exact, i.e. whether committing
it leaves the simulator in the same state as the target would (same jobs rejected, same GPUs per type,
same execution mode, no job moved by an explicit server placement), and if not, why
(:mod:`hetgym.envs.exactness`); and :meth:`ActionCodec.encode_next`, the next action towards the target
from the current draft (a DAgger label).

Add a codec by subclassing :class:`ActionCodec` and decorating it with :func:`register_codec`
(``docs/environment.md``, "Plugging in your own codec, observation, reward or window order").
"""

from __future__ import annotations

from hetgym.envs.codecs.base import CODECS, ActionCodec, CodecStep, discrete_index, make_codec, register_codec
from hetgym.envs.codecs.jobwise import JobwiseCodec, JobwiseKnobs
from hetgym.envs.codecs.oneshot import OneShotCodec
from hetgym.envs.codecs.score import ScoreCodec, ScoreKnobs
from hetgym.envs.codecs.sequential import SequentialCodec
from hetgym.envs.exactness import Encoding, explain_gap

__all__ = [
    "CODECS",
    "ActionCodec",
    "CodecStep",
    "Encoding",
    "JobwiseCodec",
    "JobwiseKnobs",
    "OneShotCodec",
    "ScoreCodec",
    "ScoreKnobs",
    "SequentialCodec",
    "discrete_index",
    "explain_gap",
    "make_codec",
    "register_codec",
]
