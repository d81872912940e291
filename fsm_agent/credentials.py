"""Credentials found in configuration, so that what is shown of it never holds them (DESIGN §8).

Three shapes: a value under a credential's name (an ``Authorization`` header, an
``X-Api-Key``, a ``GITHUB_TOKEN`` environment variable; the names
:func:`~fsm_agent.trace.redact.is_sensitive_key` judges), with the token of ``Bearer <token>``
alone as well; the password of a URL, ``scheme://user:PASSWORD@host/...``, or a query
parameter under a credential's name, ``?password=PASSWORD`` or ``?token=TOKEN`` (a PostgreSQL
URL may carry its password either way), which an error about the URL (a mistyped option, a
space in the password) may quote; and the value of a command-line option under a
credential's name (``--token VALUE``, ``--api-key=VALUE``, ``GITHUB_TOKEN=VALUE``,
``--header "Authorization: Bearer TOKEN"``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
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
    """The passwords in ``url`` (its user info's, and the values of query parameters under a
    credential's name), as written and percent-decoded (a driver quotes either), longest
    first."""
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
        if equals and is_sensitive_key(unquote(name).strip()):
            found.append(value)
    spellings = (spelling for value in found for spelling in (value, unquote(value)))
    # Longest first, so a password holding another is hidden whole.
    return tuple(sorted({spelling for spelling in spellings if spelling}, key=len, reverse=True))


def argument_credentials(args: Sequence[str]) -> list[str]:
    """The credentials in a command's arguments: the value of an option named for a
    credential (``--token VALUE``, ``--api-key=VALUE``, ``API_KEY=VALUE``), of a header given
    as one argument (``Authorization: Bearer TOKEN``), and the password of a URL."""
    found: list[str] = []
    for position, arg in enumerate(args):
        name, equals, value = arg.partition("=")
        header, colon, field = arg.partition(":")
        if equals and " " not in name and ":" not in name:  # --api-key=VALUE, API_KEY=VALUE
            found += named_credentials([(name.lstrip("-"), value)])
        elif colon and " " not in header.strip() and not header.startswith("-"):
            found += named_credentials([(header, field)])  # Authorization: Bearer TOKEN
        elif arg.startswith("-") and position + 1 < len(args):  # --token VALUE
            found += named_credentials([(arg.lstrip("-"), args[position + 1])])
        found += url_passwords(arg)
    return list(dict.fromkeys(found))


def without_passwords(text: str, url: str) -> str:
    """``text`` (``url`` itself, or an error about it) with the passwords of ``url`` hidden."""
    return hidden(text, url_passwords(url))


def hidden(text: str, credentials: Iterable[str]) -> str:
    """``text`` with each of ``credentials`` shown as ``***`` (the longest first, so one
    holding another is hidden whole)."""
    for credential in sorted(filter(None, credentials), key=len, reverse=True):
        text = text.replace(credential, HIDDEN)
    return text
