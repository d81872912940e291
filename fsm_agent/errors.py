"""The whole exception tree of fsm_agent.

Tool failures, denials and aborts are *data* (tool_results and named transitions), never
exceptions. What is raised here is one of: a definition error (a bad table or config, found
when something is built), a usage error (an event fed where it is not legal), a model-protocol
error (a malformed stream), or a trace error (a bad file, a newer schema, a divergence).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class FsmAgentError(Exception):
    """Root of every error fsm_agent raises on purpose.

    Its message never shows API-key-shaped text (DESIGN §8): an error may quote what a user
    wrote (a settings file, a permission rule, a hook command, a store URL), and an error
    message ends up in terminals, logs and CI output.
    """

    def __str__(self) -> str:
        from fsm_agent.trace.redact import KEY_RULES_ONLY  # noqa: PLC0415 - only when shown

        return KEY_RULES_ONLY.text(super().__str__())


class DefinitionError(FsmAgentError):
    """A machine table, a tool or a config is inconsistent; raised when it is built."""


class ConfigError(DefinitionError):
    """A configuration value is out of its allowed range."""


class McpWarning(UserWarning):
    """An MCP server, or a tool it lists, left out of a run: a server that did not start, or
    failed or stopped answering later; a tool that cannot be offered to the model (its schema
    is not an object schema, or its name is taken: listed twice, one of the agent's own tools',
    or another server's). The rest are kept and the run goes on."""


class SettingsWarning(UserWarning):
    """A part of a settings file that fsm_agent understands but does not act on."""


class UsageError(FsmAgentError):
    """The library was called in a way it does not allow."""


class IllegalTransition(UsageError):
    """An event was fed in a phase where no row of the table accepts it."""

    def __init__(self, *, phase: str, event: str, legal: Sequence[str]) -> None:
        self.phase = phase
        self.event = event
        self.legal = tuple(legal)
        listed = ", ".join(self.legal) if self.legal else "nothing (final phase)"
        super().__init__(f"event {event} is not legal in phase {phase!r}; legal there: {listed}")


class CorePoisoned(UsageError):
    """The core raised before and refuses further events (it may be half-changed)."""


class ModelProtocolError(FsmAgentError):
    """The model's stream broke the Messages API protocol (events out of order, bad shape)."""


class TraceError(FsmAgentError):
    """Base of everything that can go wrong reading, replaying or resuming a trace."""


class TraceFormatError(TraceError):
    """A trace line is not a valid record; names the line number and the JSON path."""

    def __init__(self, *, line: int, path: str, problem: str, source: str | None = None) -> None:
        self.line = line
        self.path = path
        self.problem = problem
        self.source = source
        where = f"{source}: " if source else ""
        super().__init__(f"{where}line {line}: {path}: {problem}")


class TraceTruncated(TraceFormatError):
    """The last line of a trace is cut off (the writer crashed mid-record)."""


class TraceVersionError(TraceError):
    """The trace was written by a newer schema than this library understands."""


class TableDigestMismatch(TraceError):
    """The trace was recorded against different machine tables than the code has now."""


class TraceWriteConflict(TraceError):
    """Trace bytes meant for an offset of a file do not fit there: the offset is past the
    file's end, or other bytes already sit at it (another writer, or the file was edited).

    ``path`` names the trace file and ``offset`` the first byte that does not fit.
    """

    def __init__(self, *, path: str, offset: int, problem: str) -> None:
        self.path = path
        self.offset = offset
        self.problem = problem
        super().__init__(f"{path}: at byte offset {offset}: {problem}")


class TranscriptBaseError(TraceError):
    """A turn's trace starts from the transcript another trace of its conversation holds
    (``transcript_from``, written to keep a long conversation's traces from growing as the
    square of its turns), and that trace cannot give it: it is missing, unreadable, or holds
    other messages than the ones the turn was written after.

    ``path`` names the trace being read, ``base`` the trace it starts from, ``problem`` what
    went wrong.
    """

    def __init__(self, *, path: str | None, base: str, problem: str) -> None:
        self.path = path
        self.base = base
        self.problem = problem
        where = path if path is not None else "this trace"
        super().__init__(
            f"{where}: its transcript begins in {base}, which {problem}; keep a "
            "conversation's traces together in one folder (a session given "
            "full_transcript_every=1, or --full-transcript-every 1, writes every turn's "
            "transcript whole)"
        )


class TraceFileRefused(TraceError):
    """A trace file a run was given and may not write; nothing of it was touched. ``path``
    names the file; ``why`` (the subclass's) says what holds it."""

    why = ""

    def __init__(self, *, path: str) -> None:
        self.path = path
        super().__init__(
            f"{path}: {self.why}; give this run a file of its own "
            "(or a folder, where each run gets a new file)"
        )


class TraceFileBusy(TraceFileRefused):
    """Another writer (another run) is writing the trace file a run was given; nothing of it
    was touched. ``path`` names the file."""

    why = "another run is writing this trace file"


class TraceFileHoldsRun(TraceFileRefused):
    """A run was given a trace file that holds an earlier run's trace (``--trace run.jsonl``
    given twice, a resume told to write over the trace it resumes); it was left as it was, so
    the earlier run can still be read, replayed and resumed. ``path`` names the file."""

    why = (
        "this file holds an earlier run's trace, so it was not overwritten (a run that did "
        "not finish, killed say, carries on with `fsm-agent resume FILE`; delete the file "
        "first to reuse its name)"
    )


class NotATraceFile(TraceFileRefused):
    """A run was given a trace file that holds something else (``--trace notes.txt``); it
    was left as it was. ``path`` names the file."""

    why = "this file holds something that is not a trace, so it was not overwritten"


class TraceWriteFailed(TraceError):
    """The trace file refused a record (a full disk, a file-size limit, a lost device).

    The run stops there: the record's step is not performed, since nothing may happen that
    the trace lacks (DESIGN §5). The writer cuts the file back to its last whole record when
    it can (``cut_back``), so the file reads as a run that stopped before ``seq``, and a
    resume picks it up once the cause is gone; the writer takes no further record.
    ``path`` names the file (``None`` for a file object with no name), ``seq`` the first
    record not on file, and the ``OSError`` is the ``__cause__``.
    """

    def __init__(self, *, path: str | None, seq: int, cut_back: bool, problem: str) -> None:
        self.path = path
        self.seq = seq
        self.cut_back = cut_back
        self.problem = problem
        name = path if path is not None else "the trace"
        kept = (
            "The file was cut back to its last whole record, so the run can be resumed from "
            "it once the cause is gone."
            if cut_back
            else "Its last line may be cut off (read it with allow_truncated)."
        )
        super().__init__(
            f"{name}: record seq {seq} could not be written ({problem}). The run stopped "
            f"before performing that step. {kept}"
        )


class TraceDivergence(TraceError):
    """Replay produced a record that differs from the recorded one.

    ``seq`` names the first record that differs, ``line`` the line of the trace holding it
    (a ``step`` line holds several records), when known. ``redacted_before`` names the
    records up to it that hold redacted text which may be longer than what it replaced (a
    secret shorter than its mask, DESIGN §8): the core may have measured other lengths there
    than the run's, and the message says so.
    """

    def __init__(
        self,
        *,
        seq: int,
        expected: dict[str, Any] | None,
        actual: dict[str, Any] | None,
        context: Sequence[dict[str, Any]] = (),
        source: str | None = None,
        line: int | None = None,
        redacted_before: Sequence[int] = (),
    ) -> None:
        self.seq = seq
        self.expected = expected
        self.actual = actual
        self.context = tuple(context)
        self.source = source
        self.line = line
        self.redacted_before = tuple(redacted_before)
        where = f"{source}: " if source else ""
        on_line = f" (line {line})" if line is not None else ""
        from fsm_agent.trace.redact import KEY_RULES_ONLY  # noqa: PLC0415 - only when raised

        # The records as shown are redacted by the key rules: the trace may not be one this
        # library wrote (the attributes keep them as they are).
        super().__init__(
            f"{where}replay diverged at seq {seq}{on_line}:\n"
            f"  expected: {KEY_RULES_ONLY.value(expected)}\n"
            f"  actual:   {KEY_RULES_ONLY.value(actual)}"
            + (f"\n  {redaction_note(self.redacted_before)}" if self.redacted_before else "")
        )

    def replace(
        self,
        *,
        expected: dict[str, Any] | None = None,
        context: Sequence[dict[str, Any]] | None = None,
        redacted_before: Sequence[int] | None = None,
    ) -> TraceDivergence:
        """The same divergence with the records shown (``expected``, ``context``) or the
        records noted as redacted before it replaced where given."""
        return TraceDivergence(
            seq=self.seq,
            expected=self.expected if expected is None else expected,
            actual=self.actual,
            context=self.context if context is None else context,
            source=self.source,
            line=self.line,
            redacted_before=self.redacted_before if redacted_before is None else redacted_before,
        )


def redaction_note(seqs: Sequence[int]) -> str:
    """The sentence a divergence report adds when records before it hold short masks."""
    shown = ", ".join(str(seq) for seq in seqs[:_NOTED_SEQS])
    more = ", ..." if len(seqs) > _NOTED_SEQS else ""
    return (
        f"Records before it hold redacted text (seq {shown}{more}): a secret shorter than "
        "10 characters reads longer in the trace than it was, so the replayed core may have "
        "measured other lengths than the run's."
    )


_NOTED_SEQS = 8
"""How many seqs :func:`redaction_note` names."""
