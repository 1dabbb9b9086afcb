"""Action codecs: how an agent's actions edit the draft allocation, and the inverse map for experts.

Two codecs, chosen by the ``codec`` option (both act on the K-slot window of
:class:`~hetgym.envs.state.DecisionState`; jobs outside the window keep their GPUs):

* :class:`SequentialCodec` (``sequential``): a masked ``Discrete`` space. One action sets one slot's
  GPU count on one type to a count level, rejects one slot's job, sets one slot's execution mode, or
  commits the draft. Only a commit (or the action that reaches the per-epoch cap) advances the
  simulator. The mask allows exactly the actions the simulator would accept and that change the draft.
* :class:`OneShotCodec` (``multidiscrete``): a ``MultiDiscrete`` space giving, in one step, a count
  level for every slot and type (plus a reject flag and a mode per slot when enabled). Infeasible
  parts are repaired in a fixed order (see the class docstring); every step commits.

Both provide the inverse map :meth:`ActionCodec.encode` from a target :class:`~hetgym.sim.Allocation`
(an expert's decision) to the actions that express it, with an :class:`Encoding` saying whether the
expression is exact, i.e. whether committing it leaves the simulator in the same state as the target
would (same jobs rejected, same GPUs per type, same execution mode, no job moved by an explicit server
placement), and if not, why.
The sequential codec also has :meth:`SequentialCodec.encode_next`, the next action towards the target
from the current draft (a DAgger label).
"""

from __future__ import annotations

from collections.abc import Sequence

from hetgym.envs.codecs.base import ActionCodec, CodecStep
from hetgym.envs.codecs.oneshot import OneShotCodec
from hetgym.envs.codecs.sequential import SequentialCodec
from hetgym.envs.exactness import Encoding, explain_gap
from hetgym.envs.state import DecisionState
from hetgym.sim.errors import UnknownNameError

#: Codec classes by configuration name (add yours to plug in another action encoding).
CODECS: dict[str, type[ActionCodec]] = {SequentialCodec.name: SequentialCodec, OneShotCodec.name: OneShotCodec}


def make_codec(
    name: str, state: DecisionState, levels: Sequence[int], allow_reject: bool, max_actions: int
) -> ActionCodec:
    """The codec registered as ``name``."""
    if name not in CODECS:
        raise UnknownNameError("action codec", name, CODECS)
    return CODECS[name](state, levels, allow_reject, max_actions)


__all__ = [
    "CODECS",
    "ActionCodec",
    "CodecStep",
    "Encoding",
    "OneShotCodec",
    "SequentialCodec",
    "explain_gap",
    "make_codec",
]
