"""`shown`: every character a terminal would obey or hide is spelled out, and only those."""

from __future__ import annotations

import sys
import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from fsm_agent.terminal_text import shown, shown_on_one_line

KEPT = {"\t", "\n", "\u200d"}  # tab, line feed, and the zero-width joiner of emoji sequences


def hidden_by_unicode(char: str) -> bool:
    return unicodedata.category(char) in {"Cc", "Cf", "Zl", "Zp"} and char not in KEPT


def test_every_control_format_and_separator_character_is_spelled_out() -> None:
    """The table covers every such character of the Unicode version Python has."""
    missed = [
        f"U+{code:04X}"
        for code in range(sys.maxunicode + 1)
        if hidden_by_unicode(chr(code)) and shown(chr(code)) == chr(code)
    ]
    assert missed == []


def test_spellings() -> None:
    assert shown("a\x1b[2Kb") == "a\\x1b[2Kb"
    assert shown("\r\b\x7f\x9b") == "\\x0d\\x08\\x7f\\x9b"
    assert shown("x\u202ey\u2028") == "x\\u202ey\\u2028"
    assert shown("\U000e0041") == "\\U000e0041"  # a tag character: invisible ASCII
    assert shown("tab\tand\nline, 👨\u200d👩, é, 中文, [bold]") == (
        "tab\tand\nline, 👨\u200d👩, é, 中文, [bold]"
    )


@given(st.text(st.characters(exclude_categories=("Cc", "Cf", "Zl", "Zp", "Cs"))))
def test_text_without_such_characters_is_unchanged(text: str) -> None:
    assert shown(text) == text


@given(st.text())
def test_what_is_shown_holds_none_of_them(text: str) -> None:
    assert not any(hidden_by_unicode(char) for char in shown(text))


def test_on_one_line_a_line_feed_is_spelled_out_too() -> None:
    assert shown_on_one_line("Bash(x)\n  why: fine\x1b[2K") == "Bash(x)\\n  why: fine\\x1b[2K"
