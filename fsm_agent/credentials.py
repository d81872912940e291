"""Credentials found in configuration, so that what is shown of it never holds them (DESIGN §8).

Three shapes: a value under a credential's name (an ``Authorization`` header, an
``X-Api-Key``, a ``GITHUB_TOKEN`` environment variable; the names
:func:`~fsm_agent.trace.redact.is_sensitive_key` judges), with the token of ``Bearer <token>``
alone as well; and the password of a URL, ``scheme://user:PASSWORD@host/...`` or
``?password=PASSWORD`` (a PostgreSQL URL may carry it either way), which an error about the
URL (a mistyped option, a space in the password) may quote.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final
from urllib.parse import unquote

from fsm_agent.trace.redact import is_sensitive_key

HIDDEN: Final = "***"
"""What a URL's password is shown as."""


def named_credentials(pairs: Iterable[tuple[str, str]]) -> list[str]:
    """The values of ``(name, value)`` pairs (headers, environment variables) whose name is a
    credential's, each whole and, after a scheme such as ``Bearer``, its token alone."""
    found: list[str] = []
    for name, value in pairs:
        if is_sensitive_key(name.strip()):
            found += [value.strip(), *value.split()[1:]]
    return [value for value in found if value]


def url_passwords(url: str) -> tuple[str, ...]:
    """The passwords in ``url``, as written and percent-decoded (a driver quotes either),
    longest first."""
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
