"""Text from outside, made safe to print on a terminal.

A model's text, a tool's name, input and result, and whatever a trace holds reach the person
at the terminal. A terminal obeys what it is sent: an escape sequence moves the cursor, erases
a line or sets the window title; a carriage return or a backspace prints over what came
before; Unicode's bidirectional controls reorder what is shown; invisible characters hide
text. A hostile model could so show ``ls`` in a permission question whose command is
``rm -rf ~``. :func:`shown` spells each such character out (``\\x1b``, ``\\u202e``), so that
what is printed is what is there. Line feeds and tabs are kept (:func:`shown_on_one_line`
spells line feeds out as well).
"""

from __future__ import annotations

import re
from typing import Final

_HIDDEN: Final = re.compile(
    # Controls (C0 but tab and line feed, DEL, C1); then Unicode's format characters (soft
    # hyphen, bidirectional and zero-width controls, invisible operators, tags...) and the
    # line and paragraph separators. The zero-width joiner is kept: it only joins emoji.
    "[\x00-\x08\x0b-\x1f\x7f-\x9f"
    "\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e"
    "\u200b\u200c\u200e\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb"
    "\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a"
    "\U000e0001\U000e0020-\U000e007f]"
)


def _spelled(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def shown(text: str) -> str:
    """``text`` with every character a terminal would obey or hide spelled out."""
    return _HIDDEN.sub(_spelled, text)


def shown_on_one_line(text: str) -> str:
    """:func:`shown`, with line feeds spelled out too (``\\n``): for text that must stay on
    the line it is printed on, so that none of it can pass for a line of its own."""
    return shown(text).replace("\n", "\\n")
