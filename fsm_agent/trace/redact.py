"""Redaction: secrets never reach a trace file (DESIGN §8).

Two rules, applied to every record before it is rendered:

* a **sensitive key** (``api_key``, ``x-api-key``, ``authorization``, ``secret``, ``password``,
  ``token``, ``access_token``, ...) has its value replaced, whatever its type: a string
  becomes its mask (:func:`mask`), a number :data:`REDACTED`, and so does every string and
  number inside an array or object stored there, at any depth
  (``{"api_keys": ["[REDACTED]", "[REDACTED]"]}``). Such a
  container keeps its shape (its keys, its length) and ``true``, ``false``, ``null`` and the
  empty string stay, for they hold no secret: a tool input streamed as text is redacted as
  its pieces arrive, and the text written so far must say where the reading is (see
  :mod:`fsm_agent.trace.stream_input_redaction`), which a container dropped whole could not.
  Usage counters such as ``input_tokens`` or ``max_output_tokens`` end in ``tokens`` and are
  not sensitive keys;
* a **secret string** (given to the writer, plus anything shaped like an Anthropic API key)
  is replaced by its mask wherever it occurs inside any string value, or inside a key (a model
  may name a field by one; of two keys redacted alike, the last one's value stays).

**A mask keeps the length** (in code points, what ``len`` counts): text of ``n`` characters
becomes :data:`REDACTED` followed by ``*`` up to ``n`` characters, or :data:`REDACTED` alone
when ``n`` is below its 10. The core decides on lengths (the tool-result budget, token
estimates that trigger compaction, snips and limits, DESIGN §5): replay feeds it the redacted
events, so a run whose secrets all have 10 characters or more replays as it ran, while a
shorter one reads longer in the trace than it was. A mask gives the length away, nothing
else. Redaction is idempotent (a mask, redacted again, stays): a trace copied into a fork's
or resume's is redacted again. A secret a mask itself spells (only ``*``, or a piece of
``[REDACTED]`` with stars after it) is not looked for: every mask would hold it.

The writer checks first: secret strings are searched for in the bytes it rendered anyway
(:meth:`Redactor.holds_secret`), key names on the record (:func:`has_sensitive_key`, each
distinct name judged once per process), skipping the fields of an event or effect that cannot
hold a key from outside (:mod:`fsm_agent.trace.closed_fields`). Only a flagged record is
walked by :meth:`Redactor.value`, which copies only the containers it changes. Replay feeds
the redacted events, so a replayed core sees a mask exactly where the recording core's trace
shows it.

A tool input streamed as JSON text (``input_json_delta``) holds no object to walk: the key
rule is applied to its text by :mod:`fsm_agent.trace.stream_input_redaction`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Final

import orjson

REDACTED: Final = "[REDACTED]"
"""What a redacted value reads, padded to its length by :func:`mask`."""
MASK_FILL: Final = "*"
"""The character a mask is padded with after :data:`REDACTED`."""

CREDENTIAL_WORDS: Final = (
    "api_?key",
    "authorization",
    "secret",
    "password",
    "passwd",
    "cookie",
    "credential",
    "private_?key",
    "passphrase",
    "passcode",
)
"""Patterns that mark a key name holding a credential wherever they occur in it (in any case,
``-`` read as ``_``). With :data:`LAST_PART_WORDS` and :data:`WHOLE_KEY_WORDS`, every name the
key rule knows; the rule that looks for them in text
(:mod:`fsm_agent.trace.stream_input_redaction`) is built from the same tuples, so the two
cannot drift apart."""
LAST_PART_WORDS: Final = ("token", "pin")
"""Names that mark a credential as a whole key or as its last ``_`` part: ``token``,
``access_token``, ``x_auth_token``, ``card_pin``; never ``input_tokens`` or ``pinned``."""
WHOLE_KEY_WORDS: Final = ("bearer",)
"""Names that mark a credential only as the whole key."""
_SENSITIVE_KEY: Final = re.compile(
    "|".join(
        [
            *CREDENTIAL_WORDS,
            *(f"(?:^|_){word}$" for word in LAST_PART_WORDS),
            *(f"^{word}$" for word in WHOLE_KEY_WORDS),
        ]
    ),
    re.IGNORECASE,
)
_KEY_SHAPED: Final = re.compile(r"sk-ant-[A-Za-z0-9_\-]{8,}")
_KEY_PREFIX: Final = "sk-ant-"
_KEY_BEGUN: Final = re.compile(r"sk-ant-[A-Za-z0-9_\-]{0,7}$")
"""The end of a text where an API key may have begun, too short yet to be one."""
_CONTAINERS: Final = frozenset({dict, list, tuple})
"""A set, not a tuple: ``type(x) in`` a tuple compares ``x``'s type with each member in turn,
at the cost of a failed rich comparison per member; a set hashes it once."""
_MIN_SECRET: Final = 4
_SAFE_KEYS_LIMIT: Final = 4096
"""Key names remembered (records repeat a few dozen; tool inputs add more)."""
_SAFE_KEYS: Final[set[Any]] = set()
"""Dict keys judged not sensitive, each judged once per process (non-strings included)."""


def mask(length: int) -> str:
    """What redacted text of ``length`` code points reads: :data:`REDACTED`, padded with
    :data:`MASK_FILL` to ``length`` when that is longer (see the module docstring)."""
    return REDACTED + MASK_FILL * (length - len(REDACTED)) if length > len(REDACTED) else REDACTED


def _masked(match: re.Match[str]) -> str:
    return mask(match.end() - match.start())


def _spelled_by_masks(secret: str) -> bool:
    """Whether every long enough mask holds ``secret`` (``****``, ``ACTED]**``)."""
    return secret in REDACTED + MASK_FILL * len(secret)


def spellings(secret: str) -> tuple[str, ...]:
    """``secret``, and ``secret`` as the inside of a JSON string spells it where that differs
    (``"`` and ``\\`` escaped, control characters as escapes): a tool input streams as JSON text,
    whose pieces hold a secret with a quote or a backslash only in that spelling."""
    escaped = orjson.dumps(secret).decode()[1:-1]
    return (secret,) if escaped == secret else (secret, escaped)


def is_sensitive_key(key: str) -> bool:
    """Whether a value stored under ``key`` is a credential (``-`` counts as ``_``)."""
    return _SENSITIVE_KEY.search(key.replace("-", "_")) is not None


def _judged_sensitive(mapping: dict[Any, Any]) -> bool:
    """Whether a key of ``mapping`` is a sensitive key name; every key found not to be is
    remembered."""
    safe = _SAFE_KEYS
    for key in mapping:
        if key in safe:
            continue
        if isinstance(key, str) and is_sensitive_key(key):
            return True
        if len(safe) >= _SAFE_KEYS_LIMIT:
            safe.clear()
        safe.add(key)
    return False


def has_sensitive_key(value: Any) -> bool:
    """Whether any key of a JSON-like value, at any depth, is a sensitive key name.

    Iterative, so a model event nested thousands deep is checked like any other. A dict whose
    keys were all judged before is cleared by one subset test (a loop in C); only its values
    are looked at in Python, for containers to look into.
    """
    safe, containers = _SAFE_KEYS, _CONTAINERS  # locals: this runs for every record written
    pending = [value] if type(value) in containers else []
    push = pending.append
    while pending:
        current = pending.pop()
        if type(current) is dict:
            if not current.keys() <= safe and _judged_sensitive(current):
                return True
            current = current.values()
        for item in current:
            if type(item) in containers:
                push(item)
    return False


class Redactor:
    """Replaces credentials in record dicts; built once per writer.

    Args:
        secrets: strings that must never be written (an API key, a token). Empty strings
            are ignored, and so is a string every mask spells (``****``); strings shorter
            than 4 characters are refused (they would redact half the trace and still leak
            by elimination).

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
            if not _spelled_by_masks(secret):
                kept.append(secret)
        # Longest first, so a secret containing another is replaced whole.
        self._secrets: tuple[str, ...] = tuple(sorted(set(kept), key=len, reverse=True))
        # What text() replaces: each secret, and each as JSON text spells it (longest first).
        self._spellings: tuple[str, ...] = tuple(
            sorted({form for secret in kept for form in spellings(secret)}, key=len, reverse=True)
        )
        # As they appear inside a JSON string (quotes and backslashes escaped).
        self._secret_bytes = tuple(orjson.dumps(form)[1:-1] for form in self._spellings)
        # Each spelling's mask: as long as its secret (the JSON text decodes to the secret).
        masks = {form: mask(len(secret)) for secret in kept for form in spellings(secret)}
        self._masks = tuple(masks[form] for form in self._spellings)

    @property
    def secrets(self) -> tuple[str, ...]:
        """The secret strings this redactor replaces (longest first)."""
        return self._secrets

    @property
    def spellings(self) -> tuple[str, ...]:
        """What :meth:`text` looks for: each secret, and each as JSON text spells it where
        that differs (longest first)."""
        return self._spellings

    def holds_secret(self, serialized: bytes) -> bool:
        """Whether rendered JSON holds a configured secret or API-key-shaped text."""
        # find(), not ``in``: for bytes, ``in`` first tries its operand as an integer and
        # pays for the failure on every call.
        if serialized.find(b"sk-ant-") >= 0:
            return True
        # Most writers have no secret string: then no generator is built at all.
        return bool(self._secret_bytes) and any(
            secret in serialized for secret in self._secret_bytes
        )

    def text(self, value: str) -> str:
        """``value`` with every secret string (and API-key-shaped text) replaced by its mask."""
        for secret, masked in zip(self._spellings, self._masks, strict=True):
            if secret in value:
                value = value.replace(secret, masked)
        if "sk-ant-" in value:
            value = _KEY_SHAPED.sub(_masked, value)
        return value

    def text_so_far(self, text: str) -> str:
        """``text``, still arriving (a model's streamed line), as it may be shown now: redacted,
        and cut before a tail that may begin a secret string or an API key whose rest has not
        arrived yet (shown, it would give their start away)."""
        text = self.text(text)
        keep = len(text)
        for secret in (*self._secrets, _KEY_PREFIX):
            for size in range(min(len(secret) - 1, len(text)), 0, -1):
                if text.endswith(secret[:size]):
                    keep = min(keep, len(text) - size)
                    break
        begun = _KEY_BEGUN.search(text)
        if begun is not None:
            keep = min(keep, begun.start())
        return text[:keep]

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
        renamed = False
        safe = _SAFE_KEYS
        for key, item in mapping.items():
            if isinstance(key, str):
                if key not in safe and is_sensitive_key(key):
                    new: Any = self._credential(item)
                else:
                    new = self.value(item)
                renamed = renamed or self.text(key) != key
            else:
                new = self.value(item)
            if new is not item:
                if out is None:
                    out = dict(mapping)
                out[key] = new
        if renamed:
            # A key that is, or holds, a secret string (a model may write one as a name) is
            # redacted as a string is; of two keys redacted alike, the last one's value stays.
            text = self.text
            out = {
                (text(key) if isinstance(key, str) else key): item
                for key, item in (mapping if out is None else out).items()
            }
        return mapping if out is None else out

    def _credential(self, value: Any) -> Any:
        """A value stored under a sensitive key, redacted (the same object when nothing
        changed): a non-empty string becomes its mask, a number :data:`REDACTED`, a container
        keeps its shape with every value in it redacted alike (its keys as any key is), and
        ``true``, ``false``, ``null`` and ``""`` stay. A mask is its own mask: the same
        object comes back."""
        if isinstance(value, str):
            if not value:
                return value
            masked = mask(len(value))
            return value if masked == value else masked
        if value is None or isinstance(value, bool):
            return value
        if isinstance(value, dict):
            text = self.text
            out = {
                (text(key) if isinstance(key, str) else key): self._credential(item)
                for key, item in value.items()
            }
            same = len(out) == len(value) and all(
                new_key is key and new is item
                for (new_key, new), (key, item) in zip(out.items(), value.items(), strict=True)
            )
            return value if same else out
        if isinstance(value, list | tuple):
            items = [self._credential(item) for item in value]
            same = all(new is item for new, item in zip(items, value, strict=True))
            return value if same else items
        return REDACTED  # a number (or anything else a record may hold there)


KEY_RULES_ONLY: Final = Redactor()
"""A redactor with no secret strings: what replay applies to the records it produces."""
