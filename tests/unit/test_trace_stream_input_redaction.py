"""Streamed tool input in the trace (DESIGN §8): a value under a sensitive key name never
reaches the file through ``input_json_delta`` text, whatever the model streams."""

from __future__ import annotations

import io
import json
from typing import Any

import orjson
import pytest
from test_trace_support import CONFIG, TOOLS

from fsm_agent.core import events as ev
from fsm_agent.trace.redact import REDACTED, mask
from fsm_agent.trace.stream_input_redaction import ToolInputScanner
from fsm_agent.trace.writer import TraceWriter

SECRET = "hunter2-secret"
PLAIN = "hunter2-plain"
"""A secret that names no credential itself: only the text around it can set the search off."""


def _tool_block(index: int, pieces: list[str], kind: str = "tool_use") -> list[dict[str, Any]]:
    """A tool-use block's events, its input streamed in ``pieces``."""
    start = {"type": kind, "id": f"toolu_{index}", "name": "Read", "input": {}}
    return [
        {"type": "content_block_start", "index": index, "content_block": start},
        *(
            {
                "type": "content_block_delta",
                "index": index,
                "delta": {"type": "input_json_delta", "partial_json": piece},
            }
            for piece in pieces
        ),
        {"type": "content_block_stop", "index": index},
    ]


def _written(
    events: list[dict[str, Any]], request_id: str = "r1", **kwargs: Any
) -> tuple[bytes, list[dict[str, Any]]]:
    """The trace a writer makes of ``events`` (each a model stream event), and the model
    events as the trace holds them."""
    buffer = io.BytesIO()
    writer = TraceWriter(buffer, config=CONFIG, tools=TOOLS, table_digest="d", **kwargs)
    for raw in events:
        writer.write_event(ev.ModelStreamEvent(request_id=request_id, event=raw))
    lines = [orjson.loads(line) for line in buffer.getvalue().splitlines()[1:]]
    return buffer.getvalue(), [line["event"]["event"] for line in lines]


def _input_text(events: list[dict[str, Any]], index: int = 0) -> str:
    """The input text of the block at ``index``, as the trace holds it."""
    return "".join(
        raw["delta"]["partial_json"]
        for raw in events
        if raw["type"] == "content_block_delta" and raw["index"] == index
    )


def test_a_secret_streamed_in_pieces_never_reaches_the_file() -> None:
    """The pieces of a tool input are rewritten so that they spell the redacted input; the
    pieces holding nothing to hide are written as they came. The mask is written as the value
    is read, a character for each of the value's: it keeps the value's length."""
    pieces = ['{"pass', 'word": "hu', 'nter2-secret", "pa', 'th": "a"}']
    data, events = _written(_tool_block(0, pieces))
    assert SECRET.encode() not in data
    assert b"hu" not in data.replace(b"hunter", b"")
    assert orjson.loads(_input_text(events)) == {"password": mask(len(SECRET)), "path": "a"}
    assert mask(len(SECRET)) == "[REDACTED]****"
    written = [raw["delta"]["partial_json"] for raw in events[1:-1]]
    assert written == ['{"pass', 'word": "[R', 'EDACTED]****", "pa', 'th": "a"}']


@pytest.mark.parametrize("kind", ["tool_use", "server_tool_use", "mcp_tool_use"])
def test_every_kind_of_tool_block_is_scanned(kind: str) -> None:
    """Server and MCP tool calls stream their input the same way."""
    data, events = _written(_tool_block(0, ['{"api_key": "', SECRET, '"}'], kind))
    assert SECRET.encode() not in data
    assert orjson.loads(_input_text(events)) == {"api_key": mask(len(SECRET))}


def test_a_new_block_or_request_starts_a_fresh_scan() -> None:
    """A block left inside a secret does not make the next block's text, or the next
    request's, look like one."""
    unfinished = _tool_block(0, ['{"token": "abc'])[:-1]  # never stopped
    _, events = _written([*unfinished, *_tool_block(1, ['{"path": "abc"}'])])
    assert _input_text(events, 1) == '{"path": "abc"}'
    buffer = io.BytesIO()
    writer = TraceWriter(buffer, config=CONFIG, tools=TOOLS, table_digest="d")
    for request_id, raw in [("r1", unfinished[1]), ("r2", _tool_block(0, ['"abc"'])[1])]:
        writer.write_event(ev.ModelStreamEvent(request_id=request_id, event=raw))
    assert b'"partial_json":"\\"abc\\""' in buffer.getvalue()


@pytest.mark.parametrize(
    ("kind", "field"),
    [("text_delta", "text"), ("thinking_delta", "thinking"), ("signature_delta", "signature")],
)
def test_pieces_of_other_blocks_are_untouched(kind: str, field: str) -> None:
    """Only tool input is read as JSON: a text or thinking block holding the same text is
    written as it came."""
    text = f'{{"password": "{SECRET}"}}'
    delta = {"type": "content_block_delta", "index": 0, "delta": {"type": kind, field: text}}
    data, events = _written([delta])
    assert events == [delta]
    assert SECRET.encode() in data


def test_values_the_key_rule_leaves_are_left() -> None:
    """An empty string, null, true and false are kept under a sensitive key, as the
    record-level rule keeps them: they hold no secret."""
    text = '{"password": "", "secret": null, "has_token": true, "passwd": false, "x": 5}'
    pieces = [text[i : i + 3] for i in range(0, len(text), 3)]
    data, events = _written(_tool_block(0, pieces))
    assert orjson.loads(_input_text(events)) == orjson.loads(text)
    assert b"[REDACTED]" not in data


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7])
def test_numbers_arrays_and_objects_under_a_sensitive_key_are_redacted(size: int) -> None:
    """A number under a sensitive key, and every string and number inside an array or object
    stored there, at any depth, never reach the file: the container keeps its shape."""
    text = (
        '{"pin": 987654, "token": -12.5e3, "api_keys": ["sk-one-9876", "sk-two-5432"], '
        '"credentials": {"user": "bob-4321", "pins": [1357, {"deep": "hunter2-x"}], '
        '"ok": true, "none": null}, "note": "kept", "count": 7}'
    )
    pieces = [text[i : i + size] for i in range(0, len(text), size)]
    data, events = _written(_tool_block(0, pieces))
    for secret in (b"987654", b"12.5", b"sk-one", b"sk-two", b"bob-4321", b"1357", b"hunter2"):
        assert secret not in data, secret
    assert orjson.loads(_input_text(events)) == {
        "pin": REDACTED,
        "token": REDACTED,
        "api_keys": [mask(len("sk-one-9876")), mask(len("sk-two-5432"))],
        "credentials": {
            "user": REDACTED,  # shorter than the mask
            "pins": [REDACTED, {"deep": REDACTED}],
            "ok": True,
            "none": None,
        },
        "note": "kept",
        "count": 7,
    }


def test_a_break_inside_a_container_under_a_sensitive_key_cuts_the_rest() -> None:
    """Text that breaks the grammar inside such a container cannot be read for values any
    more: the rest of the block is dropped, whatever it names."""
    pieces = ['{"credentials": {"user": bob', "-4321 plain-9876}}"]
    data, _ = _written(_tool_block(0, pieces))
    assert b"bob" not in data
    assert b"plain-9876" not in data


def test_a_key_spelled_in_escapes_and_cut_inside_them_is_judged() -> None:
    """A key name is judged as JSON reads it, ``\\u`` escapes included, wherever the pieces
    cut it."""
    pieces = ['{"pass\\', "u00", '77ord": "', SECRET[:4], SECRET[4:], '"}']
    data, events = _written(_tool_block(0, pieces))
    assert SECRET[4:].encode() not in data
    assert orjson.loads(_input_text(events)) == {"password": mask(len(SECRET))}


HOSTILE = {
    "unquoted value": ['{"password": ', SECRET, "}"],
    "single quotes": [f"{{'password': '{SECRET}'}}"],
    "missing colon": [f'{{"password" "{SECRET}"}}'],
    "second value": ['{"a": 1}', f'{{"password": "{SECRET}"}}'],
    "unterminated": ['{"password": "hunter2-sec', "ret"],
    "backslash at a piece's end": ['{"password": "ab\\', f'"{SECRET}"}}'],
    "lone backslash piece": ['{"password": "', "\\", '"', SECRET, '"}'],
    "deep arrays": ["[" * 10_000, f'{{"password": "{SECRET}"}}', "]" * 10_000],
    "deep objects": ['{"a": ' * 10_000 + f'{{"password": "{SECRET}"}}' + "}" * 10_000],
    "bad escape in a key": [f'{{"pass\\qword": "{SECRET}"}}'],
    "escaped name in broken text": [f"{{'pass\\u0077ord': '{SECRET}'}}"],
    "bare word after a key": ['{"password": nul', "l2", SECRET, "}"],
    "bare key and value": [f'"password":"{PLAIN}"'],
    "bare key and value in pieces": ['"pass', 'word"', ' : "', PLAIN, '"'],
    "string as a key in an object": [f'{{"a": "password": "{PLAIN}"}}'],
    "string as a key in an array": [f'["password": "{PLAIN}"]'],
    "array of objects": [f'[{{"a": 1}}, {{"token": "{PLAIN}"}}]'],
    "value that goes on": [f'{{"password": "abc" "{PLAIN}"}}'],
    "value that goes on after an escape": ['{"password": "a\\', f'" "{PLAIN}"}}'],
}


@pytest.mark.parametrize("pieces", list(HOSTILE.values()), ids=list(HOSTILE))
def test_hostile_input_is_written_without_its_secret(pieces: list[str]) -> None:
    """Text that is not JSON, or JSON nested 10,000 deep, or cut anywhere, never makes the
    writer raise, and the secret is in no line."""
    data, _ = _written(_tool_block(0, pieces))
    for secret in (SECRET, PLAIN):
        assert secret.encode() not in data
        assert secret[4:].encode() not in data


def test_a_bare_key_and_value_is_cut_after_the_key() -> None:
    """A key and its value with no braces (not a JSON object): the string that names a
    credential was meant as a key, so the block is cut where the text breaks, at the colon."""
    for pieces in (['"password":"hunter2"'], ['"password"', ':"hun', 'ter2"']):
        _, events = _written(_tool_block(0, pieces))
        assert _input_text(events) == f'"password"{REDACTED}'


def test_a_string_naming_no_credential_before_a_break_passes() -> None:
    """Only a string that names a credential is taken for a key when the text breaks after
    it: the rest of a block that named one elsewhere is kept."""
    pieces = ['{"token": "t", "a": "b": "c"}']
    _, events = _written(_tool_block(0, pieces))
    assert _input_text(events) == '{"token": "[REDACTED]", "a": "b": "c"}'


def test_broken_text_naming_no_credential_passes_as_it_came() -> None:
    """Invalid input with nothing to hide is written as the model sent it, so the core's
    error about it is the same on replay."""
    pieces = ['{"path": "a",', ' oops "b": tru', "e}"]
    _, events = _written(_tool_block(0, pieces))
    assert _input_text(events) == "".join(pieces)


def test_a_secret_string_on_a_rewritten_piece_is_redacted_too() -> None:
    """A rewritten piece that also holds a configured secret goes the writer's slow way,
    from the rewritten event: both are redacted."""
    piece = f'{{"password": "{SECRET}", "note": "topsecret-value"}}'
    data, events = _written(_tool_block(0, [piece]), secrets=("topsecret-value",))
    assert SECRET.encode() not in data
    assert b"topsecret-value" not in data
    assert orjson.loads(_input_text(events)) == {
        "password": mask(len(SECRET)),
        "note": mask(len("topsecret-value")),
    }


def test_a_copied_prefix_keeps_the_scan_going() -> None:
    """A writer that copies a prefix of records (a fork) and goes on live in the middle of a
    tool input judges the live pieces as one scan with the copied ones."""
    events = _tool_block(0, ['{"password', '": "', SECRET[:6], SECRET[6:], '"}'])
    full, _ = _written(events)
    records = [orjson.loads(line) for line in full.splitlines()[1:4]]  # start and two deltas
    buffer = io.BytesIO()
    writer = TraceWriter(buffer, config=CONFIG, tools=TOOLS, table_digest="d")
    for record in records:
        writer.write_record(record)
    for raw in events[3:]:
        writer.write_event(ev.ModelStreamEvent(request_id="r1", event=raw))
    assert buffer.getvalue().splitlines()[1:] == full.splitlines()[1:]
    assert SECRET.encode() not in buffer.getvalue()


@pytest.mark.parametrize(
    "pieces",
    [
        # A piece ends inside the value on a backslash: is the next quote escaped or closing?
        ['{"password": "ab\\', '"cd", "x": "y"}'],
        ['{"password": "a\\', '\\", "path": "p"}'],
        ['{"password": "\\', '"\\', '"\\', '"", "x": "y"}'],
        # The value so far is dropped: is it empty (the next quote closes it empty) or not?
        ['{"password": "', "abc", '", "path": "p"}'],
        # The block was cut after a sensitive key or at a name in broken text.
        ['{"password": abc', ' def", "x": "y"}'],
        ['{"password" "abc', '", "x": "y"}'],
        ['{"a" 1 token xyz', " more text"],
        ['{"x": 1} garbage', " password: hunter2", " more"],
        # Text that looks like the writer's marks, from the model itself.
        ['{"password": [REDACTED], "x": 1}', " more"],
        ['{"note": "[REDACTED]", "token": "[REDACTED]"}'],
        ['{"x": [REDACTED token', " more"],
        # A string meant as a key, or a sensitive value that goes on, before the break.
        ['"password"', ': "hunter2"', " more"],
        ['{"password": "ab', '" "cd"', "}"],
        # A piece ends inside a \u escape of a long value, or inside a surrogate pair.
        ['{"password": "0123456789\\u00', "e9\\u0", '0e8abc", "x": "y"}'],
        ['{"password": "0123456789\\ud8', "3d\\ude00", 'abc", "x": "y"}'],
        ['{"password": "0123456789\\ud83d', "\\ude", '00abc", "x": "y"}'],
        ['{"password": "0123456789\\ud83d\\u', 'de00abc", "x": "y"}'],
    ],
)
def test_a_copied_prefix_goes_on_as_one_writer_would_at_any_point(pieces: list[str]) -> None:
    """Cut wherever a copy may end, a writer that copies the trace's records and goes on with
    the live events writes the very bytes one writer writes for the whole stream: the
    rewritten pieces carry the scanner's state (an escape pending inside a dropped value, a
    dropped value begun, a cut)."""
    events = _tool_block(0, pieces)
    full, _ = _written(events)
    lines = full.splitlines()[1:]
    for copied in range(1, len(events)):
        buffer = io.BytesIO()
        writer = TraceWriter(buffer, config=CONFIG, tools=TOOLS, table_digest="d")
        for line in lines[:copied]:
            writer.write_record(orjson.loads(line))
        for raw in events[copied:]:
            writer.write_event(ev.ModelStreamEvent(request_id="r1", event=raw))
        assert buffer.getvalue().splitlines()[1:] == lines, f"copied {copied} records"


def test_an_escape_pending_inside_a_dropped_value_is_written_pending() -> None:
    """The written piece ends on a backslash as the original does, and the next one completes
    it as the ``\\u`` escape of the mask's next character: the text still spells the mask."""
    pieces = ['{"password": "ab\\', '"cd", "x": "y"}']
    data, events = _written(_tool_block(0, pieces))
    written = [raw["delta"]["partial_json"] for raw in events[1:-1]]
    assert written == ['{"password": "[R\\', 'u0045DACTED]", "x": "y"}']
    assert orjson.loads("".join(written)) == {"password": REDACTED, "x": "y"}
    assert b"cd" not in data


def test_a_scanner_returns_an_unchanged_piece_itself() -> None:
    """A piece with nothing to rewrite is handed back as is (no copy of a large string),
    once the text is read (``token`` is named) as before."""
    scanner = ToolInputScanner()
    pieces = ['{"tokens_used": 1, "content": "', "x" * 10_000, 'y\\"z', '"}']
    assert all(scanner.rewrite(piece) is piece for piece in pieces)


def _keys_the_rule_knows() -> list[str]:
    """A key for every name of the key rule, spelled as a model might (case, ``-`` for ``_``),
    from the rule's own tuples: a name added there is tried here."""
    from fsm_agent.trace.redact import CREDENTIAL_WORDS, LAST_PART_WORDS, WHOLE_KEY_WORDS

    keys = []
    for word in CREDENTIAL_WORDS:
        plain = word.replace("_?", "_")
        keys += [plain, f"X-{plain.replace('_', '-').title()}", f"my_{plain.upper()}"]
    for word in LAST_PART_WORDS:
        keys += [word, f"access_{word}", word.upper()]
    keys += [word.title() for word in WHOLE_KEY_WORDS]
    return keys


@pytest.mark.parametrize("key", _keys_the_rule_knows())
def test_every_name_of_the_key_rule_is_looked_for_in_text(key: str) -> None:
    from fsm_agent.trace.redact import is_sensitive_key

    assert is_sensitive_key(key)
    value = "hunter2-plain"  # names nothing itself: only the key can set the search off
    text = orjson.dumps({key: value, "path": "a"}).decode()
    data, traced = _written(_tool_block(0, [text[:5], text[5:]]))
    assert value.encode() not in data
    assert orjson.loads(_input_text(traced)) == {key: mask(len(value)), "path": "a"}


@pytest.mark.parametrize(
    "value",
    ["hunter2", "0123456789", "0123456789abcdef", 'é\n"\\/\t😀x' * 3, "😀" * 12, "\x00\x1f" * 6],
)
def test_a_dropped_value_keeps_its_length_cut_anywhere(value: str) -> None:
    """The mask has as many code points as the value decodes to, escapes and surrogate pairs
    counted as Python counts them, however the pieces cut the text (at every point, and into
    pieces of one character); a value shorter than the mask reads ``[REDACTED]``."""
    for ascii_only in (True, False):
        text = json.dumps({"password": value, "x": "y"}, ensure_ascii=ascii_only)
        expected = {"password": mask(len(value)), "x": "y"}
        for cut in range(len(text) + 1):
            scanner = ToolInputScanner()
            joined = scanner.rewrite(text[:cut]) + scanner.rewrite(text[cut:])
            assert json.loads(joined) == expected, f"cut at {cut}"
        scanner = ToolInputScanner()
        assert json.loads("".join(scanner.rewrite(char) for char in text)) == expected
        assert REDACTED in mask(len(value)) and len(mask(len(value))) == max(len(value), 10)
