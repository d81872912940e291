"""A turn's starting transcript is written serializing only what the conversation added."""

from __future__ import annotations

import gc
import io
import weakref

from test_trace_support import CONFIG, TOOLS

from fsm_agent.core import events as ev
from fsm_agent.core.messages import (
    AssistantMessage,
    Message,
    TextBlock,
    ToolUseBlock,
    UserMessage,
)
from fsm_agent.testing.transcripts import tool_round
from fsm_agent.trace import message_dumps, records
from fsm_agent.trace.message_dumps import TranscriptJson
from fsm_agent.trace.writer import TraceWriter

SECRET = "sk-ant-api03-abcdefghijklmnop"


def _writer(
    target: io.BytesIO,
    transcript: TranscriptJson | None = None,
    *,
    secrets: tuple[str, ...] = (SECRET,),
) -> TraceWriter:
    return TraceWriter(
        target,
        config=CONFIG,
        tools=TOOLS,
        table_digest="d",
        secrets=secrets,
        transcript=transcript,
    )


def _conversation(*, leak: bool = False) -> list[tuple[Message, ...]]:
    """The transcripts three turns start from, each the last one plus new messages (the same
    objects), with a sensitive key among them (and with ``leak`` a secret too)."""
    secretive = AssistantMessage(
        uuid="k",
        message_id="msg_k",
        content=(ToolUseBlock(id="toolu_k", name="Login", input={"password": "hunter2"}),),
    )
    leaky = UserMessage(uuid="s", content=(TextBlock(text=f"my key is {SECRET}"),))
    first: tuple[Message, ...] = (UserMessage(uuid="p", content=(TextBlock(text="go"),)),)
    second = (*first, *tool_round(1), *([leaky] if leak else []))
    third = (*second, secretive, *tool_round(2))
    return [first, second, third]


def _event_lines(target: io.BytesIO) -> list[bytes]:
    return [line for line in target.getvalue().splitlines() if b'"record":"event"' in line]


def _both_ways(
    transcripts: list[tuple[Message, ...]], *, secrets: tuple[str, ...] = (SECRET,)
) -> tuple[list[bytes], list[bytes]]:
    """The TurnStarted lines of ``transcripts``, each turn by a writer of its own sharing one
    kept transcript (as a session does), and each by the generic event record."""
    kept, cached, generic = TranscriptJson(), io.BytesIO(), io.BytesIO()
    for messages in transcripts:
        event = ev.TurnStarted(messages=messages, wall_time=12.5)
        with _writer(cached, kept, secrets=secrets) as fast:
            fast.write_event(event)
        with _writer(generic, secrets=secrets) as slow:
            slow.write_record(records.event_fields(event))
    return _event_lines(cached), _event_lines(generic)


def test_turn_started_bytes_equal_the_uncached_record() -> None:
    """Each TurnStarted line, memo cold or warm, is byte for byte the generic event record."""
    message_dumps._memo.clear()
    cached, generic = io.BytesIO(), io.BytesIO()
    with _writer(cached) as fast, _writer(generic) as slow:
        for messages in [*_conversation(), *_conversation(leak=True)] * 2:
            event = ev.TurnStarted(messages=messages, wall_time=12.5)
            fast.write_event(event)
            slow.write_record(records.event_fields(event))
    lines = _event_lines(cached)
    assert lines == _event_lines(generic)
    assert SECRET.encode() not in cached.getvalue()
    assert b"hunter2" not in lines[2]


def test_a_kept_transcript_serializes_only_what_each_turn_added() -> None:
    """Turns that share a kept transcript write the generic bytes and serialize each message
    once over the conversation."""
    conversation = _conversation(leak=True)
    kept = TranscriptJson()
    for messages in conversation:
        with _writer(io.BytesIO(), kept) as writer:
            writer.write_event(ev.TurnStarted(messages=messages))
    assert kept.messages_serialized == len(conversation[-1])
    cached, generic = _both_ways(conversation)
    assert cached == generic


def test_an_edited_start_is_serialized_again() -> None:
    """A transcript that does not begin with the last one written is serialized whole."""
    first, second, third = _conversation()
    edited = (UserMessage(uuid="p", content=(TextBlock(text="other"),)), *third[1:])
    cached, generic = _both_ways([first, third, edited, second, ()])
    assert cached == generic
    assert b'"text":"other"' in cached[2]


def test_another_writers_secrets_are_redacted_in_kept_bytes() -> None:
    """A writer whose secrets differ from the last one's does not reuse its bytes: its own
    secret is redacted even in messages serialized before."""
    secret = "hunter-two-secret"
    first = (UserMessage(uuid="p", content=(TextBlock(text=f"say {secret}"),)),)
    second = (*first, *tool_round(1))
    kept, out = TranscriptJson(), io.BytesIO()
    with _writer(io.BytesIO(), kept, secrets=()) as plain:
        plain.write_event(ev.TurnStarted(messages=first))
    with _writer(out, kept, secrets=(secret,)) as careful:
        careful.write_event(ev.TurnStarted(messages=second))
    assert secret.encode() not in out.getvalue()
    assert b"say [REDACTED]" in out.getvalue()


def _nested(depth: int) -> object:
    value: object = "bottom"
    for _ in range(depth):
        value = {"deeper": value}
    return value


def test_messages_orjson_cannot_write_as_they_are_give_the_generic_bytes() -> None:
    """A lone surrogate, a huge integer or deep nesting in a message (which the trace rewrites
    for the whole record) gives the generic record's bytes, before and after it."""
    start = (UserMessage(uuid="p", content=(TextBlock(text="go"),)),)
    odd: list[Message] = [
        UserMessage(uuid="s", content=(TextBlock(text="caf\udce9"),)),
        AssistantMessage(
            uuid="i",
            message_id="msg_i",
            content=(ToolUseBlock(id="toolu_i", name="Read", input={"n": 2**70}),),
        ),
    ]
    # Deep enough that only the record's own levels push it past the limit, or past it alone.
    for depth in (190, 198, 249, 260):
        odd.append(
            AssistantMessage(
                uuid=f"d{depth}",
                message_id=f"msg_d{depth}",
                content=(ToolUseBlock(id=f"toolu_d{depth}", name="Read", input=_nested(depth)),),
            )
        )
    turns = [start]
    for message in odd:
        turns.append((*turns[-1], message))
        turns.append((*start, message))
    cached, generic = _both_ways(turns)
    assert cached == generic


def test_a_memo_entry_serves_only_its_own_message() -> None:
    """An entry found under a message's id but made for another object is not used."""
    message_dumps._memo.clear()
    one = UserMessage(uuid="u", content=(TextBlock(text="a"),))
    other = UserMessage(uuid="v", content=(TextBlock(text="b"),))
    message_dumps._memo[id(other)] = (weakref.ref(one), b'{"uuid":"u"}', True)
    data, keys_hit = message_dumps.message_json(other)
    assert data is not None
    assert b'"uuid":"v"' in data
    assert not keys_hit


def test_the_memo_lets_a_finished_conversation_go() -> None:
    """Entries leave the memo with their messages: a long-lived process does not keep every
    conversation it ever wrote."""
    message_dumps._memo.clear()
    conversation = _conversation()
    for message in conversation[-1]:
        message_dumps.message_json(message)
    assert message_dumps._memo
    del conversation, message
    gc.collect()
    assert not message_dumps._memo
