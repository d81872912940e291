"""Redaction of streamed tool input (DESIGN §8): for any JSON object, written in any style and
cut into any pieces, the rewritten pieces parse to what the record-level key rule makes of
the object, and no value under a sensitive key survives in them, whatever its type (a
string, a number, or any string or number inside an array or object stored there); read
again after a copy, the rewritten pieces leave the scanner as the original ones did."""

from __future__ import annotations

import itertools
import json
import re
from typing import Any, Final

import orjson
from hypothesis import assume, example, given
from hypothesis import strategies as st

from fsm_agent.trace.redact import KEY_RULES_ONLY, REDACTED, has_sensitive_key, is_sensitive_key
from fsm_agent.trace.stream_input_redaction import ToolInputScanner

_MARK = "§"
"""Every value under a sensitive key that must be redacted begins and ends with this
character, and no other text holds it: finding it in the rewritten text is a leak."""

_TEXT = st.text(alphabet=st.characters(blacklist_characters=_MARK, codec="utf-8"), max_size=8)
_KEYS = (
    st.sampled_from(
        [
            "password",
            "api_key",
            "X-Api-Key",
            "access-token",
            "Authorization",
            "ſecret",
            "token",
            "pin",
            "Private-Key",
            "pinned",
            "input_tokens",
            "path",
            "type",
            'quo"te',
            "back\\slash",
            "ünïcode",
            "emoji😀",
        ]
    )
    | _TEXT
)
_SECRETS = _TEXT.map(lambda text: f"{_MARK}{text}{_MARK}")
_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53), max_value=2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _TEXT
)


@st.composite
def _objects(draw: st.DrawFn, depth: int = 0) -> dict[str, Any]:
    """An object whose sensitive keys hold a marked secret, an empty string, or any value
    (a number, null, a nested object or array, where redaction walks on)."""
    out: dict[str, Any] = {}
    for key in draw(st.lists(_KEYS, max_size=4)):
        inner = _LEAVES if depth >= 2 else _LEAVES | _objects(depth + 1) | _arrays(depth + 1)
        if is_sensitive_key(key):
            out[key] = draw(_SECRETS | st.just("") | inner)
        else:
            out[key] = draw(inner)
    return out


@st.composite
def _arrays(draw: st.DrawFn, depth: int) -> list[Any]:
    inner = _LEAVES if depth >= 2 else _LEAVES | _objects(depth + 1)
    return draw(st.lists(inner, max_size=3))


def _escaped(text: str) -> str:
    """``text`` as a JSON string's content with every character a ``\\uXXXX`` escape."""
    units = text.encode("utf-16-be")
    return "".join(f"\\u{units[i]:02x}{units[i + 1]:02x}" for i in range(0, len(units), 2))


def _written(value: Any, style: dict[str, Any]) -> str:
    """``value`` as JSON text in ``style``: ASCII or not, compact or spaced (newlines
    included), key names as written or spelled in ``\\u`` escapes."""
    comma: str = style["comma"]
    if isinstance(value, dict):
        items = []
        for key, item in value.items():
            name = f'"{_escaped(key)}"' if style["escape_keys"] else _written(key, style)
            items.append(f"{name}{style['colon']}{_written(item, style)}")
        return "{" + comma.join(items) + "}"
    if isinstance(value, list):
        return "[" + comma.join(_written(item, style) for item in value) + "]"
    return json.dumps(value, ensure_ascii=style["ascii"])


_STYLES = st.fixed_dictionaries(
    {
        "ascii": st.booleans(),
        "escape_keys": st.booleans(),
        "colon": st.sampled_from([":", ": ", " : ", ":\n  "]),
        "comma": st.sampled_from([",", ", ", ",\n  ", " ,\t"]),
    }
)


def _cut(text: str, cuts: list[int]) -> list[str]:
    """``text`` cut at ``cuts`` (any positions; repeats make empty pieces)."""
    bounds = [0, *sorted(min(cut, len(text)) for cut in cuts), len(text)]
    return [text[start:stop] for start, stop in itertools.pairwise(bounds)]


def _rewritten(pieces: list[str]) -> list[str]:
    scanner = ToolInputScanner()
    return [scanner.rewrite(piece) for piece in pieces]


@given(
    value=_objects(),
    style=_STYLES,
    cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=12),
)
def test_rewritten_pieces_parse_to_the_redacted_input(
    value: dict[str, Any], style: dict[str, Any], cuts: list[int]
) -> None:
    """The concatenation is the input as the key rule redacts it; a secret's text is in no
    piece, in any spelling; an input with no sensitive key passes piece for piece."""
    text = _written(value, style)
    assume("sk-ant-" not in text)  # API-key-shaped text is the secret-string rule's business
    pieces = _cut(text, cuts)
    out = _rewritten(pieces)
    joined = "".join(out)
    redacted = orjson.loads(joined)
    assert redacted == KEY_RULES_ONLY.value(orjson.loads(text))
    _assert_nothing_under_a_credential(redacted, under=False)
    assert _MARK not in joined
    assert "\\u00a7" not in joined.lower()
    for secret in _secrets_of(value):
        if len(secret) >= 4:
            for ascii_only in (True, False):
                assert json.dumps(secret, ensure_ascii=ascii_only)[1:-1] not in joined
    if not has_sensitive_key(value):
        assert out == pieces


def _assert_nothing_under_a_credential(value: Any, *, under: bool) -> None:
    """No string or number stored under a sensitive key, at any depth, survives: each is
    ``[REDACTED]``, and only ``true``, ``false``, ``null`` and ``""`` are left there."""
    if isinstance(value, dict):
        for key, item in value.items():
            _assert_nothing_under_a_credential(item, under=under or is_sensitive_key(key))
    elif isinstance(value, list):
        for item in value:
            _assert_nothing_under_a_credential(item, under=under)
    elif under:
        assert value is None or isinstance(value, bool) or value in (REDACTED, ""), value


@given(value=_objects(), style=_STYLES)
def test_the_scanner_agrees_with_the_key_rule_split_at_every_point(
    value: dict[str, Any], style: dict[str, Any]
) -> None:
    """For any JSON object, the streamed text split in two at every point, and cut into
    pieces of one character: the rewritten pieces parse to what the record-level key rule
    makes of the object."""
    text = _written(value, style)
    assume("sk-ant-" not in text)
    expected = KEY_RULES_ONLY.value(orjson.loads(text))
    for cut in range(len(text) + 1):
        joined = "".join(_rewritten([text[:cut], text[cut:]]))
        assert orjson.loads(joined) == expected, f"cut at {cut}"
    assert orjson.loads("".join(_rewritten(list(text)))) == expected


def _secrets_of(value: Any) -> list[str]:
    """The marked strings in ``value``."""
    if isinstance(value, dict):
        return [s for item in value.values() for s in _secrets_of(item)]
    if isinstance(value, list):
        return [s for item in value for s in _secrets_of(item)]
    return [value] if isinstance(value, str) and value.startswith(_MARK) else []


_TOKENS = st.sampled_from(
    [
        "{",
        "}",
        "[",
        "]",
        ":",
        ",",
        '"',
        "\\",
        '"password"',
        '"a"',
        '"hunter2"',
        "tru",
        "e",
        "-1",
        ".5",
        "null",
        " ",
        "\n",
        "\\u0041",
        "x",
        "'",
    ]
)


_AFTER_A_KEY: Final = re.compile(r'"password"[ \n]*:[ \n]*"hunter2"')
"""A string after a sensitive name and a colon, in an object or not (no braces, inside an
array): the value of a key, whatever else the text breaks."""
_VALUE_GOES_ON: Final = re.compile(r'"\[REDACTED\]"[ \n]*"hunter2"')
"""A string right after a redacted value: more of it, as the text was meant."""


@given(
    text=st.lists(_TOKENS, max_size=24).map("".join),
    cuts=st.lists(st.integers(min_value=0, max_value=80), max_size=8),
)
@example(text='"password":"hunter2"', cuts=[])  # a key and value with no braces
@example(text='{"password":"a" "hunter2"}', cuts=[])  # a value that goes on
def test_any_text_in_any_pieces_is_rewritten_without_error(text: str, cuts: list[int]) -> None:
    """The scanner is total: any text, cut anywhere, is rewritten without an exception; what
    it makes of valid JSON is what the key rule makes of it, and a string that follows a
    sensitive key's colon, or a redacted value, never survives, whether the text is JSON or
    not. Text that names
    no credential passes as it came, JSON or not."""
    joined = "".join(_rewritten(_cut(text, cuts)))
    assert _AFTER_A_KEY.search(joined) is None
    assert _VALUE_GOES_ON.search(joined) is None
    if "password" not in text and "\\u" not in text:
        assert joined == text
    try:
        parsed = orjson.loads(text)
    except orjson.JSONDecodeError:
        return
    assert orjson.loads(joined) == KEY_RULES_ONLY.value(parsed)


def _continued(pieces: list[str], written: list[str], copied: int) -> list[str]:
    """What a scanner makes of the stream when it first reads the ``copied`` rewritten pieces
    (a copied prefix: the empty ones are skipped, as the writer skips them), then the original
    pieces from there on; the copied pieces must come back as they are."""
    scanner = ToolInputScanner()
    for piece in written[:copied]:
        if piece:
            assert scanner.rewrite(piece) == piece, "a rewritten piece read again is unchanged"
    return [scanner.rewrite(piece) if piece else piece for piece in pieces[copied:]]


_MARKED_TOKENS = st.sampled_from(['"token"', "token", "[REDACTED]", '"[REDACTED]"']) | _TOKENS
_ANY_INPUT = st.builds(_written, _objects(), _STYLES) | st.lists(_MARKED_TOKENS, max_size=24).map(
    "".join
)
"""A JSON object in any style, or any run of tokens, the writer's marks among them."""


@given(
    text=st.builds(_written, _objects(), _STYLES)
    | st.lists(_MARKED_TOKENS, max_size=24).map("".join),
    cuts=st.lists(st.integers(min_value=0, max_value=2000), max_size=8),
    copied=st.integers(min_value=0, max_value=9),
)
def test_a_copied_prefix_leaves_the_scanner_as_the_original_pieces_did(
    text: str, cuts: list[int], copied: int
) -> None:
    """For any input, JSON or not, cut anywhere, and a copy that ends after any piece: the
    pieces after the copy are rewritten as one scanner of the whole stream rewrites them
    (the rewritten text carries the scanner's state; up to nine escapes pending at a piece's
    end inside one dropped value, which eight cuts cannot exceed)."""
    pieces = _cut(text, cuts)
    written = _rewritten_skipping(pieces)
    copied = min(copied, len(pieces))
    assert _continued(pieces, written, copied) == written[copied:]


def _rewritten_skipping(pieces: list[str]) -> list[str]:
    """The pieces as one writer writes them (an empty piece is not scanned)."""
    scanner = ToolInputScanner()
    return [scanner.rewrite(piece) if piece else piece for piece in pieces]
