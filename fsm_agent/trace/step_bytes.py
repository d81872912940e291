"""The bytes of a ``step`` line, built from pieces (issue 10: replay's cost per step).

Replay checks a recorded step line by serializing the step the core produced and comparing
bytes. :func:`step_line` gives exactly the bytes :func:`~fsm_agent.trace.records.dumps` gives
for the step's record, more cheaply: a loop transition is one of a fixed set of objects (the
table's rows), so its serialized form is kept by identity, and the line is joined from the
serialized effects, the seq and the transitions. orjson writes compact JSON with sorted keys,
so joining pieces in key order gives the same bytes as serializing the whole record.

Anything the pieces cannot serialize as they are (a value orjson refuses, which the writer
rewrites with :func:`~fsm_agent.trace.json_limits.fit_for_json`) is left to
:func:`~fsm_agent.trace.records.dumps` on the whole record, so the two never differ.
"""

from __future__ import annotations

from typing import Final

import orjson

from fsm_agent.core.codec import dump_effect
from fsm_agent.core.step import Step, TransitionTaken
from fsm_agent.trace import records

__all__ = ["step_line"]

_MEMO_LIMIT: Final = 1024
_memo: dict[int, tuple[TransitionTaken, bytes]] = {}
"""Serialized loop transitions by the identity of the object; each entry holds its object, so
an id is never taken for another object's. Tool-call transitions (one object per call) are
not kept, and the memo is emptied when full, so it stays bounded whatever a core makes."""

_AFTER_EFFECTS: Final = b',"record":"step","seq":'
_BEFORE_TRANSITIONS: Final = b',"transitions":['


def step_line(step: Step, seq: int) -> bytes:
    """``records.dumps({**records.step_record(step), "seq": seq})``, built from pieces.

    Raises:
        orjson.JSONEncodeError: as :func:`~fsm_agent.trace.records.dumps` does.
    """
    try:
        # The effects inside an object, as in the line: the same nesting depth, so orjson
        # refuses here exactly what it would refuse in the whole line.
        effects = orjson.dumps(
            {"effects": [dump_effect(effect) for effect in step.effects]},
            default=records.refuse_unknown,
            option=records.JSON_OPTIONS,
        )
        transitions = b",".join([_transition_bytes(taken) for taken in step.transitions])
    except orjson.JSONEncodeError:
        return records.dumps({**records.step_record(step), "seq": seq})
    return b"".join(
        (effects[:-1], _AFTER_EFFECTS, b"%d" % seq, _BEFORE_TRANSITIONS, transitions, b"]}")
    )


def _transition_bytes(taken: TransitionTaken) -> bytes:
    entry = _memo.get(id(taken))
    if entry is not None and entry[0] is taken:
        return entry[1]
    line = orjson.dumps(records.step_transition(taken), option=records.JSON_OPTIONS)
    if taken.call_id is None:
        if len(_memo) >= _MEMO_LIMIT:
            _memo.clear()
        _memo[id(taken)] = (taken, line)
    return line
