"""Redaction: secrets never reach a trace file (DESIGN §8).

Two rules, applied to every record before it is rendered:

* a **sensitive key** (``api_key``, ``x-api-key``, ``authorization``, ``secret``, ``password``,
  ``token``, ``access_token``, ...) has its string value replaced. Usage counters such as
  ``input_tokens`` or ``max_output_tokens`` end in ``tokens`` and are left alone; so is a
  container under a sensitive key (a JSON schema's ``"password": {"type": "string"}``), which
  is walked instead, so a secret string inside it is still caught;
* a **secret string** (given to the writer, plus anything shaped like an Anthropic API key)
  is replaced wherever it occurs inside any string value.

Redaction copies only the containers it changes, so a clean record costs one walk and no
allocation. Replay feeds the redacted events, so a replayed core sees ``[REDACTED]`` exactly
where the recording core's trace shows it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Final

import orjson

REDACTED: Final = "[REDACTED]"

_SENSITIVE_KEY: Final = re.compile(
    r"""
    (?:api_?key|authorization|secret|password|passwd|cookie|credential)
    | (?:^|_)token$            # token, access_token, x_auth_token; never input_tokens
    | ^bearer$
    """,
    re.IGNORECASE | re.VERBOSE,
)
_KEY_SHAPED: Final = re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}")
# The same key rules, looked for in a serialized record: a match only means "walk it".
_SENSITIVE_KEY_IN_JSON: Final = re.compile(
    rb"""(?:api.?key|authorization|secret|passw(?:or)?d|cookie|credential|bearer)[^"]*":"""
    rb"""|["_-]token":""",
    re.IGNORECASE,
)
_KEY_WORDS: Final = (
    b"key",
    b"authorization",
    b"secret",
    b"passw",
    b"cookie",
    b"credential",
    b"bearer",
    b'token":',
)
_MIN_SECRET: Final = 4


def is_sensitive_key(key: str) -> bool:
    """Whether a value stored under ``key`` is a credential (``-`` counts as ``_``)."""
    return _SENSITIVE_KEY.search(key.replace("-", "_")) is not None


class Redactor:
    """Replaces credentials in record dicts; built once per writer.

    Args:
        secrets: strings that must never be written (an API key, a token). Empty strings
            are ignored; strings shorter than 4 characters are refused (they would redact
            half the trace and still leak by elimination).

    Raises:
        ValueError: for a secret shorter than 4 characters.
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        kept: list[str] = []
        for secret in secrets:
            if not secret:
                continue
            if len(secret) < _MIN_SECRET:
                raise ValueError(f"a secret to redact must have at least {_MIN_SECRET} characters")
            kept.append(secret)
        # Longest first, so a secret containing another is replaced whole.
        self._secrets: tuple[str, ...] = tuple(sorted(set(kept), key=len, reverse=True))
        # As they appear inside a JSON string (quotes and backslashes escaped).
        self._secret_bytes = tuple(orjson.dumps(secret)[1:-1] for secret in self._secrets)

    def may_need(self, serialized: bytes) -> bool:
        """Whether a serialized record may hold something to redact (False is certain).

        A cheap scan of the bytes the writer produced anyway; only a record it flags is
        walked by :meth:`value`, so clean records (nearly all) cost no walk.
        """
        if b"sk-ant-" in serialized:
            return True
        for secret in self._secret_bytes:
            if secret in serialized:
                return True
        lowered = serialized.lower()
        for word in _KEY_WORDS:
            if word in lowered:
                return _SENSITIVE_KEY_IN_JSON.search(serialized) is not None
        return False  # the usual case: plain substring tests, no regex

    def text(self, value: str) -> str:
        """``value`` with every secret string (and API-key-shaped text) replaced."""
        for secret in self._secrets:
            if secret in value:
                value = value.replace(secret, REDACTED)
        if "sk-ant-" in value:
            value = _KEY_SHAPED.sub(REDACTED, value)
        return value

    def value(self, value: Any) -> Any:
        """A redacted copy of a JSON-like value (the same object when nothing changed)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return self._mapping(value)
        if isinstance(value, list | tuple):
            changed = False
            items = []
            for item in value:
                new = self.value(item)
                changed = changed or new is not item
                items.append(new)
            return items if changed else value
        return value

    def _mapping(self, mapping: dict[Any, Any]) -> dict[Any, Any]:
        out: dict[Any, Any] | None = None
        for key, item in mapping.items():
            if isinstance(key, str) and isinstance(item, str) and is_sensitive_key(key):
                new: Any = REDACTED if item else item
            else:
                new = self.value(item)
            if new is not item:
                if out is None:
                    out = dict(mapping)
                out[key] = new
        return mapping if out is None else out


KEY_RULES_ONLY: Final = Redactor()
"""A redactor with no secret strings: what replay applies to the records it produces."""
