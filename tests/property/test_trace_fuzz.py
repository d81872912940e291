"""Fuzzing the trace reader, replay and resume with mutated copies of the ``traces/`` corpus.

Whatever a file holds, these raise only the library's own errors (``FsmAgentError``): never a
``RecursionError``, ``TypeError``, ``KeyError`` or ``UnicodeDecodeError`` from deep inside.
Each example is a seed: it picks a trace and one or two mutations (byte flips, line drops,
duplications and swaps, cuts, field deletions, type swaps, deep nesting), so every run checks
the same traces and a failure names the seed that reproduces it. This is a plain loop, not a
``@given`` test: Hypothesis raises the recursion limit while it runs a test, which would hide
exactly the recursion errors this test looks for. The ``deep`` profile runs ten times as many.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import settings

from fsm_agent.errors import FsmAgentError
from fsm_agent.trace.reader import read_trace, trace_files
from fsm_agent.trace.replay import replay, resume

_FILES = list(trace_files([Path(__file__).parents[2] / "traces"]))
CORPUS = [path.read_bytes() for path in _FILES]
NAMES = [path.name for path in _FILES]
EXAMPLES = 20_000 if settings.default.max_examples >= 20_000 else 2_000
"""Mutated traces per run: 2,000, or 20,000 under the ``deep`` Hypothesis profile."""

_ODD_VALUES: tuple[bytes, ...] = (
    b"null",
    b"true",
    b"0",
    b"-1",
    b"1.5",
    b"18446744073709551616",
    b'""',
    b'"x"',
    b'"\\ud800"',
    b"[]",
    b"{}",
    b"[1]",
    b'{"a":1}',
    b'{"type":"TurnStarted"}',
)
_MARKER = "\x00MARK\x00"


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


def _spots(value: Any) -> list[tuple[Any, ...]]:
    """Every path (a tuple of keys and indexes) to a value inside a parsed record.

    Walked with a stack, not by recursion: an earlier mutation may have nested a record deeper
    than the interpreter's recursion limit.
    """
    found: list[tuple[Any, ...]] = []
    stack: list[tuple[Any, tuple[Any, ...]]] = [(value, ())]
    while stack:
        item, trail = stack.pop()
        found.append(trail)
        if isinstance(item, dict):
            stack.extend((child, (*trail, key)) for key, child in item.items())
        elif isinstance(item, list):
            stack.extend((child, (*trail, index)) for index, child in enumerate(item))
    return found


def _edit_record(
    data: bytes, rng: random.Random, replacement: bytes | None, *, shallow: bool = False
) -> bytes:
    """Delete a random value of a random line's record, or replace it by raw JSON text
    (``shallow``: a value at most two levels down, where the type tags are)."""
    lines = _lines(data)
    index = rng.randrange(len(lines))
    try:
        record = orjson.loads(lines[index])
    except orjson.JSONDecodeError:
        return data  # an earlier mutation broke this line already
    try:
        found = _spots(record)
    except RecursionError:
        return data  # an earlier mutation nested this line deeper than the walk can go
    spots = [s for s in found if s and (len(s) <= 2 or not shallow)]
    if not spots:
        return data
    spot = rng.choice(spots)
    container = record
    for key in spot[:-1]:
        container = container[key]
    if replacement is None:
        del container[spot[-1]]
    else:
        container[spot[-1]] = _MARKER
    try:
        text = orjson.dumps(record, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:
        return data  # an earlier mutation nested it past what orjson writes
    if replacement is not None:
        text = text.replace(orjson.dumps(_MARKER), replacement, 1)
    lines[index] = text
    return b"\n".join(lines)


def flip_byte(data: bytes, rng: random.Random) -> bytes:
    position = rng.randrange(len(data))
    flipped = data[position] ^ (1 << rng.randrange(8))
    return data[:position] + bytes([flipped]) + data[position + 1 :]


def drop_line(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    del lines[rng.randrange(len(lines))]
    return b"\n".join(lines)


def duplicate_line(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    index = rng.randrange(len(lines))
    lines.insert(index, lines[index])
    return b"\n".join(lines)


def swap_lines(data: bytes, rng: random.Random) -> bytes:
    lines = _lines(data)
    first, second = rng.randrange(len(lines)), rng.randrange(len(lines))
    lines[first], lines[second] = lines[second], lines[first]
    return b"\n".join(lines)


def cut_file(data: bytes, rng: random.Random) -> bytes:
    return data[: rng.randrange(len(data))]


def delete_field(data: bytes, rng: random.Random) -> bytes:
    return _edit_record(data, rng, None)


def swap_type(data: bytes, rng: random.Random) -> bytes:
    return _edit_record(data, rng, rng.choice(_ODD_VALUES))


def nest_deeply(data: bytes, rng: random.Random) -> bytes:
    """Replace a value by a type tag (or a list) nested 200 to 1,100 levels deep."""
    # Past about 990 levels a repr or a recursive check overflows; orjson reads up to 1,024.
    depth = rng.choice([rng.randrange(200, 1_100), rng.randrange(985, 1_024)])
    opener, closer = rng.choice([(b'{"type":', b"}"), (b"[", b"]"), (b'{"a":[', b"]}")])
    deep = opener * depth + b'"TurnStarted"' + closer * depth
    return _edit_record(data, rng, deep, shallow=rng.random() < 0.5)


MUTATIONS = (
    flip_byte,
    drop_line,
    duplicate_line,
    swap_lines,
    cut_file,
    delete_field,
    swap_type,
    nest_deeply,
)


def mutated(seed: int) -> tuple[str, bytes]:
    """The mutated trace of one seed, and what was done to it (for the failure message)."""
    rng = random.Random(seed)
    index = rng.randrange(len(CORPUS))
    data = CORPUS[index]
    done = [NAMES[index]]
    for _ in range(rng.choice((1, 1, 2))):  # sometimes a second mutation, for combinations
        if not data:
            break
        mutation = rng.choice(MUTATIONS)
        data = mutation(data, rng)
        done.append(mutation.__name__)
    return " + ".join(done), data


def test_mutated_traces_raise_only_library_errors(tmp_path: Path) -> None:
    """Reading, replaying and resuming mutated traces raises nothing but FsmAgentError."""
    scratch = tmp_path / "mutated.jsonl"
    for seed in range(EXAMPLES):
        what, data = mutated(seed)
        scratch.write_bytes(data)
        for action in (read_trace, replay, resume):
            try:
                action(scratch)
            except FsmAgentError:
                pass
            except Exception as exc:
                pytest.fail(
                    f"seed {seed} ({what}): {action.__name__} raised "
                    f"{type(exc).__name__}: {str(exc)[:300]}"
                )
