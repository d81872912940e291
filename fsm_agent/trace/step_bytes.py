"""Whether an event line carries, byte for byte, what the core made of its event (issue 10).

A schema 3 event line is ``{"effects":[…],`` + the event's own fields + ``,"transitions":[…]}``
(sorted keys put ``effects`` before every field of the event's line and ``transitions`` after
them; each list only when not empty). The writer renders the transitions with the functions
here (and the effects with :mod:`~fsm_agent.trace.render_fns`, to the same bytes); replay
checks a line by rendering the lists of the step the core produced with these functions and
comparing them with the start and the end of the line's bytes: no parse of the lists, no
serialization of the event again.

The comparison is exact. JSON strings hold ``"`` only escaped, so ``,"transitions":`` in the
bytes is always a key; a line that ends with that key, a complete array and the closing brace
holds that array as its last field, and a line that starts with ``{"effects":`` and a complete
array holds that array as its first field. A loop transition is one of a fixed set of objects
(the table's rows), so its rendering is kept by identity, and so is the array of a run of
them; a tool call's transition is made per call, so the bytes after its ``call_id`` are kept
by its row.

Whatever the pieces cannot render as they are (a value orjson refuses, which the writer
rewrites with :func:`~fsm_agent.trace.json_limits.fit_for_json`) is rendered through
:func:`~fsm_agent.trace.records.dumps` as the writer renders it.
"""

from __future__ import annotations

from typing import Any, Final

import attrs
import orjson

from fsm_agent.core.step import Step, TransitionTaken
from fsm_agent.trace import records
from fsm_agent.trace.render_fns import render_effect

__all__ = ["carries", "effects_field", "transitions_array", "transitions_field"]

_MEMO_LIMIT: Final = 1024
_rendered: dict[int, bytes] = {}
"""Rendered loop transitions by the identity of the object. :data:`_kept` holds each object
whose id is a key, so no id is taken for another object's while its entry lives. Tool-call
transitions (one object per call) are not kept, and both are emptied together when full, so
they stay bounded whatever a core makes."""
_kept: list[TransitionTaken] = []
_arrays: dict[tuple[int, ...], bytes] = {}
"""Rendered arrays of a step's loop transitions (most steps take one of a few runs of rows),
by the identities of the objects, each of them kept in :data:`_kept`."""
_TRANSITIONS_KEY: Final = b'{"transitions":'
_tails: dict[tuple[Any, ...], bytes] = {}
"""What follows ``call_id`` in a tool call's transition, by its row (machine, name, source,
dest): a tool machine has a few dozen rows."""
_NO_CALL: Final = b'{"call_id":null'


def carries(content: bytes, data: dict[str, Any], step: Step) -> bool:
    """Whether the event line ``content`` (parsed: ``data``) carries exactly the transitions
    and effects of ``step``, as the writer writes them (unredacted)."""
    if step.effects:
        dumped = [render_effect(effect)[0] for effect in step.effects]
        if not content.startswith(b"{%s," % effects_field(dumped)):
            return False
    elif "effects" in data:
        return False
    if step.transitions:
        return content.endswith(b",%s}" % transitions_field(step))
    return "transitions" not in data


def effects_field(dumped: list[dict[str, Any]]) -> bytes:
    """``"effects":[…]`` as the writer renders a step's effects (each as
    :func:`~fsm_agent.core.codec.dump_effect` or
    :func:`~fsm_agent.trace.render_fns.render_effect` gives it) in a line, unredacted."""
    try:  # what records.dumps does first, without its call (most steps have effects)
        line = orjson.dumps({"effects": dumped}, option=records.JSON_OPTIONS)
    except orjson.JSONEncodeError:
        line = records.dumps({"effects": dumped})  # rewrites what orjson refuses, or raises
    return line[1:-1]


def transitions_field(step: Step) -> bytes:
    """``"transitions":[…]`` as the writer renders the step's transitions in a line,
    unredacted."""
    return b'"transitions":' + transitions_array(step)


def transitions_array(step: Step) -> bytes:
    """The array of :func:`transitions_field` alone."""
    taken = step.transitions
    key = tuple(map(id, taken))
    known = _arrays.get(key)
    if known is not None:
        return known
    try:
        array = b"[%s]" % b",".join([_transition_bytes(item) for item in taken])
    except orjson.JSONEncodeError:
        part = records.dumps({"transitions": [records.step_transition(t) for t in taken]})
        return part[len(_TRANSITIONS_KEY) : -1]
    # Kept only when every object in it is kept (so each id stays that object's), and
    # emptied with them.
    if all(id(item) in _rendered for item in taken):
        if len(_arrays) >= _MEMO_LIMIT:
            _arrays.clear()
        _arrays[key] = array
    return array


def _transition_bytes(taken: TransitionTaken) -> bytes:
    known = _rendered.get(id(taken))
    if known is not None:
        return known
    call_id = taken.call_id
    if type(call_id) is str:
        # A tool call's row: one object per call, so its rendering is not kept; the bytes
        # after its ``call_id`` (the first key, sorted) are those of the row, kept by value.
        tail = _call_tail(taken)
        if tail is not None:
            return b'{"call_id":%s%s' % (orjson.dumps(call_id), tail)
    rendered = orjson.dumps(records.step_transition(taken), option=records.JSON_OPTIONS)
    if call_id is None:
        if len(_kept) >= _MEMO_LIMIT:
            _rendered.clear()
            _kept.clear()
            _arrays.clear()
        _kept.append(taken)
        _rendered[id(taken)] = rendered
    return rendered


def _call_tail(taken: TransitionTaken) -> bytes | None:
    """What follows ``call_id`` in a tool call's transition: its row's bytes (the machine,
    name, source and dest), kept by row; None for a row that is no key (not hashable)."""
    row = (taken.machine, taken.name, taken.source, taken.dest)
    try:
        tail = _tails.get(row)
    except TypeError:
        return None
    if tail is None:
        untied = records.step_transition(attrs.evolve(taken, call_id=None))
        tail = orjson.dumps(untied, option=records.JSON_OPTIONS)[len(_NO_CALL) :]
        if len(_tails) >= _MEMO_LIMIT:
            _tails.clear()
        _tails[row] = tail
    return tail
