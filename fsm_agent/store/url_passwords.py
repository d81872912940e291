"""The passwords a store URL holds, and the URL and error texts as they may be shown.

A PostgreSQL URL may carry its password in two places, ``postgresql://user:PASSWORD@host/db``
and ``?password=PASSWORD``; an error about the URL (a mistyped option, a space in the
password) quotes parts of it. What a user sees of either never holds the password
(DESIGN §8).
"""

from __future__ import annotations

from typing import Final
from urllib.parse import unquote

HIDDEN: Final = "***"


def url_passwords(url: str) -> tuple[str, ...]:
    """The passwords in ``url``, as written and percent-decoded (a driver quotes either)."""
    _, sep, rest = url.partition("://")
    if not sep:
        return ()
    location, _, query = rest.partition("?")
    found = []
    credentials, at, _ = location.rpartition("@")
    if at and ":" in credentials:
        found.append(credentials.split(":", 1)[1])
    for pair in query.split("&"):
        name, equals, value = pair.partition("=")
        if equals and unquote(name).strip().lower() == "password":
            found.append(value)
    spellings = (spelling for value in found for spelling in (value, unquote(value)))
    # Longest first, so a password holding another is hidden whole.
    return tuple(sorted({spelling for spelling in spellings if spelling}, key=len, reverse=True))


def without_passwords(text: str, url: str) -> str:
    """``text`` (``url`` itself, or an error about it) with the passwords of ``url`` hidden."""
    for password in url_passwords(url):
        text = text.replace(password, HIDDEN)
    return text
