"""Turns whose trace begins with the transcript another trace holds (``transcript_from``).

Every user turn of a conversation starts from the transcript the turn before ended with. A
``TurnStarted`` record that holds it whole lets each turn's trace replay on its own, and makes
a conversation's traces grow as the square of its turns (300 short turns wrote 43 MB). So a
session writes the whole transcript only every few turns (``full_transcript_every``); a turn
in between writes, beside its event,

    "transcript_from": {"messages": 41, "sha256": "9f2c…", "trace": "run-….jsonl"}

and in its event's ``messages`` only what follows those 41 messages, which are the whole
transcript of the ``TurnStarted`` record of ``trace`` (a file in the same folder, named
without a folder; it may itself begin in another), ``sha256`` the digest of that array as
written (keys sorted, no spaces). Readers put the record back together before anything else
sees it (:func:`resolve`): replay, ``show``, ``diff``, fork and resume see the records a whole
transcript gives. What is lost is only that a turn's file no longer reads alone: the folder
must hold the turns it begins in.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Any, Final

import orjson

from fsm_agent.errors import TraceError, TraceFormatError, TranscriptBaseError
from fsm_agent.trace.reader import apply_upgrades, header_from_line, iter_lines, parse_line
from fsm_agent.trace.records import JSON_OPTIONS, TRANSCRIPT_FROM

__all__ = ["LINKS_FOLLOWED", "resolve", "transcript_digest"]

LINKS_FOLLOWED: Final = 100_000
"""The most traces one transcript is looked for in (a session writes it whole far sooner)."""

_DIGEST: Final = re.compile(r"[0-9a-f]{64}")


def transcript_digest(array: bytes) -> str:
    """The ``sha256`` a turn that begins in a trace records: of that trace's ``TurnStarted``
    messages, the JSON array as written."""
    return hashlib.sha256(array).hexdigest()


def resolve(data: dict[str, Any], *, line: int, source: str | None) -> dict[str, Any]:
    """``data``, an event record with a ``transcript_from`` field, as it reads whole: its
    event's messages preceded by those of the trace it names, the field left out.

    Raises:
        TraceFormatError: the field is not a well-formed reference, or its record is not a
            ``TurnStarted`` event's.
        TranscriptBaseError: the trace named cannot give the transcript (missing, unreadable,
            other messages, a loop of references), or ``source`` is None (the trace was not
            read from a file, so there is no folder to look in).
    """
    name, count, digest = _reference(data[TRANSCRIPT_FROM], line=line, source=source)
    added = _turn_messages(data, line=line, source=source)
    if source is None:
        raise TranscriptBaseError(
            path=None, base=name, problem="cannot be looked for: read this trace from its file"
        )
    messages = _transcript_in(Path(source).parent / name, count=count, top=source)
    if transcript_digest(orjson.dumps(messages, option=JSON_OPTIONS)) != digest:
        raise TranscriptBaseError(
            path=source,
            base=name,
            problem="holds other messages than the ones this turn was written after "
            "(their digest differs: the file was replaced or edited)",
        )
    resolved = {key: value for key, value in data.items() if key != TRANSCRIPT_FROM}
    resolved["event"] = {**data["event"], "messages": [*messages, *added]}
    return resolved


def _reference(value: Any, *, line: int, source: str | None) -> tuple[str, int, str]:
    """``transcript_from``'s trace name, message count and digest, checked."""

    def wrong(field: str, problem: str) -> TraceFormatError:
        return TraceFormatError(
            line=line, path=f"$.{TRANSCRIPT_FROM}{field}", problem=problem, source=source
        )

    if type(value) is not dict or set(value) != {"messages", "sha256", "trace"}:
        raise wrong("", "expected an object of messages, sha256 and trace")
    name, count, digest = value["trace"], value["messages"], value["sha256"]
    # A file name only: a trace never sends its reader to read files outside its folder.
    if type(name) is not str or name in ("", ".", "..") or "/" in name or "\\" in name:
        raise wrong(".trace", "expected the name of a trace file in the same folder")
    if type(count) is not int or count < 0:
        raise wrong(".messages", "expected a count of messages")
    if type(digest) is not str or not _DIGEST.fullmatch(digest):
        raise wrong(".sha256", "expected a SHA-256 digest in lowercase hex")
    return name, count, digest


def _turn_messages(data: dict[str, Any], *, line: int, source: str | None) -> list[Any]:
    """The messages of a ``TurnStarted`` event's record."""
    event = data.get("event")
    if type(event) is not dict or event.get("type") != "TurnStarted":
        raise TraceFormatError(
            line=line,
            path=f"$.{TRANSCRIPT_FROM}",
            problem="only a TurnStarted event's record begins with another trace's transcript",
            source=source,
        )
    messages = event.get("messages")
    if type(messages) is not list:
        raise TraceFormatError(
            line=line, path="$.event.messages", problem="expected an array", source=source
        )
    return messages


def _transcript_in(base: Path, *, count: int, top: str) -> list[Any]:
    """The whole transcript of ``base``'s ``TurnStarted`` record, which must hold ``count``
    messages, following the traces it begins in (one after another, not recursively: a
    conversation of thousands of turns is not thousands of frames deep)."""
    chain: list[tuple[Path, list[Any], int | None]] = []  # latest first
    seen: set[str] = set()
    current: Path | None = base
    while current is not None:
        key = os.path.realpath(current)
        if key in seen:
            raise TranscriptBaseError(
                path=top, base=current.name, problem="leads back to itself through the traces"
            )
        if len(chain) >= LINKS_FOLLOWED:
            raise TranscriptBaseError(
                path=top,
                base=current.name,
                problem=f"is more than {LINKS_FOLLOWED:,} traces back (a session writes "
                "the whole transcript far sooner)",
            )
        seen.add(key)
        record, line = _first_record(current, top=top)
        own = _turn_messages(record, line=line, source=str(current))
        reference = record.get(TRANSCRIPT_FROM)
        if reference is None:
            chain.append((current, own, None))
            current = None
        else:
            name, before, _ = _reference(reference, line=line, source=str(current))
            chain.append((current, own, before))
            current = current.parent / name
    messages: list[Any] = []
    for file, own, before in reversed(chain):
        if before is not None and before != len(messages):
            raise TranscriptBaseError(
                path=top,
                base=file.name,
                problem=f"was written after {_count(before)}, and the trace it begins in "
                f"holds {len(messages)}",
            )
        messages += own
    if len(messages) != count:
        raise TranscriptBaseError(
            path=top,
            base=base.name,
            problem=f"holds {_count(len(messages))}, and this turn was written after {count}",
        )
    return messages


def _count(messages: int) -> str:
    return f"{messages} message" if messages == 1 else f"{messages} messages"


def _first_record(file: Path, *, top: str) -> tuple[dict[str, Any], int]:
    """The record after ``file``'s header, upgraded, and its line number."""
    if file.exists() and not file.is_file():  # a pipe would never end; a folder is no trace
        raise TranscriptBaseError(path=top, base=file.name, problem="is not a regular file")
    try:
        with file.open("rb") as handle:
            lines = iter_lines(handle)
            first = next(lines, None)
            second = next(lines, None)
            if first is None or second is None:
                raise TranscriptBaseError(
                    path=top, base=file.name, problem="holds no record of a turn's start"
                )
            _, upgrades = header_from_line(*first, str(file))
            number, content, complete = second
            data = parse_line(content, number, complete, str(file))
    except FileNotFoundError:
        raise TranscriptBaseError(
            path=top, base=file.name, problem="is not in the folder"
        ) from None
    except OSError as exc:
        raise TranscriptBaseError(
            path=top, base=file.name, problem=f"cannot be read ({exc.strerror or exc})"
        ) from None
    except TranscriptBaseError:
        raise
    except TraceError as exc:
        raise TranscriptBaseError(
            path=top, base=file.name, problem=f"is not a trace that can be read ({exc})"
        ) from None
    if type(data) is not dict:
        raise TranscriptBaseError(path=top, base=file.name, problem="holds no turn's start")
    if upgrades:
        data = apply_upgrades(upgrades, data, number, str(file))
    return data, number
